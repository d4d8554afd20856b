"""The phase-1 checks most operators' `check` starts with, apart from any one operator: an input
passed as NULL that is not optional, a dtype outside the product's list, a tensor of more than
MAX_RANK dimensions. Each returns the Rejection (status, why) or None.

A mixin of the Operator class (suite/ops/base.py), so an operator module calls them as its own
(`self._nulls(sig)`) while base.py keeps to what an operator declares and how it is walked.
Imports suite.contract and suite.ops.records, shapes only."""
from __future__ import annotations

from typing import FrozenSet, Mapping, Optional, Sequence, Tuple

from suite.contract import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR
from suite.ops.records import Rejection, Signature
from suite.ops.shapes import MAX_RANK


class SharedChecks:
    """The checks; they read the operator's `inputs`, `optional` and `product_dtypes`."""

    inputs: Tuple[str, ...]
    optional: Tuple[str, ...]
    product_dtypes: Mapping[str, FrozenSet[str]]
    # The status of a NULL required tensor or out: 161001, unless the op API answers otherwise (an
    # operator whose CheckNotNull returns ACLNN_ERR_INNER_NULLPTR declares 561103).
    null_status: int = ACLNN_ERR_PARAM_NULLPTR

    def _nulls(self, sig: Signature) -> Optional[Rejection]:
        for n in self.inputs:
            if sig.shapes.get(n) is None and n not in self.optional:
                return self.null_status, f"{n} is NULL"
        if sig.out_shape is None:
            return self.null_status, "out is NULL"
        return None

    def _unsupported_dtype(self, sig: Signature, names: Sequence[str]) -> Optional[Rejection]:
        allowed = self.product_dtypes[sig.product]
        for n in names:
            if n != "out" and sig.shapes.get(n) is None:
                continue                                # an optional input passed as NULL
            dt = sig.out_dtype if n == "out" else sig.dtypes[n]
            if dt not in allowed:
                return (ACLNN_ERR_PARAM_INVALID,
                        f"{n} dtype {dt} is not supported on {sig.product} "
                        f"({'supported: ' + ', '.join(sorted(allowed)) if allowed else 'no dtype is'})")
        return None

    def _rank(self, sig: Signature, with_out: bool) -> Optional[Rejection]:
        tensors = [(n, sig.shapes[n]) for n in self.inputs if sig.shapes.get(n) is not None]
        if with_out:
            tensors.append(("out", sig.out_shape))
        for n, s in tensors:
            if len(s) > MAX_RANK:
                return ACLNN_ERR_PARAM_INVALID, f"{n} has {len(s)} dimensions (at most {MAX_RANK})"
        return None
