"""aclnnMseLossBackward's test kit: its planted defects and correct variants (tests/mutants/kit.py),
each kernel the operator with one method overridden, and where each defect shows."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from suite.common import blocks as B
from suite.ops.base import numel
from suite.ops.mse_loss_backward import OP, MseLossBackward
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


class _MissingFactor2(MseLossBackward):
    def reference_terms(self, x, attrs, shapes):
        n = numel(shapes["self"])
        cof = np.float32(1.0) / np.float32(n) if attrs["reduction"] == 1 and n else np.float32(1.0)
        return (x["self"] - x["target"]) * cof * x["gradOutput"]


class _SignFlip(MseLossBackward):
    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms({**x, "self": x["target"], "target": x["self"]}, attrs, shapes)


class _CountInFloat16(MseLossBackward):
    def reference_terms(self, x, attrs, shapes):
        n = numel(shapes["self"])
        if attrs["reduction"] != 1 or not n:
            return super().reference_terms(x, attrs, shapes)
        with np.errstate(over="ignore"):
            cof = np.float32(2.0) / np.float32(np.float16(n))
        return (x["self"] - x["target"]) * cof * x["gradOutput"]


class _MeanCountInFloat16(MseLossBackward):
    """N is held in float16 only when the inputs are float16 (reference_terms sees float32)."""

    def reference(self, call, block=B.BLOCK):
        half = call.inputs["self"].dtype == np.float16
        return (_CountInFloat16() if half else OP).reference(call, block)


class _OtherOrder(MseLossBackward):
    """((grad*2)*(self-target))/N, the division in float32."""

    def reference_terms(self, x, attrs, shapes):
        n = numel(shapes["self"])
        r = (x["gradOutput"] * np.float32(2.0)) * (x["self"] - x["target"])
        return r / np.float32(n) if attrs["reduction"] == 1 and n else r


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("MseMissingFactor2", "MSE: the factor 2 of d/dx (x-y)^2 is missing",
           _MissingFactor2(), where=lambda c: True),
    Mutant("MseSignFlip", "MSE: computes target - self instead of self - target",
           _SignFlip(), where=lambda c: True),
    # shows only at scale (no small case has more than 65504 elements)
    Mutant("MeanCountInFloat16", "MSE mean on float16 inputs holds N in float16 for the "
           "coefficient 2/N: past 65504 it is inf and every result 0", _MeanCountInFloat16(),
           where=lambda c: c.expect == 0 and c.reduction == 1
           and c.dtypes["self"] == "float16" and numel(c.shapes["self"]) > 65504),
)

# The loss family's mutants (tests/mutants/family.py): MseMeanDivisorNumelB, MseSumAsMean, ...
FAMILY = Member(prefix="Mse", mean_over="self",
                says={"MeanDivisor": "MSE mean divides by numel(broadcast shape) instead of numel(self) (issue 2)"},
                opt_out={"EmptyMeanZero": "out is B: an empty B is an empty out, nothing to fill",
                         "AccumulateInPrecision": "nothing is summed: out is B",
                         "ResultInPrimaryDtype": "its result dtype is self's (every input's: it rejects mixed dtypes)"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("MseFloat32OtherOrder", "float32, MSE (grad*2)*(self-target)/N", _OtherOrder()),
)
