"""aclnnBinaryCrossEntropy's test kit: its planted defects and correct variants (tests/mutants/kit.py),
each kernel the operator with one method overridden, and where each defect shows."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_NULLPTR
from suite.ops.base import ftz, numel
from suite.ops.binary_cross_entropy import INNER_NULLPTR, BinaryCrossEntropy
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


def _numeric(c) -> bool:
    """A valid call with a non-empty self."""
    return c.expect == 0 and numel(c.shapes["self"]) > 0


def _with_weight(c) -> bool:
    return c.shapes["weight"] is not None


# -- the planted defects ---------------------------------------------------------------------------
class _ClampMissing(BinaryCrossEntropy):
    """ln x and ln(1 - x) unclamped: x at 0 or 1 gives 0 * -inf = NaN where the contract has 0."""

    def reference_terms(self, x, attrs, shapes):
        one = np.float32(1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = -(np.log(x["self"]) * x["target"] + np.log(one - x["self"]) * (one - x["target"]))
        r = r * x["weight"] if "weight" in x else r
        n = numel(shapes["self"])
        return r * np.float32(1.0 / n) if attrs["reduction"] == 1 and n else r


class _NullWeightAsZero(BinaryCrossEntropy):
    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms(x if "weight" in x else {**x, "weight": np.float32(0.0)}, attrs, shapes)


class _WeightIgnored(BinaryCrossEntropy):
    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms({n: a for n, a in x.items() if n != "weight"}, attrs, shapes)


class _SignFlipped(BinaryCrossEntropy):
    """w * (t ln x + (1 - t) ln(1 - x)): the leading minus dropped."""

    def reference_terms(self, x, attrs, shapes):
        return -super().reference_terms(x, attrs, shapes)


class _NullAsParamNullptr(BinaryCrossEntropy):
    """A NULL self, target or out answered 161001 (the family's shared NULL check), not the code's 561103."""

    def check(self, sig):
        status, why = super().check(sig)
        return (ACLNN_ERR_PARAM_NULLPTR, why) if status == INNER_NULLPTR else (status, why)


# -- correct variants --------------------------------------------------------------------------------
class _Arch35Order(BinaryCrossEntropy):
    """The Ascend C (ascend950) kernel: ln x and ln(1 - x) clamped at -100 (not x at 1e-12), y ln x +
    (1 - y) ln(1 - x), times -1, times w; mean: each term times 1/N before the sum."""

    def reference_terms(self, x, attrs, shapes):
        one, floor = np.float32(1.0), np.float32(-100.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = ftz(np.maximum(np.log(x["self"]), floor) * x["target"])
            b = ftz(np.maximum(np.log(ftz(one - x["self"])), floor) * ftz(one - x["target"]))
            r = ftz(ftz(a + b) * -one)
            if "weight" in x:
                r = ftz(r * x["weight"])
        n = numel(shapes["self"])
        return ftz(r * np.float32(1.0 / n)) if attrs["reduction"] == 1 and n else r


def _summed_finite(c) -> bool:
    """Not a sum of the specials set (NaN in nearly every sum: a sign there does not show)."""
    return not (c.values == "specials" and c.reduction in (1, 2))


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("BceFwdClampMissing", "ln x and ln(1 - x) are not clamped: self at 0 or 1 gives NaN (0 * -inf) "
           "where the contract has 0", _ClampMissing(), lambda c: _numeric(c) and c.values == "clamp"),
    Mutant("BceFwdNullWeightAsZero", "a NULL weight is read as zeros instead of ones", _NullWeightAsZero(),
           lambda c: _numeric(c) and not _with_weight(c)),
    Mutant("BceFwdWeightIgnored", "the weight is never applied", _WeightIgnored(),
           lambda c: _numeric(c) and _with_weight(c)),
    Mutant("BceFwdSignFlipped", "the loss's leading minus is dropped", _SignFlipped(),
           lambda c: _numeric(c) and _summed_finite(c)),
    Mutant("BceFwdNullAsParamNullptr", "a NULL self, target or out is answered 161001 (the family's shared "
           "check) instead of 561103", _NullAsParamNullptr(), lambda c: c.expect == INNER_NULLPTR,
           frozenset({"rejection"})),
)

# The loss family's mutants (tests/mutants/family.py): BceFwdSumAsMean, BceFwdMeanAsSum,
# BceFwdEmptyMeanZero, BceFwdAccumulateInPrecision.
FAMILY = Member(prefix="BceFwd", mean_over="B",
                opt_out={"MeanDivisor": "B is self's shape (target and a weight have it): no other count",
                         "BroadcastDropped": "nothing broadcasts: target and a given weight have self's shape",
                         "ResultInPrimaryDtype": "the result dtype is self's, the primary input's"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("BceFwdArch35Order", "the ascend950 kernel's order: the logs clamped at -100, 1/N per term",
            _Arch35Order()),
)
