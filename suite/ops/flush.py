"""Subnormal flushing of the vendor-order float32 computations (docs/precision.md, "Flushed
subnormals"): a switch and the one function that honours it, kept apart so that an operator's
`reference_terms` and the correct kernels that flush share one definition."""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

import numpy as np

# A core that flushes holds every float32 operand and result below the smallest normal as zero
# (denormals-are-zero and flush-to-zero together). The vendor-order computations (`reference_terms`)
# pass each intermediate through `ftz`, which does nothing unless `flushing()` is in force.
F32_TINY = np.float32(2.0 ** -126)
_FLUSH: contextvars.ContextVar = contextvars.ContextVar("flush", default=False)


@contextlib.contextmanager
def flushing(on: bool = True) -> Iterator[None]:
    """Within this block the float32 computations of `reference_terms` flush subnormals."""
    token = _FLUSH.set(bool(on))
    try:
        yield
    finally:
        _FLUSH.reset(token)


def ftz(a: Any) -> Any:
    """`a` as a flushing core holds it: a float32 value below the smallest normal in magnitude is
    a zero of its sign; anything else (and everything when not flushing) is returned as it is."""
    if not _FLUSH.get():
        return a
    arr = np.asarray(a)
    if arr.dtype != np.float32:
        return a
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(arr) < F32_TINY, arr * np.float32(0.0), arr)
