"""aclnnKlDivBackward's test kit: its planted defects and correct variants (tests/mutants/kit.py),
each kernel the operator with one method overridden, and where each defect shows."""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from suite.ops.base import Shape, numel
from suite.ops.kl_div_backward import OP, KlDivBackward
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


class _SignFlip(KlDivBackward):
    def reference_terms(self, x, attrs, shapes):
        return -super().reference_terms(x, attrs, shapes)


class _BatchmeanSelfDim0(KlDivBackward):
    def _divisor(self, attrs, shapes):
        if attrs["reduction"] == 3 and numel(self._b(shapes)):
            return (shapes["self"] or (1,))[0]
        return super()._divisor(attrs, shapes)


class _MaskNonPositiveTargets(KlDivBackward):
    def reference_terms(self, x, attrs, shapes):
        if not attrs["logTarget"]:
            x = {**x, "target": np.where(x["target"] > 0, x["target"], np.float32(0.0))}
        return super().reference_terms(x, attrs, shapes)


class _LogTargetIgnored(KlDivBackward):
    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms(x, {**attrs, "logTarget": False}, shapes)


class _BatchCountInt16(KlDivBackward):
    def _divisor(self, attrs, shapes):
        b = self._b(shapes)
        if attrs["reduction"] == 3 and numel(b):
            return int(np.array(b[0]).astype(np.int64).astype(np.int16))
        return super()._divisor(attrs, shapes)


class _OtherOrder(KlDivBackward):
    """((-grad)*cof)*target: the coefficient on the gradient first."""

    def reference_terms(self, x, attrs, shapes):
        d = self._divisor(attrs, shapes)
        g = -x["gradOutput"] if d is None else (-x["gradOutput"]) * np.float32(1.0 / d)
        return g * (np.exp(x["target"]) if attrs["logTarget"] else x["target"])


def _case_b(case: Any) -> Shape:
    """B of a case whose shapes are valid (a numbers case)."""
    return OP._b(dict(case.shapes))


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("KlSignFlip", "KL: the gradient is +target*grad instead of -target*grad",
           _SignFlip(), where=lambda c: True),
    Mutant("KlBatchmeanSelfDim0", "KL batchmean divides by self.shape[0] (PyTorch's) instead of B[0]",
           _BatchmeanSelfDim0(),
           where=lambda c: c.expect == 0 and c.reduction == 3
           and (c.shapes["self"] or (1,))[0] != _case_b(c)[0]),
    Mutant("KlMaskNonPositiveTargets",
           "KL masks target <= 0 to a zero gradient (old PyTorch/vendor kernel) (issue 2)",
           _MaskNonPositiveTargets(), where=lambda c: not c.attrs["logTarget"]),
    Mutant("KlLogTargetIgnored", "KL: logTarget ignored (uses target where exp(target) is due)",
           _LogTargetIgnored(), where=lambda c: c.attrs["logTarget"]),
    # shows only at scale (no small case has a batch past 32767)
    Mutant("BatchCountInt16", "KL batchmean holds B[0] in int16: past 32767 it wraps negative",
           _BatchCountInt16(),
           where=lambda c: c.expect == 0 and c.reduction == 3 and _case_b(c)[0] > 32767),
)

# The loss family's mutants (tests/mutants/family.py): KlMeanDivisorNumelSelf, KlSumAsMean, ...
FAMILY = Member(prefix="Kl", mean_over="B",
                opt_out={"EmptyMeanZero": "out is self's shape: an empty B sums into zeros, no fill",
                         "AccumulateInPrecision": "its terms are already rounded to the result's dtype "
                         "before the sum (term_dtype is result_dtype)"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("KlFloat32OtherOrder", "float32, KL (-grad*cof)*target", _OtherOrder()),
)
