"""aclnnKlDivTargetBackward's test kit: its planted defects and correct variants (tests/mutants/kit.py),
each kernel the operator with one method overridden, and where each defect shows."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from suite.ops.base import ftz, numel
from suite.ops.kl_div_target_backward import OP, KlDivTargetBackward
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


def _numeric(c) -> bool:
    return c.expect == 0 and numel(OP._b(dict(c.shapes))) > 0


class _NoPlusOne(KlDivTargetBackward):
    """g * (log(target) - self): the derivative of target * log(target) taken as log(target)."""

    def reference_terms(self, x, attrs, shapes):
        r, d = super().reference_terms(x, attrs, shapes), self._divisor(attrs, shapes)
        g = x["gradOutput"] if d is None else ftz(x["gradOutput"] / np.float32(d))
        return r if attrs["logTarget"] else ftz(r - g)


class _SelfGradient(KlDivTargetBackward):
    """KlDivBackward's gradient, -target * g (with respect to self), summed to target's shape."""

    def reference_terms(self, x, attrs, shapes):
        d = self._divisor(attrs, shapes)
        t = np.exp(x["target"]) if attrs["logTarget"] else x["target"]
        return ftz(-t * x["gradOutput"] * np.float32(1.0 if d is None else 1.0 / d))


class _LogTargetIgnored(KlDivTargetBackward):
    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms(x, {**attrs, "logTarget": False}, shapes)


class _BatchmeanSelfDim0(KlDivTargetBackward):
    """batchmean divides by self's first dimension (PyTorch's, and the 950's) instead of B[0]."""

    def _divisor(self, attrs, shapes):
        if attrs["reduction"] == 3 and numel(self._b(shapes)):
            return (shapes["self"] or (1,))[0]
        return super()._divisor(attrs, shapes)


class _Cof950(KlDivTargetBackward):
    """The 950's kernel: gradOutput times float(1.0 / N) (Muls), not divided by N."""

    def reference_terms(self, x, attrs, shapes):
        d = self._divisor(attrs, shapes)
        g = x["gradOutput"] if d is None else ftz(x["gradOutput"] * np.float32(1.0 / d))
        return super().reference_terms({**x, "gradOutput": g}, {**attrs, "reduction": 0}, shapes)


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("KltNoPlusOne", "KlDivTargetBackward drops the +1: g * (log(target) - self)", _NoPlusOne(),
           where=lambda c: _numeric(c) and not c.attrs["logTarget"]),
    Mutant("KltSelfGradient", "KlDivTargetBackward computes the gradient with respect to self (-target * g)",
           _SelfGradient(), where=_numeric),
    Mutant("KltLogTargetIgnored", "KlDivTargetBackward ignores logTarget (log(target) where exp(target) is due)",
           _LogTargetIgnored(), where=lambda c: _numeric(c) and c.attrs["logTarget"]),
    Mutant("KltBatchmeanSelfDim0", "KlDivTargetBackward batchmean divides by self.shape[0] instead of B[0]",
           _BatchmeanSelfDim0(), where=lambda c: _numeric(c) and c.reduction == 3
           and (c.shapes["self"] or (1,))[0] != OP._b(dict(c.shapes))[0]),
)

# The loss family's mutants (tests/mutants/family.py): KltMeanDivisorNumelSelf, KltSumAsMean, ...
FAMILY = Member(prefix="Klt", mean_over="B",
                opt_out={"EmptyMeanZero": "out is target's shape: an empty B sums into zeros, no fill"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("KltCof950", "float32, gradOutput times float(1/N) as the 950's kernel", _Cof950()),
)
