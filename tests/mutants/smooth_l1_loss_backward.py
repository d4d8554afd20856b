"""aclnnSmoothL1LossBackward's test kit: its planted defects and correct variants
(tests/mutants/kit.py), each kernel the operator with one step of the reference overridden. Each
numeric mutant's `where` is the cases on whose data its kernel computes another value (`_changes`);
the check's defect's, the rejection cases it turns into success."""
from __future__ import annotations

import functools
import math
from typing import Dict, Tuple

import numpy as np

from suite.cases.inputs import draw_inputs
from suite.ops.base import Shape, Signature, numel
from suite.ops.smooth_l1_loss_backward import EPS, OP, SmoothL1LossBackward, beta32
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


@functools.lru_cache(maxsize=16)
def _inputs32(case) -> Tuple[Dict[str, np.ndarray], Dict[str, Shape]]:
    """A numeric case's inputs widened to float32 (what the kernel computes from), and their shapes."""
    x = draw_inputs(case)
    return {n: a.astype(np.float32) for n, a in x.items()}, {n: tuple(a.shape) for n, a in x.items()}


def _changes(case, kernel: "SmoothL1LossBackward") -> bool:
    """Whether `kernel` (a mutant) computes, before the final rounding, another value than the
    reference kernel for some element of this numeric case (NaN and NaN agree). Whether the suite
    then sees it is the standard's business: this names where the defect is, from the case's data."""
    if case.expect != 0:
        return False
    x, shapes = _inputs32(case)
    b = OP.b_shape(shapes)
    attrs = dict(case.attrs)
    with np.errstate(all="ignore"):
        want = np.broadcast_to(OP.reference_terms(x, attrs, shapes), b)
        got = np.broadcast_to(kernel.reference_terms(x, attrs, shapes), b)
        return bool(np.any((want != got) & ~(np.isnan(want) & np.isnan(got))))


def _with_beta(sig: Signature, beta: float) -> Signature:
    return Signature(sig.shapes, sig.dtypes, sig.out_shape, sig.out_dtype, {**sig.attrs, "beta": beta},
                     sig.product)


class _BandInclusive(SmoothL1LossBackward):
    def combine(self, d, t, beta):
        zero, one = np.float32(0.0), np.float32(1.0)
        x0 = np.where(d == d, d, zero)
        s1 = np.where(x0 <= -beta, -one, zero)
        s2 = np.where(x0 >= beta, one, zero)
        s3 = np.where(np.abs(x0) <= beta, t, zero)
        return (s1 + s2) + s3


class _EpsilonDropped(SmoothL1LossBackward):
    def band_term(self, d, beta):
        return d / beta


class _BetaIgnored(SmoothL1LossBackward):
    def kernel_beta(self, attrs):
        return np.float32(1.0)


class _BetaZeroDividesByZero(SmoothL1LossBackward):
    def combine(self, d, t, beta):
        zero, one = np.float32(0.0), np.float32(1.0)
        x0 = np.where(d == d, d, zero)
        s1 = np.where(x0 <= -beta, -one, zero)
        s2 = np.where(x0 >= beta, one, zero)
        s3 = (np.abs(x0) < beta).astype(np.float32) * (d / beta)
        return (s1 + s2) + s3


class _ZeroSelectChain(SmoothL1LossBackward):
    def combine(self, d, t, beta):
        zero, one = np.float32(0.0), np.float32(1.0)
        x0 = np.where(d == d, d, zero)
        r = np.where(x0 <= -beta, -one, zero)
        r = np.where(x0 >= beta, one, r)
        return np.where(np.abs(x0) < beta, t, r)


class _NanBetaAccepted(SmoothL1LossBackward):
    def beta_accepted(self, beta):
        return not beta < 0


class _InverseMultiply(SmoothL1LossBackward):
    def band_term(self, d, beta):
        return d * (np.float32(1.0) / (beta + np.float32(EPS)))

    def mean_cof(self, shapes):
        return np.float32(1.0) / np.float32(numel(shapes["self"]))

    def reference_terms(self, x, attrs, shapes):
        beta = self.kernel_beta(attrs)
        d = x["self"] - x["target"]
        g = x["gradOut"]
        if attrs["reduction"] == 1 and numel(shapes["self"]):
            g = g * self.mean_cof(shapes)
        return self.combine(d, self.band_term(d, beta), beta) * g


class _Float64Inside(SmoothL1LossBackward):
    def reference_terms(self, x, attrs, shapes):
        x64 = {n: np.asarray(a, dtype=np.float64) for n, a in x.items()}
        return self.terms(x64, attrs, shapes)


_NUMERIC = (
    ("SmoothL1BandInclusive",
     "SmoothL1: the band term is selected on |d| <= beta (not <): at |d| == beta it adds "
     "d / (beta + 1e-6) to the +-1, r is about +-2", _BandInclusive()),
    ("SmoothL1EpsilonDropped",
     "SmoothL1: the band term divides by beta, not beta + 1e-6 (seen for beta below about 1e-3, "
     "1e-2 with a float32 out, or where the band lattice puts a 16-bit result on a rounding "
     "midpoint)", _EpsilonDropped()),
    ("SmoothL1BetaIgnored", "SmoothL1: beta ignored, 1.0 used (the kernel's default sigma)",
     _BetaIgnored()),
    ("SmoothL1BetaZeroDividesByZero",
     "SmoothL1: the 2022 TBE revision's band term, d / beta times the 0/1 band mask (not "
     "selected): beta = 0 gives 0 * (d / 0) = NaN everywhere, an infinite d NaN", _BetaZeroDividesByZero()),
    ("SmoothL1ZeroSelectChain",
     "SmoothL1: the +-1 terms are a select chain (the A2 Ascend C port's order), not a sum: with "
     "beta = 0, d = 0 gives +1 instead of 0", _ZeroSelectChain()),
)

MUTANTS: Tuple[Mutant, ...] = tuple(
    Mutant(name, desc, k, functools.partial(_changes, kernel=k)) for name, desc, k in _NUMERIC) + (
    Mutant("SmoothL1NanBetaAccepted",
           "SmoothL1: beta validated as `beta < 0` rejected, so a NaN beta is accepted",
           _NanBetaAccepted(),
           lambda c: c.expect != 0 and math.isnan(beta32(c.attrs))
           and OP.check(_with_beta(c.signature, 1.0))[0] == 0,
           frozenset({"rejection"})),
)

# The loss family's mutants (tests/mutants/family.py): SmoothL1MeanDivisorNumelB, ...
FAMILY = Member(prefix="SmoothL1", mean_over="self",
                opt_out={"EmptyMeanZero": "out is B: an empty B is an empty out, nothing to fill",
                         "AccumulateInPrecision": "nothing is summed: out is B"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("SmoothL1InverseMultiply",
            "float32, the A2 Ascend C port's order: d * (1 / (beta + 1e-6)) and one "
            "coefficient 1 / float(numel(self)), gradOut scaled before r",
            _InverseMultiply()),
    Variant("SmoothL1Float64", "float64 inside, rounded to float32 and then to P and out",
            _Float64Inside()),
)
