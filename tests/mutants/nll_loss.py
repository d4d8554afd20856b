"""aclnnNLLLoss's test kit: its planted defects and correct variants (tests/mutants/kit.py), each
kernel the operator with one method overridden, and where each defect shows: each `where` reads
the case's drawn inputs and says where the defect changes some bit of a written output (out or
totalWeightOut) against the operator's reference, or leaves one unwritten."""
from __future__ import annotations

import functools
from typing import Tuple

import numpy as np

from suite.cases.inputs import draw_inputs
from suite.ops.base import ftz, present
from suite.ops.nll_loss import NAME, TOTAL, NLLLoss
from tests.mutants.kernel import operator_kernel
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


# -- the planted defects (each overrides one method) ------------------------------------------
class _MeanDividesByN(NLLLoss):
    """mean divides the sum of terms by N, the number of samples (an unweighted mean over every
    sample), not by the weight sum of the samples that take part."""

    def _mean32(self, total, weight):
        return ftz(np.float32(total) / np.float32(self._n))

    def _gathered32(self, call):
        l, w, keep = super()._gathered32(call)
        self._n = max(keep.size, 1)
        return l, w, keep


class _IgnoreNotHonoured(NLLLoss):
    """ignoreIndex never compared: a sample whose target is ignoreIndex takes part like any other
    (gathered at class 0 when its target is outside [0, C))."""

    def _taking_part(self, x, attrs):
        return np.ones(np.shape(x["target"]), dtype=bool)


class _TotalNotWritten(NLLLoss):
    """totalWeightOut never written under mean and sum (as under none)."""

    def reference(self, call, block=1 << 16, flush=False):
        found = super().reference(call, block, flush)
        found.pop(TOTAL, None)
        return found


class _TotalCountsEverySample(NLLLoss):
    """totalWeightOut sums the weights of every sample, the left-out ones too (the mean's own
    divisor stays right)."""

    def _outputs32(self, call):
        r, weight = super()._outputs32(call)
        if weight is None:
            return r, weight
        l, w, keep = self._gathered32(call)
        return r, self._sum32(w)


class _NarrowSequentialSum(NLLLoss):
    """The sums of terms and of weights accumulated one sample at a time in the inputs' own dtype
    (BFLOAT16 or FLOAT16), not in FLOAT: a unit-weight BFLOAT16 sum stops at 256."""

    def _gathered32(self, call):
        self._dt = present(call.inputs)["self"].dtype
        return super()._gathered32(call)

    def _sum32(self, v):
        if self._dt.itemsize != 2:
            return super()._sum32(v)
        v = np.asarray(v, dtype=self._dt).reshape(-1)
        return np.float32(np.cumsum(v, dtype=self._dt)[-1]) if v.size else np.float32(0.0)


class _MeanOfCoreMeans(NLLLoss):
    """mean in the wrong order: each of two cores divides its own partial sum of terms by its own
    partial weight sum, and the two quotients are averaged."""

    def _outputs32(self, call):
        r, weight = super()._outputs32(call)
        if call.attrs["reduction"] != 1:
            return r, weight
        l, w, keep = self._gathered32(call)
        l, w, keep = l.reshape(-1), w.reshape(-1), keep.reshape(-1)
        if l.size < 2:
            return r, weight
        h = l.size // 2
        q = [self._sum32(l[a:b]) / self._weight_sum32(w[a:b], keep[a:b]) for a, b in ((0, h), (h, l.size))]
        return ftz(np.float32((q[0] + q[1]) / np.float32(2.0))), weight


class _ClampBeforeIgnore(NLLLoss):
    """The target clamped into [0, C - 1] before it is compared with ignoreIndex: an ignoreIndex
    outside [0, C) (-100) then never matches, and its samples take part as class 0."""

    def operands(self, x, attrs):
        c = np.shape(x["self"])[-1] if np.ndim(x["self"]) else 0
        t = np.clip(np.asarray(x["target"]).astype(np.int64), 0, max(c - 1, 0))
        return super().operands({**x, "target": t}, attrs)


# -- correct variants ------------------------------------------------------------------------
class _OnePassRowByRow(NLLLoss):
    """One pass over the rows, as a single thread would: the sum of terms and the sum of weights
    each accumulated in FLOAT one sample at a time (no pairwise sums, no blocks)."""

    def _sum32(self, v):
        v = np.asarray(v, dtype=np.float32).reshape(-1)
        return np.float32(np.cumsum(v, dtype=np.float32)[-1]) if v.size else np.float32(0.0)


# -- where each defect shows -----------------------------------------------------------------
def _numbers(c) -> bool:
    return c.expect == 0 and c.op == NAME


def _changes(kernel: NLLLoss):
    @functools.lru_cache(maxsize=None)
    def where(c) -> bool:
        if not _numbers(c):
            return False
        from suite.run.runner import build_call
        call = build_call(c, present(draw_inputs(c)))
        got, want = kernel.reference(call), _OP.reference(call)
        if set(got) != set(want):
            return True
        for n in want:
            a, b = np.asarray(got[n]).astype(np.float64), np.asarray(want[n]).astype(np.float64)
            if not ((a == b) | (np.isnan(a) & np.isnan(b))).all():
                return True
        return False
    return where


_OP = NLLLoss()

_KERNELS = {"NllMeanDividesByN": _MeanDividesByN(), "NllIgnoreNotHonoured": _IgnoreNotHonoured(),
            "NllTotalNotWritten": _TotalNotWritten(), "NllTotalCountsEverySample": _TotalCountsEverySample(),
            "NllNarrowSequentialSum": _NarrowSequentialSum(), "NllMeanOfCoreMeans": _MeanOfCoreMeans(),
            "NllClampBeforeIgnore": _ClampBeforeIgnore()}

_SAYS = {"NllMeanDividesByN": "NLLLoss mean divides by N instead of the weight sum of the samples that take part",
         "NllIgnoreNotHonoured": "NLLLoss counts the samples whose target is ignoreIndex",
         "NllTotalNotWritten": "NLLLoss leaves totalWeightOut unwritten under mean and sum",
         "NllTotalCountsEverySample": "NLLLoss totalWeightOut sums the left-out samples' weights too",
         "NllNarrowSequentialSum": "NLLLoss sums terms and weights one at a time in the 16-bit input dtype",
         "NllMeanOfCoreMeans": "NLLLoss mean as the average of two cores' own quotients (the wrong order)",
         "NllClampBeforeIgnore": "NLLLoss clamps the target into [0, C) before comparing it with ignoreIndex"}

MUTANTS: Tuple[Mutant, ...] = tuple(Mutant(name, _SAYS[name], k, where=_changes(k)) for name, k in _KERNELS.items())

# The loss family's mutants (tests/mutants/family.py): NllResultInPrimaryDtype; the others do not fit
# NLLLoss's gather and weighted mean.
_W = "its terms are gathered per sample and summed in _outputs32, not reduced from reference_terms"
FAMILY = Member(prefix="Nll", opt_out={
    "MeanDivisor": "mean divides by the weight sum of the samples that take part, not a count "
                   "(NllMeanDividesByN is its own)",
    "SumAsMean": _W, "MeanAsSum": _W, "AccumulateInPrecision": _W + " (NllNarrowSequentialSum is its own)",
    "BroadcastDropped": "nothing is broadcast: target and weight are gathered per sample",
    "EmptyMeanZero": "the NaN of an empty mean is _mean32's 0/0, not empty_fill's: the family's "
                     "override does not reach it"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("NllOnePassRowByRow", "float32, NLLLoss's sums of terms and weights one sample at a time",
            _OnePassRowByRow()),
)


# -- backends for the reports' tests (tests/test_report_several.py): not planted defects of the
# kit (the registry reads MUTANTS and VARIANTS only), so the mutation score never runs them ------
class _TotalWeightOff(NLLLoss):
    """totalWeightOut twice the weight sum plus one, out right: a defect of the second output alone."""

    def _outputs32(self, call):
        r, weight = super()._outputs32(call)
        return r, (None if weight is None else np.float32(weight * np.float32(2.0) + np.float32(1.0)))


class _BothOff(_TotalWeightOff):
    """out's sign flipped as well as totalWeightOut off: both outputs fail."""

    def _outputs32(self, call):
        r, weight = super()._outputs32(call)
        return np.negative(r), weight


def _reduced(c) -> bool:
    return _numbers(c) and c.attrs["reduction"] != 0


NllTotalWeightOff = operator_kernel("NllTotalWeightOff", "NLLLoss totalWeightOut off, out right",
                                    _TotalWeightOff(), _reduced)
NllBothOutputsOff = operator_kernel("NllBothOutputsOff", "NLLLoss out sign-flipped and totalWeightOut off",
                                    _BothOff(), _numbers)
