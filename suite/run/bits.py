"""Results compared bit for bit (the determinism tests): copies, digests, the first elements where
two results differ, NaN matching any NaN, and the case's failure when they do (_same). A result
is name -> array of each written output (suite/run/calls.py), one entry for a one-output call."""
from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from suite.common import dtypes


def _copied(got: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """A copy of a result (each of its outputs' arrays)."""
    return {n: np.array(a, copy=True) for n, a in got.items()}


def digest_of(got: Mapping[str, np.ndarray]) -> str:
    """_digest of every written output of a result, each named, in order."""
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


def _same(runner: Any, case: Any, nodeid: str, first: Mapping[str, np.ndarray],
          other: Mapping[str, np.ndarray], what: str) -> None:
    """Fail the case, with the first differing elements, unless each output of `other` is
    bit-identical to `first`'s (NaN matches any NaN). The message of a call with several outputs
    names every output that differs, each with its first differing elements."""
    shapes = case.all_outputs
    found = {n: f for n, a in first.items() if (f := differing(a, other[n], tuple(shapes[n][0])))}
    if found:
        named = len(shapes) > 1
        raise runner._fail(case, nodeid, "; ".join(f"{n}: " * named + what.format(n=k, size=size)
                                                   for n, (k, size, _) in found.items()),
                           [x for n, (_, _, lines) in found.items()
                            for x in ([f"  {n}:"] if len(found) > 1 else []) + lines])
