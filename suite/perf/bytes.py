"""The bytes one launch of a case moves: what GB/s is computed from (docs/timing.md).

Why counted from the case and not asked of the backend: the figure must be the same for every
backend timed on the case, or GB/s would compare different things. Each input is read once at its
own shape and dtype (a broadcast input is read at its own, smaller shape: it is not expanded in
memory), and each output the call writes is written once at its shape and dtype. An output the call
leaves untouched (NLLLoss's totalWeightOut under reduction none) moves nothing."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

from suite.cases.model import Case
from suite.common import dtypes
from suite.common.blocks import numel


def _size(shape: Optional[Sequence[int]], dtype: Optional[str]) -> int:
    if shape is None or dtype is None:
        return 0
    return numel(tuple(shape)) * dtypes.dtype_of(dtype).itemsize


def outputs_of(case: Case) -> Tuple[Tuple[Optional[Tuple[int, ...]], Optional[str]], ...]:
    """(shape, dtype name) of each output the call writes."""
    if case.outputs is None:
        return ((None if case.out_shape is None else tuple(case.out_shape), case.out_dtype),)
    return tuple((case.outputs[n][0], case.outputs[n][1]) for n in case.written)


def bytes_moved(case: Case) -> int:
    """Bytes of every input read and every written output, at their dtypes."""
    read = sum(_size(case.shapes[n], case.dtypes.get(n)) for n in case.shapes)
    return read + sum(_size(s, d) for s, d in outputs_of(case))
