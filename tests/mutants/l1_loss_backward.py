"""aclnnL1LossBackward's test kit: its planted defects and correct variants (tests/mutants/kit.py),
each kernel the operator with one method overridden, and where each defect shows: each `where` is
computed from the case's drawn inputs, exactly, in float64."""
from __future__ import annotations

import functools
from typing import Any, Dict, Tuple

import numpy as np

from suite.common import dtypes
from suite.cases.inputs import draw_inputs
from suite.contract import ACLNN_ERR_PARAM_INVALID
from suite.ops.base import broadcast, numel
from suite.ops.flush import F32_TINY
from suite.ops.l1_loss_backward import NAME, L1LossBackward
from suite.ops.loss import promote
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


# -- the planted defects (each overrides one method) ------------------------------------------
class _SignZeroAsPlusOne(L1LossBackward):
    def _sign32(self, a, t):
        return np.where(a >= t, np.float32(1.0), np.float32(-1.0))


class _SignFlipped(L1LossBackward):
    def _sign32(self, a, t):
        return (a < t).astype(np.float32) - (a > t).astype(np.float32)


class _SignOfFlushedDifference(L1LossBackward):
    def _sign32(self, a, t):
        d = np.asarray(a - t, dtype=np.float32)
        d = np.where(np.abs(d) < F32_TINY, np.float32(0.0), d)
        return np.sign(d).astype(np.float32)


class _MeanDivisorSelfGrad(L1LossBackward):
    def _cof(self, attrs, shapes):
        n = numel(broadcast(shapes["self"], shapes["gradOutput"]) or ())
        return np.float32(1.0) / np.float32(n) if attrs["reduction"] == 1 and n else np.float32(1.0)


class _MixedDtypesRejected(L1LossBackward):
    def check(self, sig):
        status, why = super().check(sig)
        if status == 0 and len({sig.dtypes[n] for n in self.inputs}) > 1:
            return ACLNN_ERR_PARAM_INVALID, "gradOutput, self and target dtypes differ"
        return status, why


# -- correct variants -------------------------------------------------------------------------
class _ScaleAfterSign(L1LossBackward):
    def reference_terms(self, x, attrs, shapes):
        n = self._n(shapes)
        r = x["gradOutput"] * self._sign32(x["self"], x["target"])
        return r * np.float32(1.0 / n) if attrs["reduction"] == 1 and n else r


class _DivideByN(L1LossBackward):
    def reference_terms(self, x, attrs, shapes):
        n = self._n(shapes)
        g = x["gradOutput"] / np.float32(n) if attrs["reduction"] == 1 and n else x["gradOutput"]
        return self._sign32(x["self"], x["target"]) * g


# -- where each defect shows ------------------------------------------------------------------
# Each predicate says, from the case's metadata and its drawn inputs, whether the defect changes
# some output element as the suite sees it: the contract's value and the defect's value, both
# computed exactly in float64 from the sign and divisor each uses, differ after rounding to the
# dtype the case is judged in (NaN equal to NaN, +0 to -0; a 0 where the contract's value is
# subnormal is no difference: the judge allows that flush).
def _numeric(case: Any) -> bool:
    """A case of this operator whose call succeeds with a non-empty result."""
    return case.op == NAME and case.expect == 0 and case.out_shape is not None and numel(case.out_shape) > 0


@functools.lru_cache(maxsize=64)
def _drawn(case: Any) -> Dict[str, np.ndarray]:
    """The case's inputs (drawn exactly as the suite draws them) in float64, broadcast to B."""
    x = draw_inputs(case)
    b = tuple(case.out_shape)
    return {n: np.broadcast_to(np.asarray(a).astype(np.float64), b) for n, a in x.items()}


def _judged(case: Any) -> str:
    """The dtype the case's result is judged in (suite.run.paths.judged_dtype's rule)."""
    through = promote(case.dtypes.values()) or case.out_dtype
    fine = dtypes.finfo(dtypes.dtype_of(through)).mant_bits < dtypes.finfo(dtypes.dtype_of(case.out_dtype)).mant_bits
    return through if fine else case.out_dtype


def _sign(a: np.ndarray, t: np.ndarray) -> np.ndarray:
    return (a > t).astype(np.float64) - (a < t).astype(np.float64)


def _differs(case: Any, want: np.ndarray, got: np.ndarray) -> bool:
    dt = dtypes.dtype_of(_judged(case))
    with np.errstate(all="ignore"):
        w = dtypes.round_to(want, dt).astype(np.float64)
        g = dtypes.round_to(got, dt).astype(np.float64)
        same = (w == g) | (np.isnan(w) & np.isnan(g)) | ((g == 0) & (np.abs(w) < dtypes.finfo(dt).tiny))
    return not bool(np.all(same))


def _where(sign=None, divisor=None, reductions=(0, 1, 2)):
    """Where a kernel taking `sign(self, target)` (float64 arrays) instead of the comparisons,
    and/or dividing by `divisor(case)` instead of the contract's (numel(B) for mean, else 1),
    gives other numbers than the contract, on cases of `reductions`."""
    def where(case: Any) -> bool:
        if not _numeric(case) or case.attrs["reduction"] not in reductions:
            return False
        n = numel(case.out_shape) if case.attrs["reduction"] == 1 else 1
        m = n if divisor is None else divisor(case)
        if sign is None and m == n:
            return False
        x = _drawn(case)
        a, t, g = x["self"], x["target"], x["gradOutput"]
        s = _sign(a, t)
        with np.errstate(all="ignore"):
            return _differs(case, g * s / n, g * (s if sign is None else sign(a, t)) / m)
    return where


def _ge_as_plus_one(a, t):
    return np.where(a >= t, 1.0, -1.0)


def _flipped(a, t):
    return -_sign(a, t)


def _flushed(a, t):
    """sign(self - target) of the float32 difference, flushed to zero below float32's smallest
    normal; NaN for the same infinity on both sides."""
    with np.errstate(all="ignore"):
        d = a.astype(np.float32).astype(np.float64) - t.astype(np.float32).astype(np.float64)
        d = np.asarray(d.astype(np.float32), dtype=np.float64)
        return np.sign(np.where(np.abs(d) < F32_TINY, 0.0, d))


def _numel_self_grad(case: Any) -> int:
    return numel(broadcast(case.shapes["self"], case.shapes["gradOutput"]) or ())


def _where_mixed(case: Any) -> bool:
    """Rejecting mixed input dtypes fails every accepted call whose inputs' dtypes differ."""
    return case.op == NAME and case.expect == 0 and len(set(case.dtypes.values())) > 1


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("L1SignZeroAsPlusOne", "L1: sign(0) taken as +1 (self >= target -> 1): equal inputs "
           "give gradOutput instead of 0", _SignZeroAsPlusOne(), _where(sign=_ge_as_plus_one)),
    Mutant("L1SignFlipped", "L1: the gradient's sign flipped (sign(target - self))",
           _SignFlipped(), _where(sign=_flipped)),
    Mutant("L1SignOfFlushedDifference", "L1: sign of the float32 difference self - target with "
           "subnormal differences flushed to zero (and inf - inf = NaN), not two comparisons",
           _SignOfFlushedDifference(), _where(sign=_flushed)),
    Mutant("L1MeanDivisorSelfGradBroadcast", "L1: mean divides by numel(broadcast(self, "
           "gradOutput)), ignoring target's dimensions (the vendor's ST reference)",
           _MeanDivisorSelfGrad(), _where(divisor=_numel_self_grad, reductions=(1,))),
    Mutant("L1MixedDtypesRejected", "L1: mixed input dtypes rejected with 161002 (the "
           "contract promotes them)", _MixedDtypesRejected(), _where_mixed,
           frozenset({"numbers"})),
)

# The loss family's mutants (tests/mutants/family.py): L1MeanDivisorNumelSelf, L1SumAsMean, ...
FAMILY = Member(prefix="L1", mean_over="B",
                opt_out={"EmptyMeanZero": "out is B: an empty B is an empty out, nothing to fill",
                         "AccumulateInPrecision": "nothing is summed: out is B"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("L1ScaleAfterSign", "L1: (gradOutput * sign) * float32(1/N): the Ascend C port's "
            "order and coefficient (one rounding of 1/N)", _ScaleAfterSign()),
    Variant("L1DivideByN", "L1: sign * (gradOutput / N), a float32 division instead of the "
            "coefficient", _DivideByN()),
)
