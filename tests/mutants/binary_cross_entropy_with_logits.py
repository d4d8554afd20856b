"""aclnnBinaryCrossEntropyWithLogits's test kit (tests/mutants/kit.py): the loss family's mutants
through `FAMILY`; its own defects, posWeight ignored, the weight ignored, posWeight on the negative
term and the naive log(sigmoid(x)); its variants MseLoss's kit's mixins over the operator."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from suite.ops.base import ftz, numel
from suite.ops.binary_cross_entropy_with_logits import BinaryCrossEntropyWithLogits as Op
from tests.mutants import mse_loss as M
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


def _numeric(c) -> bool:
    return c.expect == 0 and numel(c.shapes["self"]) > 0


def _with(name):
    return lambda c: _numeric(c) and c.shapes.get(name) is not None


class _NoPosWeight(Op):
    """posWeight read as ones."""

    def reference_loss(self, x, attrs):
        return super().reference_loss({n: a for n, a in x.items() if n != "posWeight"}, attrs)


class _NoWeight(Op):
    """the weight read as ones."""

    def reference_loss(self, x, attrs):
        return super().reference_loss({n: a for n, a in x.items() if n != "weight"}, attrs)


class _PosWeightOnNegative(Op):
    """posWeight scales the (1 - t) term instead of the t one."""

    def reference_loss(self, x, attrs):
        if "posWeight" not in x:
            return super().reference_loss(x, attrs)
        y = {**x, "target": ftz(np.float32(1) - x["target"]), "self": ftz(-x["self"])}
        return super().reference_loss(y, attrs)


class _NaiveLogSigmoid(Op):
    """log(1 / (1 + exp(-x))) for log sigmoid(x): -inf and NaN once exp(-x) overflows (x < -88.7)."""

    def reference_loss(self, x, attrs):
        one, s, t = np.float32(1), x["self"], x["target"]
        with np.errstate(all="ignore"):
            ls = ftz(np.log(ftz(one / ftz(one + ftz(np.exp(-s))))))
            if "posWeight" in x:
                ls = ftz(ls * ftz(ftz(ftz(x["posWeight"] - one) * t) + one))
            r = ftz(ftz(ftz(one - t) * s) - ls)
            return ftz(r * x["weight"]) if "weight" in x else r


def _flat(call, order):
    """The inputs broadcast to self's shape, flat, in `order` (NULL weights stay NULL)."""
    b = call.inputs["self"].shape
    return {n: None if a is None else np.ascontiguousarray(np.broadcast_to(a, b).reshape(-1)[order])
            for n, a in call.inputs.items()}


class _ScaleOnceAfterTheSum(Op):
    """The sum in float32, then one multiply by 1/N."""

    def _reference(self, call, block):
        n = numel(call.inputs["self"].shape)
        if call.attrs["reduction"] != 1 or not n:
            return super()._reference(call, block)
        wide = {k: None if a is None else a.astype(np.float32) for k, a in _flat(call, slice(None)).items()}
        total = super()._reference(M._with(call, inputs=wide, reduction=2, out_dtype=np.dtype(np.float32)), block)
        r = ftz(np.float32(total.reshape(())) * np.float32(1.0 / n))
        live = M._with(call, inputs={k: a for k, a in call.inputs.items() if a is not None})
        return M._round(self, live, np.asarray(r, dtype=np.float32))


class _SumInReverse(Op):
    """The terms summed in the opposite memory order."""

    def _reference(self, call, block):
        if call.attrs["reduction"] == 0 or not numel(call.inputs["self"].shape):
            return super()._reference(call, block)
        return super()._reference(M._with(call, inputs=_flat(call, slice(None, None, -1))), block).reshape(call.out_shape)


MUTANTS: Tuple[Mutant, ...] = (
    Mutant("BcelNoPosWeight", "BinaryCrossEntropyWithLogits ignores posWeight", _NoPosWeight(), _with("posWeight")),
    Mutant("BcelNoWeight", "BinaryCrossEntropyWithLogits ignores the weight", _NoWeight(), _with("weight")),
    Mutant("BcelPosWeightOnNegative", "BinaryCrossEntropyWithLogits scales the (1 - t) term by posWeight",
           _PosWeightOnNegative(), _with("posWeight")),
    Mutant("BcelNaiveLogSigmoid", "BinaryCrossEntropyWithLogits computes log(1 / (1 + exp(-x)))",
           _NaiveLogSigmoid(), _numeric),
)

# The loss family's mutants (tests/mutants/family.py): BcelSumAsMean, BcelMeanAsSum, ...
FAMILY = Member(prefix="Bcel", mean_over="B", dropped=("weight", "posWeight"),
                opt_out={"MeanDivisor": "B is self's shape (target has it, the weights broadcast to it): no other count",
                         "AccumulateInPrecision": "the l0 op's result is FLOAT for every P: no 16-bit terms"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("BcelScaleOnceAfterTheSum", "float32, BinaryCrossEntropyWithLogits mean as the sum times 1/N once",
            _ScaleOnceAfterTheSum()),
    Variant("BcelSumInReverse", "float32, BinaryCrossEntropyWithLogits sum and mean over the terms in reverse order",
            _SumInReverse()),
)
