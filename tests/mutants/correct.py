"""Correct kernels that differ from the reference in ways the contract allows: float32 with
numpy's pairwise sums (the control, Float32Kernel), float64 rounded once, float32 in another
operation order, float32 sequential sums, and a 48-core split combined in order. The suite must
pass all of them on every case of the default run: a failure is a false alarm of the tolerance
model.
"""
from __future__ import annotations

from typing import List, Type

import numpy as np

from suite import dtypes
from suite.contract import OpCall
from suite.ops.base import Shape, broadcast, numel, reduced_axes
from tests.mutants.kernel import Float32Kernel


class Float64RoundedOnce(Float32Kernel):
    """Computes in float64 and rounds once, correctly, to the out dtype (`dtypes.round_to`:
    ml_dtypes' float64 -> bfloat16 double-rounds)."""

    name = "float64-rounded-once"
    description = "float64 inside, one correct rounding to the out dtype"

    def widen(self, a):
        return a.astype(np.float64)

    def mse_cof(self, reduction, self_shape, b_shape):
        n = numel(self_shape)
        return 2.0 / n if reduction == 1 and n else 2.0

    def kl_scale(self, reduction, self_shape, b):
        n = numel(b)
        if reduction == 1 and n:
            return 1.0 / n
        if reduction == 3 and n:
            return 1.0 / b[0]
        return None

    def kl(self, call, g, s, t):
        b = broadcast(s.shape, t.shape)
        with np.errstate(all="ignore"):
            terms = np.broadcast_to(self.kl_terms(self.kl_base(t, call.attrs["logTarget"]), g), b)
            scale = self.kl_scale(call.attrs["reduction"], s.shape, b)
            if scale is not None:
                terms = terms / (1.0 / scale)       # the exact divisor: numel(B) or B[0]
            axes = reduced_axes(s.shape, b)
            return np.sum(terms, axis=axes, dtype=np.float64).reshape(s.shape)

    def round_out(self, r, call):
        return dtypes.round_to(np.asarray(r, dtype=np.float64), call.out_dtype)


class Float32OtherOrder(Float32Kernel):
    """float32 throughout, operations in another order: MSE ((grad*2)*(self-target))/N with a
    float32 division; KL ((-grad)*cof)*target."""

    name = "float32-other-order"
    description = "float32, MSE (grad*2)*(self-target)/N, KL (-grad*cof)*target"

    def mse(self, call, g, s, t):
        n = numel(s.shape)
        with np.errstate(all="ignore"):
            r = (g * np.float32(2.0)) * (s - t)
            if call.attrs["reduction"] == 1 and n:
                r = r / np.float32(n)
        return np.broadcast_to(np.asarray(r, dtype=np.float32), call.out_shape)

    def kl(self, call, g, s, t):
        b = broadcast(s.shape, t.shape)
        scale = self.kl_scale(call.attrs["reduction"], s.shape, b)
        with np.errstate(all="ignore"):
            gc = -g if scale is None else (-g) * scale
            terms = np.broadcast_to(gc * self.kl_base(t, call.attrs["logTarget"]), b)
            return self.kl_sum_back(np.asarray(terms, dtype=np.float32), s.shape)


def _terms_first(terms: np.ndarray, self_shape: Shape) -> np.ndarray:
    """The terms as (number of terms per output, outputs...): each output's terms in memory order."""
    axes = reduced_axes(self_shape, terms.shape)
    kept = [i for i in range(terms.ndim) if i not in axes]
    moved = np.transpose(terms, list(axes) + kept)
    nterms = numel(tuple(terms.shape[i] for i in axes))
    return moved.reshape((nterms,) + tuple(terms.shape[i] for i in kept))


class Float32SequentialSum(Float32Kernel):
    """float32, the broadcast sum accumulated one term at a time (no pairwise summation):
    numpy's accumulate adds in order, each step rounded to float32."""

    name = "float32-sequential-sum"
    description = "float32, KL broadcast sum accumulated one term at a time"

    def kl_sum_back(self, terms: np.ndarray, self_shape: Shape) -> np.ndarray:
        seq = _terms_first(terms, self_shape)
        if seq.shape[0] == 0:
            return np.zeros(self_shape, dtype=np.float32)
        with np.errstate(all="ignore"):
            return np.cumsum(seq, axis=0, dtype=np.float32)[-1].reshape(self_shape)


class Float32CoresInOrder(Float32Kernel):
    """float32, each output's terms split over 48 cores, each core sums its share sequentially,
    and the partial sums are combined in core order (a deterministic multi-core reduction)."""

    name = "float32-cores-in-order"
    description = "float32, KL sum split over 48 cores (sequential each), combined in core order"

    def kl_sum_back(self, terms: np.ndarray, self_shape: Shape) -> np.ndarray:
        seq = _terms_first(terms, self_shape)
        n = seq.shape[0]
        acc = np.zeros(seq.shape[1:], dtype=np.float32)
        bounds = np.linspace(0, n, 49).astype(int)
        with np.errstate(all="ignore"):
            for a, b in zip(bounds[:-1], bounds[1:]):
                if b > a:
                    acc = acc + np.cumsum(seq[a:b], axis=0, dtype=np.float32)[-1]
        return acc.reshape(self_shape)


CORRECT: List[Type[Float32Kernel]] = [Float32Kernel, Float64RoundedOnce, Float32OtherOrder,
                                      Float32SequentialSum, Float32CoresInOrder]
