"""aclnnMseLoss's test kit: its planted defects and correct variants (tests/mutants/kit.py), each
kernel the operator with one method overridden, and where each defect shows (read off the case's
shapes and, where values decide, its golden)."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from suite.ops.base import broadcast, ftz, numel
from suite.ops.mse_loss import MseLoss
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


def _b(c) -> int:
    return numel(broadcast(c.shapes["self"], c.shapes["target"]))


# -- the planted defects ---------------------------------------------------------------------------
class _AbsNotSquare(MseLoss):
    """|self - target|: the L1 loss's term."""

    def reference_terms(self, x, attrs, shapes):
        d = np.abs(ftz(x["self"] - x["target"]))
        n = numel(broadcast(shapes["self"], shapes["target"]))
        return ftz(d * np.float32(1.0 / n)) if attrs["reduction"] == 1 and n else d


# -- correct variants (mixins, so that another forward loss's kit takes them over its class) ----------
class ScaleOnceAfterTheSum:
    """The TBE order (atlas-training): the float32 sum of the terms, then one multiply by 1/N."""

    def _reference(self, call, block):
        if call.attrs["reduction"] != 1:
            return super()._reference(call, block)
        n = numel(broadcast(*(tuple(a.shape) for a in call.inputs.values())))
        wide = {k: a.astype(np.float32) for k, a in call.inputs.items()}      # exact: P's own cast
        total = super()._reference(_with(call, inputs=wide, reduction=2, out_dtype=np.dtype(np.float32)), block)
        r = ftz(np.float32(total.reshape(())) * np.float32(1.0 / n)) if n else np.float32(np.nan)
        return _round(self, call, np.asarray(r, dtype=np.float32))


class SumInReverse:
    """The terms summed in the opposite memory order (another core split, another tree)."""

    def _reference(self, call, block):
        if call.attrs["reduction"] == 0:
            return super()._reference(call, block)
        x = {n: np.ascontiguousarray(np.broadcast_to(a, np.broadcast_shapes(*(v.shape for v in call.inputs.values())))
                                     .reshape(-1)[::-1]) for n, a in call.inputs.items()}
        return super()._reference(_with(call, inputs=x), block).reshape(call.out_shape)


def _with(call, **changes):
    import dataclasses
    attrs = {**call.attrs, **({"reduction": changes.pop("reduction")} if "reduction" in changes else {})}
    return dataclasses.replace(call, attrs=attrs, **changes)


class _ScaleOnceAfterTheSum(ScaleOnceAfterTheSum, MseLoss):
    pass


class _SumInReverse(SumInReverse, MseLoss):
    pass


def _round(op: MseLoss, call, r32: np.ndarray) -> np.ndarray:
    """float32 result -> P -> out's dtype, as the operator's reference rounds."""
    from suite.common import dtypes
    from suite.ops.base import to_out
    dts = {n: dtypes.name_of(a.dtype) for n, a in call.inputs.items()}
    through = dtypes.dtype_of(op.result_dtype(dts, dtypes.name_of(call.out_dtype)))
    return to_out(to_out(r32, through), call.out_dtype).reshape(call.out_shape)


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("MseFwdAbsNotSquare", "MseLoss computes |self - target| instead of its square",
           _AbsNotSquare(), where=lambda c: c.expect == 0 and _b(c) > 0),
)

# The loss family's mutants (tests/mutants/family.py): MseFwdMeanDivisorNumelSelf, MseFwdSumAsMean,
# MseFwdEmptyMeanZero, MseFwdAccumulateInPrecision, ...
FAMILY = Member(prefix="MseFwd", mean_over="B")

VARIANTS: Tuple[Variant, ...] = (
    Variant("MseFwdScaleOnceAfterTheSum", "float32, MseLoss mean as the sum times 1/N once (TBE's order)",
            _ScaleOnceAfterTheSum()),
    Variant("MseFwdSumInReverse", "float32, MseLoss sum and mean over the terms in reverse order", _SumInReverse()),
)
