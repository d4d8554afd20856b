"""aclnnL1Loss's test kit (tests/mutants/kit.py): the loss family's mutants through `FAMILY`; its
own defects, the square for the absolute value, the sign kept, and a phase-1 row dropped; its
variants MseLoss's, the same methods over L1Loss's (the MseLoss kit's mixins ahead of L1Loss)."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from suite.ops.base import ftz
from suite.ops.l1_loss import L1Loss
from suite.ops.mse_loss import MseLoss
from tests.mutants import mse_loss as M
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


class _SquareNotAbs(L1Loss):
    reference_loss = MseLoss.reference_loss


class _SignedDifference(L1Loss):
    """self - target without the absolute value."""

    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms(x, attrs, shapes) * np.sign(ftz(x["self"] - x["target"]))


class _IntegerSelfUnderNone(L1Loss):
    """The none row dropped: an integer self beside a floating target accepted (cast to P)."""

    def check(self, sig):
        if sig.attrs.get("reduction") == 0 and sig.dtypes.get("self") not in ("float32", "float16", "bfloat16"):
            return super().check(type(sig)(sig.shapes, {**sig.dtypes, "self": sig.dtypes["target"]}, sig.out_shape,
                                           sig.out_dtype, sig.attrs, sig.product))
        return super().check(sig)


def _any_term(c, test) -> bool:
    """Some element of B where `test(self - target)` holds, in the case's committed inputs."""
    from tests.mutants.gallery import _data
    if c.expect != 0:
        return False
    x = {n: np.asarray(a, dtype=np.float64) for n, a in _data(c).inputs.items()}
    with np.errstate(all="ignore"):
        return bool(np.any(test(x["self"] - x["target"])))


def _int_self_none(c) -> bool:
    return c.expect != 0 and c.reduction == 0 and c.dtypes["self"] not in ("float32", "float16", "bfloat16") \
        and _IntegerSelfUnderNone().check(c.signature)[0] == 0


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("L1FwdSquareNotAbs", "L1Loss computes (self - target)^2 instead of |self - target|",
           _SquareNotAbs(), where=lambda c: M._b(c) > 0 and _any_term(c, lambda d: (d != 0) & (np.abs(d) != 1))),
    Mutant("L1FwdSignedDifference", "L1Loss computes self - target without the absolute value",
           _SignedDifference(), where=lambda c: M._b(c) > 0 and _any_term(c, lambda d: d < 0)),
    Mutant("L1FwdIntegerSelfUnderNone", "L1Loss accepts an integer self beside a floating target under none",
           _IntegerSelfUnderNone(), where=_int_self_none, fails=frozenset({"rejection"})),
)


class _ScaleOnceAfterTheSum(M.ScaleOnceAfterTheSum, L1Loss):
    """The 950 LpLoss's order: ReduceSum, then one Muls by 1/N."""


class _SumInReverse(M.SumInReverse, L1Loss):
    pass


# The loss family's mutants (tests/mutants/family.py): the mean's divisor, sum as mean, mean as sum,
# an empty mean of 0, a dropped broadcast, the result rounded through the primary input's dtype.
FAMILY = Member(prefix="L1Fwd", mean_over="B", opt_out={
    "AccumulateInPrecision": "every term |d| is non-negative: rounding each to 16 bits before the float32 "
                             "sum moves the sum by at most the terms' own relative rounding, within the "
                             "result's (no case of the pairwise subset tells it from the contract's)"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("L1FwdScaleOnceAfterTheSum", "float32, L1Loss mean as the sum times 1/N once (the 950's order)",
            _ScaleOnceAfterTheSum()),
    Variant("L1FwdSumInReverse", "float32, L1Loss sum and mean over the terms in reverse order", _SumInReverse()),
)
