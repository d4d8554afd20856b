"""aclnnBinaryCrossEntropyBackward's test kit: its planted defects and correct variants
(tests/mutants/kit.py), each kernel the operator with one defect, and where each defect shows."""
from __future__ import annotations

import dataclasses
from typing import Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR
from suite.ops.base import numel
from suite.ops.binary_cross_entropy_backward import EPS32, OP, BinaryCrossEntropyBackward
from suite.ops.loss import promote
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant

def _numeric(case) -> bool:
    """A valid call with a non-empty result."""
    return case.expect == 0 and numel(case.shapes["self"]) > 0


def _with_weight(case) -> bool:
    return case.shapes["weight"] is not None


class _NullWeightAsZero(BinaryCrossEntropyBackward):
    def reference_terms(self, x, attrs, shapes):
        if "weight" not in x:
            x = {**x, "weight": np.float32(0.0)}
        return super().reference_terms(x, attrs, shapes)


class _WeightIgnored(BinaryCrossEntropyBackward):
    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms({n: a for n, a in x.items() if n != "weight"}, attrs, shapes)


class _ClampMissing(BinaryCrossEntropyBackward):
    def reference_terms(self, x, attrs, shapes):
        s = x["self"]
        r = (s - x["target"]) / (s * (np.float32(1.0) - s))
        r = x["gradOutput"] * (x["weight"] * r if "weight" in x else r)
        return r * self.cof(shapes) if attrs["reduction"] == 1 else r


class _ClampOnSelf(BinaryCrossEntropyBackward):
    def reference_terms(self, x, attrs, shapes):
        s = x["self"]
        c = np.clip(s, EPS32, np.float32(1.0) - EPS32)          # (1 - 1e-12 is 1.0 in float32)
        r = (s - x["target"]) / (c * (np.float32(1.0) - c))
        r = x["gradOutput"] * (x["weight"] * r if "weight" in x else r)
        return r * self.cof(shapes) if attrs["reduction"] == 1 else r


class _EpsilonFloat16Tiny(BinaryCrossEntropyBackward):
    def reference_terms(self, x, attrs, shapes):
        s = x["self"]
        r = (s - x["target"]) / np.maximum(s * (np.float32(1.0) - s), np.float32(2.0 ** -14))
        r = x["gradOutput"] * (x["weight"] * r if "weight" in x else r)
        return r * self.cof(shapes) if attrs["reduction"] == 1 else r


class _SignFlipped(BinaryCrossEntropyBackward):
    def reference_terms(self, x, attrs, shapes):
        return -super().reference_terms(x, attrs, shapes)


class _MeanDivisorGradOutput(BinaryCrossEntropyBackward):
    def cof(self, shapes):
        return super().cof({"self": shapes["gradOutput"]})


class _NullWeightRejected(BinaryCrossEntropyBackward):
    def check(self, sig):
        if sig.shapes.get("weight") is None:
            return ACLNN_ERR_PARAM_NULLPTR, "weight is NULL"
        return super().check(sig)


class _WeightDtypeUnchecked(BinaryCrossEntropyBackward):
    def check(self, sig):
        if sig.shapes.get("weight") is not None:
            sig = dataclasses.replace(sig, dtypes={**sig.dtypes, "weight": sig.dtypes["self"]})
        return super().check(sig)


def _only_weight_dtype_wrong(case) -> bool:
    if case.expect != INVALID or not _with_weight(case):
        return False
    sig = case.signature
    return OP.check(dataclasses.replace(sig, dtypes={**sig.dtypes, "weight": sig.dtypes["self"]}))[0] == 0


# -- correct kernels that compute otherwise
class _StaticCof(BinaryCrossEntropyBackward):
    def cof(self, shapes):
        n = numel(shapes["self"])
        return np.float32(1.0 / n)


class _Arch35Order(BinaryCrossEntropyBackward):
    def reference_terms(self, x, attrs, shapes):
        s = x["self"]
        r = (x["gradOutput"] * (s - x["target"])) / np.maximum(EPS32, (np.float32(1.0) - s) * s)
        if "weight" in x:
            r = r * x["weight"]
        n = self._n(shapes)
        return r * np.float32(np.float32(1.0) / np.float32(n)) if attrs["reduction"] == 1 and n else r


class _Float64Inside(BinaryCrossEntropyBackward):
    def reference_terms(self, x, attrs, shapes):
        return self.terms({n: np.asarray(a, dtype=np.float64) for n, a in x.items()}, attrs, shapes)


# The value sets where self reaches the clamp of x * (1 - x).
_CLAMP_SETS = ("clamp", "outside", "specials")

MUTANTS: Tuple[Mutant, ...] = (
    Mutant("BceNullWeightAsZero", "a NULL weight is read as zeros instead of ones", _NullWeightAsZero(),
           lambda c: _numeric(c) and not _with_weight(c)),
    Mutant("BceWeightIgnored", "the weight is never applied", _WeightIgnored(),
           lambda c: _numeric(c) and _with_weight(c) and c.values != "unit_weight"),
    Mutant("BceClampMissing", "x * (1 - x) is not clamped: x at 0, 1, outside [0, 1] or inf divides by "
           "0 or a negative number (in the specials set only where a self of +-0 or +-inf meets finite, "
           "nonzero other inputs)", _ClampMissing(),
           lambda c: _numeric(c) and c.values in _CLAMP_SETS),
    Mutant("BceClampOnSelf", "x is clamped to [1e-12, 1 - 1e-12] instead of x * (1 - x) to >= 1e-12 "
           "(in float32 the upper bound is 1: x >= 1 divides by 0 or a negative number; where P or "
           "out is float16 that gives the same infinity as the clamped 1e12, unless x = t at x = 1)",
           _ClampOnSelf(),
           lambda c: _numeric(c) and (c.values == "clamp" or c.values == "outside"
                                      and "float16" not in (promote(c.dtypes.values()), c.out_dtype))),
    Mutant("BceEpsilonFloat16Tiny", "the clamp is at float16's smallest normal, 2^-14, instead of 1e-12 "
           "(in the specials set only where a self of +-0 meets finite, nonzero other inputs, and a "
           "result that stays finite in float16)",
           _EpsilonFloat16Tiny(), lambda c: _numeric(c) and c.values in _CLAMP_SETS),
    Mutant("BceSignFlipped", "the gradient's sign is flipped ((t - x) instead of (x - t))", _SignFlipped(),
           _numeric),
    Mutant("BceMeanDivisorGradOutput", "mean divides by numel(gradOutput) instead of numel(self)",
           _MeanDivisorGradOutput(),
           lambda c: _numeric(c) and c.reduction == 1
           and numel(c.shapes["gradOutput"]) != numel(c.shapes["self"])),
    Mutant("BceNullWeightRejected", "a NULL weight is rejected with 161001 (the shared NULL check "
           "applied to every input)", _NullWeightRejected(),
           lambda c: not _with_weight(c) and c.expect in (0, INVALID),
           frozenset({"numbers", "determinism", "rejection"})),
    Mutant("BceWeightDtypeUnchecked", "the weight's dtype is not checked against the product (bfloat16 "
           "accepted on atlas-training and atlas-inference)", _WeightDtypeUnchecked(),
           _only_weight_dtype_wrong, frozenset({"rejection"})),
)

# The loss family's mutants (tests/mutants/family.py): BceMeanAsSum, BceLabelsNotBroadcast (the
# dropped broadcast of target and weight: only gradOutput is broadcast, as the TBE kernel's
# classify lists it), ...
FAMILY = Member(prefix="Bce", mean_over="self", dropped=("target", "weight"),
                names={"BroadcastDropped": "BceLabelsNotBroadcast"},
                opt_out={"MeanDivisor": "B is self's shape (every other input broadcasts to self): "
                         "no other count; BceMeanDivisorGradOutput is its own",
                         "EmptyMeanZero": "out is self's shape: an empty self is an empty out",
                         "AccumulateInPrecision": "nothing is summed: out is self's shape"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("BceStaticCof", "the static-shape kernel's mean coefficient: 1/N rounded once to float32",
            _StaticCof()),
    Variant("BceArch35Order", "the Ascend C (ascend950) kernel's order: ((g * (x - t)) / max(1e-12, "
            "(1 - x) * x)) * w * (1.0f / N)", _Arch35Order()),
    Variant("BceFloat64Inside", "float64 inside with the exact division by N, rounded to float32 and "
            "then to P and out", _Float64Inside()),
)
