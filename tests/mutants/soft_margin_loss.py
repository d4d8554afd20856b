"""aclnnSoftMarginLoss's test kit: its planted defects and correct variants (tests/mutants/kit.py),
each kernel the operator with one method overridden, and where each defect shows (read off the
case's shapes and value set)."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from suite.ops.base import broadcast, ftz, numel
from suite.ops.soft_margin_loss import SoftMarginLoss
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


def _numeric(c) -> bool:
    return c.expect == 0 and numel(broadcast(c.shapes["self"], c.shapes["target"])) > 0


def _scaled(loss, attrs, shapes):
    n = numel(broadcast(shapes["self"], shapes["target"]))
    return ftz(loss * np.float32(1.0 / n)) if attrs["reduction"] == 1 and n else loss


# -- the planted defects ---------------------------------------------------------------------------
class _LogOnePlus(SoftMarginLoss):
    """max(0, -t) + log(1 + exp(-|t|)), as both vendor kernels write it: 1 + e rounds away e's bits."""

    def reference_terms(self, x, attrs, shapes):
        t = ftz(x["target"] * x["self"])
        e = ftz(np.exp(-np.abs(t)))
        return _scaled(ftz(np.maximum(-t, np.float32(0)) + ftz(np.log(ftz(np.float32(1) + e)))), attrs, shapes)


class _NaiveExp(SoftMarginLoss):
    """log(1 + exp(-t)), the TBE kernel's form: exp(-t) overflows once -t passes 88.7."""

    def reference_terms(self, x, attrs, shapes):
        t = ftz(x["target"] * x["self"])
        with np.errstate(over="ignore"):
            return _scaled(ftz(np.log(ftz(np.float32(1) + ftz(np.exp(-t))))), attrs, shapes)


class _SignFlipped(SoftMarginLoss):
    """log(1 + exp(target * self)): the margin's sign dropped."""

    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms({**x, "target": -x["target"]}, attrs, shapes)


# -- correct variants --------------------------------------------------------------------------------
class _Softplus(SoftMarginLoss):
    """log1p(exp(-t)) where -t <= 20, -t beyond it (PyTorch's softplus threshold)."""

    def reference_terms(self, x, attrs, shapes):
        t = ftz(x["target"] * x["self"])
        with np.errstate(over="ignore"):
            loss = np.where(-t > 20, -t, ftz(np.log1p(ftz(np.exp(np.minimum(-t, np.float32(20)))))))
        return _scaled(ftz(loss.astype(np.float32)), attrs, shapes)


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("SmlFwdLogOnePlus", "SoftMarginLoss takes log(1 + e) for log1p(e), e = exp(-|target * self|) (the "
           "vendor kernels' form)", _LogOnePlus(),
           where=lambda c: _numeric(c) and c.values in ("saturated", "uniform", "specials")),
    Mutant("SmlFwdNaiveExp", "SoftMarginLoss computes log(1 + exp(-target * self)) as written (the TBE kernel's "
           "form): inf past -tx = 88.7", _NaiveExp(),
           where=lambda c: _numeric(c) and c.values in ("large", "saturated", "uniform", "specials")),
    Mutant("SmlFwdSignFlipped", "SoftMarginLoss computes log(1 + exp(target * self))", _SignFlipped(), where=_numeric),
)

# The loss family's mutants (tests/mutants/family.py): SmlFwdMeanDivisorNumelSelf, SmlFwdSumAsMean,
# SmlFwdEmptyMeanZero, SmlFwdAccumulateInPrecision, ...
FAMILY = Member(prefix="SmlFwd", mean_over="B")

VARIANTS: Tuple[Variant, ...] = (
    Variant("SmlFwdSoftplus", "float32, SoftMarginLoss as PyTorch's softplus (threshold 20)", _Softplus()),
)
