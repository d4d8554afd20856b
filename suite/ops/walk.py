"""Walking an operator's broadcast shape, apart from any one operator: an input's part of one block,
widened (exact inputs through operand_dtype's cast), float32 results rounded to out's dtype, and the
walk at single elements (`vendor_at`, the vendor's arithmetic at the elements a verdict asks about).

Why apart from suite/ops/base.py: the Operator class says what an operator declares; this module is
the arithmetic every operator's golden, reference and judging share, which no operator overrides.
Imports suite.common and suite.ops.flush, shapes only (the Operator reaches vendor_at as `op`)."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.common import blocks as B
from suite.common import dtypes
from suite.common.half import to_float16
from suite.ops.flush import flushing, ftz
from suite.ops.shapes import Shape, numel, reduced_axes


def present(x: Mapping[str, Optional[np.ndarray]]) -> Dict[str, np.ndarray]:
    """The inputs a call passes (an optional input passed as NULL is left out)."""
    return {n: a for n, a in x.items() if a is not None}


def _blocks(b: Shape, block: int):
    """One block of everything when it is small (the common case: no slicing at all)."""
    if numel(b) <= block:
        return [(slice(None),) * len(b)] if numel(b) else []
    return B.blocks(b, block)


def _part(a: np.ndarray, b: Shape, blk, dtype, cast: Optional[np.dtype] = None) -> np.ndarray:
    """Input `a`'s part of block `blk` of the broadcast shape, in `dtype` (a whole small input is
    widened as it is and left to numpy's broadcasting); an exact input first cast to `cast`."""
    if all(s == slice(None) for s in blk):
        return _widen(np.asarray(a), dtype, cast)
    return _widen(np.broadcast_to(a, b)[blk], dtype, cast)


def _widen(a: np.ndarray, dtype, cast: Optional[np.dtype]) -> np.ndarray:
    """`a` in `dtype`; an exact (integer or BOOL) input through float64 (exact below 2^53) rounded
    once to `cast`, the float dtype the op API's Cast gives the kernel."""
    if cast is None:
        return a.astype(dtype)
    return dtypes.round_to(a.astype(np.float64), cast).astype(dtype)


def to_out(r32: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    """float32 result -> out dtype with one round to nearest even (ml_dtypes rounds float32 ->
    bfloat16 correctly; only float64 -> bfloat16 double-rounds; float16 by suite/common/half.py,
    numpy's bits without its slow path)."""
    r32 = np.asarray(r32, dtype=np.float32)
    if np.dtype(out_dtype) == np.float16:
        return to_float16(r32)
    with np.errstate(over="ignore", invalid="ignore"):
        return r32.astype(out_dtype)


def vendor_at(op: Any, x: Mapping[str, np.ndarray], attrs: Mapping[str, object], idx: np.ndarray,
              flush: bool = False, limit: int = B.BLOCK) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The result at out's flat indices `idx` as the vendor's arithmetic computes it:
    `reference_terms` in float32 (with `flush`, every operand and intermediate below float32's
    smallest normal flushed), the terms of a sum rounded to `term_dtype` (overflow included),
    then summed exactly. float64 (out, scale, path) as `golden` gives them, for judging
    (suite/tolerance.py, Path.vendor); the cost is that of the elements asked for, `limit`
    terms at a time."""
    x = present(x)
    shapes = {n: tuple(np.shape(a)) for n, a in x.items()}
    b, out_shape = op.b_shape(shapes), op.out_shape(shapes, attrs)
    axes = reduced_axes(out_shape, b)
    lead = len(b) - len(out_shape)
    red = tuple(b[a] for a in axes)
    n = numel(red)
    term_dt = dtypes.dtype_of(op.term_dtype({k: dtypes.name_of(a.dtype) for k, a in x.items()}))
    idx = np.asarray(idx, dtype=np.int64).reshape(-1)
    out, scale, path = (np.zeros(idx.size) for _ in range(3))
    if n == 0 or idx.size == 0:
        fill = op.empty_fill_of(attrs, shapes) if numel(b) == 0 else None
        return (out if fill is None else np.full(idx.size, fill)), scale, path
    at = np.unravel_index(idx, out_shape) if out_shape else ()       # (numpy refuses 0-d shapes)
    walked = op._walked(x, attrs)
    views = {k: np.broadcast_to(a, b) for k, a in walked.items()}
    cast = op._operand_casts(walked)
    step = max(1, limit // n)                  # output elements per chunk
    span = min(n, max(1, limit))               # terms per chunk of each element's sum
    with flushing(flush), np.errstate(all="ignore"):
        for lo in range(0, idx.size, step):
            k = min(step, idx.size - lo)
            run = np.zeros(k)                  # each element's partial sum so far
            # One element's sum of 10^7 terms is walked `limit` terms at a time: never n x rank
            # coordinates at once (a reduction to a scalar sums the whole input).
            for r0 in range(0, n, span):
                r1 = min(n, r0 + span)
                rcoord = np.unravel_index(np.arange(r0, r1), red) if red else ()
                coords = tuple(np.broadcast_to(rcoord[axes.index(ax)], (k, r1 - r0)) if ax in axes
                               else np.broadcast_to(at[ax - lead][lo:lo + k, None], (k, r1 - r0))
                               for ax in range(len(b)))
                xb = {name: v[coords].astype(np.int64) if name in op.indices else
                      ftz(_widen(v[coords], np.float32, cast.get(name))) for name, v in views.items()}
                t = np.broadcast_to(op.reference_terms(xb, attrs, shapes), (k, r1 - r0))
                if n > 1 and term_dt != np.float32:
                    t = to_out(t, term_dt)
                t = np.asarray(t, dtype=np.float64)
                partial = np.cumsum(t, axis=1) + run[:, None]
                out[lo:lo + k] += t.sum(axis=1)
                scale[lo:lo + k] += np.abs(t).sum(axis=1)
                path[lo:lo + k] += np.abs(partial).sum(axis=1)
                run = partial[:, -1]
    return out, scale, path


def float32_sum(v: np.ndarray) -> np.float32:
    """A FLOAT sum of `v`, block by block in memory order (numpy's pairwise sum within a block):
    a kernel's per-core partial sums added in core order."""
    acc = np.float32(0.0)
    v = v.reshape(-1)
    for lo in range(0, v.size, B.BLOCK):
        acc = ftz(np.float32(acc + np.sum(v[lo:lo + B.BLOCK], dtype=np.float32)))
    return np.float32(acc)
