"""Memory layouts: the same logical values handed to a backend as different numpy views.

Gaps in strided buffers hold NaN (an integer or BOOL input: every bit set, -1, the largest
unsigned value or True, as the aclnn backend's staging fills them), so a backend that reads memory
as if it were contiguous gets garbage into its result and fails, rather than passing by luck."""
from __future__ import annotations

from typing import Callable, Dict, Iterable, Optional, Tuple

import numpy as np


def _contiguous(a: np.ndarray) -> np.ndarray:
    """The array itself when it is C-contiguous (a view of it: no copy of a large input)."""
    return a.view() if a.flags.c_contiguous else np.array(a, order="C", copy=True)


def _transposed(a: np.ndarray) -> np.ndarray:
    """Reversed axis order in memory: a transpose view, as `x.T` of a contiguous tensor."""
    return np.array(a.T, order="C", copy=True).T


def _strided(a: np.ndarray) -> np.ndarray:
    """Every other element of a buffer twice as large in each dimension, starting at offset 1."""
    if a.ndim == 0:
        return np.array(a, copy=True)
    gaps = tuple(2 * n + 1 for n in a.shape)
    if a.dtype.kind in "biu":                  # an exact dtype: all bits set (NaN has no such value)
        buf = np.full(gaps, 0xFF, dtype=np.uint8).view(a.dtype) if a.dtype.itemsize == 1 else \
            np.full(gaps, -1, dtype=np.int64).astype(np.dtype(f"u{a.dtype.itemsize}")).view(a.dtype)
    else:
        buf = np.full(gaps, np.nan, dtype=np.float32).astype(a.dtype)
    view = buf[tuple(slice(1, 1 + 2 * n, 2) for n in a.shape)]
    view[...] = a
    return view


def _negstride(a: np.ndarray) -> np.ndarray:
    """Negative strides in every dimension: a reversed view of a reversed copy."""
    if a.ndim == 0:
        return np.array(a, copy=True)
    rev = tuple(slice(None, None, -1) for _ in a.shape)
    return np.array(a[rev], order="C", copy=True)[rev]


LAYOUTS: Dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "contiguous": _contiguous,
    "transposed": _transposed,
    "strided": _strided,
    "negstride": _negstride,
}


def applies(name: str, shapes: Iterable[Optional[Tuple[int, ...]]]) -> bool:
    """Whether the layout makes any input differ from contiguous (else the case would repeat)."""
    shapes = [s for s in shapes if s is not None]
    if name == "contiguous":
        return True
    if name == "transposed":
        return any(sum(1 for n in s if n > 1) >= 2 for s in shapes)
    return any(any(n > 1 for n in s) for s in shapes)


def buffer_factor(name: str, shape: Tuple[int, ...]) -> float:
    """Memory the layout allocates beyond the input itself, in units of the input's size."""
    if name == "contiguous" or not shape:
        return 0.0
    if name == "strided":
        return float(np.prod([2.0 * n + 1 for n in shape]) / max(np.prod([float(n) for n in shape]), 1.0)) * 1.5
    return 1.0


def view(name: str, a: np.ndarray) -> np.ndarray:
    """`a`'s values in layout `name`, read-only so that a backend writing into its inputs fails."""
    v = LAYOUTS[name](a)
    v.flags.writeable = False
    return v
