"""aclnnSoftMarginLossBackward's test kit: its planted defects and correct variants (tests/mutants/kit.py),
each kernel the operator with one method overridden, and where each defect shows."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from suite.ops.base import broadcast, ftz, numel
from suite.ops.soft_margin_loss_backward import SoftMarginLossBackward, _cof
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


def _numeric(c) -> bool:
    return c.expect == 0 and numel(broadcast(*(c.shapes[n] for n in ("gradOutput", "self", "target")))) > 0


class _NaiveExp(SoftMarginLossBackward):
    """e / (1 + e) as both vendor kernels write it: inf / inf = NaN once exp(-tx) overflows."""

    def reference_terms(self, x, attrs, shapes):
        e = ftz(np.exp(ftz(-x["target"] * x["self"])))
        r = ftz(ftz(-x["target"] * ftz(e / ftz(e + np.float32(1)))) * x["gradOutput"])
        return ftz(r * np.float32(_cof(attrs, shapes)))


class _SigmoidSign(SoftMarginLossBackward):
    """-target * sigmoid(+tx) * gradOutput: exp(tx) for exp(-tx)."""

    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms({**x, "self": -x["self"]}, attrs, shapes)


class _NoTarget(SoftMarginLossBackward):
    """-sigmoid(-tx) * gradOutput: the factor target of d/dx dropped (its sign kept)."""

    def reference_terms(self, x, attrs, shapes):
        r = super().reference_terms(x, attrs, shapes)
        return ftz(r / np.abs(x["target"]))


# -- correct variants --------------------------------------------------------------------------------
class _Ascend950Order(SoftMarginLossBackward):
    """The 950 kernel's order: (-y * e) / (1 + e) * (g * cof), its limit -y where e overflows."""

    def reference_terms(self, x, attrs, shapes):
        y = x["target"]
        e = ftz(np.exp(ftz(-(x["self"] * y))))
        q = np.where(np.isinf(e), -y, ftz(ftz(-y * e) / ftz(np.float32(1) + e)))
        return ftz(q * ftz(x["gradOutput"] * np.float32(_cof(attrs, shapes))))


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("SmlBwdNaiveExp", "SoftMarginLossBackward computes e / (1 + e) as written (both vendor kernels): "
           "NaN once exp(-target * self) overflows", _NaiveExp(),
           where=lambda c: _numeric(c) and c.values in ("large", "specials")),
    Mutant("SmlBwdSigmoidSign", "SoftMarginLossBackward takes sigmoid(target * self) for sigmoid(-target * self)",
           _SigmoidSign(), where=_numeric),
    Mutant("SmlBwdNoTarget", "SoftMarginLossBackward drops the factor |target| of the derivative",
           _NoTarget(), where=_numeric),
)

# The loss family's mutants (tests/mutants/family.py): SmlBwdMeanDivisorNumelSelf, SmlBwdSumAsMean, ...
FAMILY = Member(prefix="SmlBwd", mean_over="B",
                opt_out={"EmptyMeanZero": "out is B: an empty B is an empty out, nothing to fill",
                         "AccumulateInPrecision": "nothing is summed: out is B"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("SmlBwdAscend950Order", "float32, SoftMarginLossBackward in the 950 kernel's order", _Ascend950Order()),
)
