"""Results compared bit for bit (the determinism tests): copies, digests, the first elements where
two results differ, NaN matching any NaN, and the case's failure when they do (_same_all)."""
from __future__ import annotations

import hashlib
from typing import Any, List, Optional, Tuple

import numpy as np

from suite.common import dtypes


def _copied(got: Any) -> Any:
    """A copy of a result (each array of a call with several outputs)."""
    if isinstance(got, dict):
        return {n: np.array(a, copy=True) for n, a in got.items()}
    return np.array(got, copy=True)


def _digest_all(got: Any) -> str:
    """_digest of one result, or of every written output of a call with several, in order."""
    if not isinstance(got, dict):
        return _digest(got)
    return hashlib.sha256("".join(f"{n}:{_digest(a)}" for n, a in got.items()).encode()).hexdigest()


def _digest(a: np.ndarray) -> str:
    """sha256 of an output's dtype, shape and bits (NaN payloads included: a deterministic kernel
    gives the same ones)."""
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(np.ascontiguousarray(a).view(np.uint8).reshape(-1).data)
    return h.hexdigest()


def differing(first: np.ndarray, other: np.ndarray, shape: tuple) -> Optional[Tuple[int, int, List[str]]]:
    """None where `other` is bit-identical to `first` (NaN matches any NaN); else how many of how
    many elements differ and a line for each of the first five."""
    a, b = dtypes.to_bits(first).reshape(-1), dtypes.to_bits(other).reshape(-1)
    both_nan = np.isnan(first.astype(np.float32)).reshape(-1) & np.isnan(other.astype(np.float32)).reshape(-1)
    differ = (a != b) & ~both_nan
    if not differ.any():
        return None
    idx = np.flatnonzero(differ)
    lines = [f"    index {tuple(int(i) for i in np.unravel_index(j, shape))}: "
             f"first {float(first.reshape(-1)[j])!r}, second {float(other.reshape(-1)[j])!r}"
             for j in idx[:5]]
    return idx.size, a.size, lines


def _same_all(runner: Any, case: Any, nodeid: str, first: Any, other: Any, what: str) -> None:
    """_same for one result, or for each written output of a call with several (the message then
    names every output that differs, each with its first differing elements)."""
    if not isinstance(first, dict):
        return _same(runner, case, nodeid, first, other, what)
    found = {n: f for n, a in first.items() if (f := differing(a, other[n], tuple(case.outputs[n][0])))}
    if found:
        raise runner._fail(case, nodeid, "; ".join(f"{n}: {what.format(n=k, size=size)}" for n, (k, size, _) in
                                                   found.items()),
                           [x for n, (_, _, lines) in found.items()
                            for x in ([f"  {n}:"] if len(found) > 1 else []) + lines])


def _same(runner: Any, case: Any, nodeid: str, first: np.ndarray, other: np.ndarray, what: str) -> None:
    """Fail the case, with the first differing elements, unless `other` is bit-identical to
    `first` (NaN matches any NaN)."""
    found = differing(first, other, case.out_shape)
    if found is not None:
        n, size, lines = found
        raise runner._fail(case, nodeid, what.format(n=n, size=size), lines)
