"""aclnnSmoothL1Loss's test kit (tests/mutants/kit.py): the loss family's mutants through `FAMILY`;
its own defects, the band's 0.5 dropped, the public TBE copy's older beta-scaled form and beta
ignored; its variants MseLoss's kit's mixins over SmoothL1Loss and PyTorch's order of the band term."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from suite.ops.base import broadcast, ftz, numel
from suite.ops.smooth_l1_loss import SmoothL1Loss
from suite.ops.smooth_l1_loss_backward import beta32
from tests.mutants import mse_loss as M
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


def _numeric(c) -> bool:
    return c.expect == 0 and numel(broadcast(c.shapes["self"], c.shapes["target"])) > 0


class _NoHalf(SmoothL1Loss):
    """d^2 / beta inside the band: the 0.5 dropped."""

    def reference_loss(self, x, attrs):
        l, d = super().reference_loss(x, attrs), ftz(x["self"] - x["target"])
        return np.where(np.abs(d) < np.float32(beta32(attrs)), ftz(l * np.float32(2)), l)


class _BetaScaled(SmoothL1Loss):
    """0.5 d^2 inside the band, beta |d| - 0.5 beta^2 outside: the older TBE copy's form (beta times
    the contract's)."""

    def reference_loss(self, x, attrs):
        b = np.float32(beta32(attrs))
        d = ftz(x["self"] - x["target"])
        return np.where(np.abs(d) < b, ftz(ftz(d * np.float32(0.5)) * d), ftz(ftz(np.abs(d) * b) - np.float32(0.5) * b * b))


class _BetaIgnored(SmoothL1Loss):
    """beta taken as 1 whatever the call passes."""

    def reference_loss(self, x, attrs):
        return super().reference_loss(x, {**attrs, "beta": 1.0})


class _TorchOrder(SmoothL1Loss):
    """The band term as PyTorch writes it: 0.5 * d * d / beta (a division, not a product by 1 / beta)."""

    def reference_loss(self, x, attrs):
        b = np.float32(beta32(attrs))
        d = ftz(x["self"] - x["target"])
        with np.errstate(divide="ignore", invalid="ignore"):
            band = ftz(ftz(ftz(np.float32(0.5) * d) * d) / b)
        return np.where(np.abs(d) < b, band, ftz(np.abs(d) - np.float32(0.5) * b))


class _ScaleOnceAfterTheSum(M.ScaleOnceAfterTheSum, SmoothL1Loss):
    """Both kernels' order: the float32 sum, then one multiply by 1/N."""


class _SumInReverse(M.SumInReverse, SmoothL1Loss):
    pass


def _beta_not_one(c) -> bool:
    return _numeric(c) and beta32(c.attrs) != 1.0


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("Sl1FwdNoHalf", "SmoothL1Loss computes d^2 / beta inside the band (the 0.5 dropped)", _NoHalf(),
           where=lambda c: _numeric(c) and beta32(c.attrs) > 0),
    Mutant("Sl1FwdBetaScaled", "SmoothL1Loss computes 0.5 d^2 and beta |d| - 0.5 beta^2 (the older TBE copy)",
           _BetaScaled(), where=_beta_not_one),
    Mutant("Sl1FwdBetaIgnored", "SmoothL1Loss takes beta as 1", _BetaIgnored(), where=_beta_not_one),
)

# The loss family's mutants (tests/mutants/family.py): Sl1FwdMeanDivisorNumelSelf, Sl1FwdSumAsMean, ...
FAMILY = Member(prefix="Sl1Fwd", mean_over="B", opt_out={
    "AccumulateInPrecision": "every term is non-negative: rounding each to 16 bits before the float32 sum moves "
                             "the sum by at most the terms' own relative rounding, within the result's"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("Sl1FwdScaleOnceAfterTheSum", "float32, SmoothL1Loss mean as the sum times 1/N once (the kernels' "
            "order)", _ScaleOnceAfterTheSum()),
    Variant("Sl1FwdSumInReverse", "float32, SmoothL1Loss sum and mean over the terms in reverse order",
            _SumInReverse()),
    Variant("Sl1FwdTorchOrder", "float32, SmoothL1Loss's band term as 0.5 * d * d / beta", _TorchOrder()),
)
