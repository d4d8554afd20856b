"""aclnnKlDiv's test kit: its planted defects and correct variants (tests/mutants/kit.py), each
kernel the operator with one method overridden, and where each defect shows (read off the case's
shapes and, where values decide, the NaNs its float64 counterpart gives on the case's inputs)."""
from __future__ import annotations

import dataclasses
from typing import Tuple

import numpy as np

from suite.ops.base import broadcast, numel
from suite.ops.kl_div import OP, KlDiv
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


def _b(c) -> Tuple[int, ...]:
    return broadcast(c.shapes["self"], c.shapes["target"])


def _counts_differ(c) -> bool:
    """numel(B) and B[0] (a 0-d B read as [1]) differ: a swapped divisor shows."""
    b = _b(c)
    return numel(b) > 0 and numel(b) != (b or (1,))[0]


# -- the planted defects ---------------------------------------------------------------------------
class _BatchmeanNumel(KlDiv):
    """batchmean divides by numel(B), as mean does."""

    def divisor(self, attrs, shapes):
        return super().divisor({**attrs, "reduction": 1 if attrs["reduction"] == 3 else attrs["reduction"]}, shapes)


class _MeanFirstDim(KlDiv):
    """mean divides by B[0], as batchmean does (the old pages' `self.size(0)`)."""

    def divisor(self, attrs, shapes):
        return super().divisor({**attrs, "reduction": 3 if attrs["reduction"] == 1 else attrs["reduction"]}, shapes)


class _ZeroTargetNan(KlDiv):
    """No zero target replaced by 1 before the log: 0 * log 0 = 0 * -inf gives NaN."""

    def reference_terms(self, x, attrs, shapes):
        if attrs["logTarget"]:
            return super().reference_terms(x, attrs, shapes)
        t = x["target"]
        l = t * (np.log(t) - x["self"])
        d = self.divisor(attrs, shapes)
        return l if d is None else l * np.float32(1.0 / d)

    def terms(self, x, attrs, shapes):           # its float64 counterpart, for `where`
        if attrs["logTarget"]:
            return super().terms(x, attrs, shapes)
        l = x["target"] * (np.log(x["target"]) - x["self"])
        d = self.divisor(attrs, shapes)
        return l if d is None else l / d


class _NegativeTargetZero(KlDiv):
    """A negative target gives 0 (the experimental A2 kernel's max(t, 0) mask), not NaN."""

    def reference_terms(self, x, attrs, shapes):
        l = super().reference_terms(x, attrs, shapes)
        return l if attrs["logTarget"] else np.where(x["target"] < 0, np.float32(0.0) * x["self"], l)

    def terms(self, x, attrs, shapes):
        l = super().terms(x, attrs, shapes)
        return l if attrs["logTarget"] else np.where(x["target"] < 0, 0.0 * x["self"], l)


class _LogTargetIgnored(KlDiv):
    """logTarget ignored: the target read as a probability where it is a log-probability."""

    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms(x, {**attrs, "logTarget": False}, shapes)


def _nan_differs(kernel: KlDiv):
    """`where` of a defect that moves NaNs: on the case's own inputs the defect's float64
    counterpart (`kernel.golden`) has a NaN where the golden has none, or none where it has one."""
    def where(c) -> bool:
        if c.expect != 0 or c.attrs["logTarget"] or numel(_b(c)) == 0:
            return False
        from tests.mutants.gallery import _data
        x = _data(c).inputs
        with np.errstate(all="ignore"):
            return bool(np.any(np.isnan(OP.golden(x, c.attrs).out) != np.isnan(kernel.golden(x, c.attrs).out)))
    return where


# -- correct variants --------------------------------------------------------------------------------
class _SumInReverse(KlDiv):
    """The terms summed in the opposite memory order (another core split, another tree): the
    inputs broadcast to B and flipped along every axis, so B, numel(B) and B[0] stay."""

    def _reference(self, call, block):
        shapes = [tuple(a.shape) for a in call.inputs.values()]
        b = broadcast(*shapes)
        if call.attrs["reduction"] == 0 or not numel(b):
            return super()._reference(call, block)
        x = {n: np.ascontiguousarray(np.flip(np.broadcast_to(a, b))) for n, a in call.inputs.items()}
        return super()._reference(dataclasses.replace(call, inputs=x), block)


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("KlDivFwdBatchmeanNumel", "KlDiv batchmean divides by numel(B) instead of B[0]",
           _BatchmeanNumel(), where=lambda c: c.expect == 0 and c.reduction == 3 and _counts_differ(c)),
    Mutant("KlDivFwdMeanFirstDim", "KlDiv mean divides by B[0] instead of numel(B)",
           _MeanFirstDim(), where=lambda c: c.expect == 0 and c.reduction == 1 and _counts_differ(c)),
    Mutant("KlDivFwdZeroTargetNan", "KlDiv target = 0 gives 0 * log 0 = NaN instead of 0",
           _ZeroTargetNan(), where=_nan_differs(_ZeroTargetNan())),
    Mutant("KlDivFwdNegativeTargetZero", "KlDiv log of a negative target gives 0 instead of NaN",
           _NegativeTargetZero(), where=_nan_differs(_NegativeTargetZero())),
    Mutant("KlDivFwdLogTargetIgnored", "KlDiv logTarget ignored (target where exp(target) is due)",
           _LogTargetIgnored(), where=lambda c: c.expect == 0 and c.attrs["logTarget"] and numel(_b(c)) > 0),
)

# The loss family's mutants (tests/mutants/family.py): KlDivFwdMeanDivisorNumelSelf, ...
FAMILY = Member(prefix="KlDivFwd", mean_over="B")

VARIANTS: Tuple[Variant, ...] = (
    Variant("KlDivFwdSumInReverse", "float32, KlDiv sum, mean and batchmean over the terms in reverse order",
            _SumInReverse()),
)
