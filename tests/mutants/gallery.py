"""Deliberately broken backends: each is `Float32Kernel` with exactly one defect of a kind real
kernels have, and a one-line `description`. `tests/test_mutants.py` proves the suite fails every
one of them. Any of them can be run as a backend: `--backend tests.mutants.gallery:<Name>`.

`ISSUE2` names the five defects issue 2 lists (wrong mean divisor, masked negative targets,
unchecked product dtypes, ignored strides, bfloat16 truncation).
"""
from __future__ import annotations

import itertools
from typing import Dict, List, Optional, Type

import numpy as np

from suite import dtypes, ops
from suite.contract import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError, OpCall
from suite.ops.base import MAX_RANK, Shape, Signature, numel, reduced_axes
from tests.mutants.kernel import Float32Kernel


# -- arithmetic -----------------------------------------------------------------------------------
class MseMissingFactor2(Float32Kernel):
    description = "MSE: the factor 2 of d/dx (x-y)^2 is missing"

    def mse_cof(self, reduction, self_shape, b_shape):
        n = numel(self_shape)
        return np.float32(1.0) / np.float32(n) if reduction == 1 and n else np.float32(1.0)


class MseSignFlip(Float32Kernel):
    description = "MSE: computes target - self instead of self - target"

    def mse_diff(self, s, t):
        return t - s


class MseMeanDivisorNumelB(Float32Kernel):
    description = "MSE mean divides by numel(broadcast shape) instead of numel(self)"

    def mse_cof(self, reduction, self_shape, b_shape):
        n = numel(b_shape)
        return np.float32(2.0) / np.float32(n) if reduction == 1 and n else np.float32(2.0)


class MseSumAsMean(Float32Kernel):
    description = "MSE: reduction sum treated as mean (divides by numel(self))"

    def mse_cof(self, reduction, self_shape, b_shape):
        n = numel(self_shape)
        return np.float32(2.0) / np.float32(n) if reduction in (1, 2) and n else np.float32(2.0)


class KlSignFlip(Float32Kernel):
    description = "KL: the gradient is +target*grad instead of -target*grad"

    def kl_terms(self, base, g):
        return base * g


class KlMeanDivisorNumelSelf(Float32Kernel):
    description = "KL mean divides by numel(self) instead of numel(broadcast shape)"

    def kl_scale(self, reduction, self_shape, b):
        if reduction == 1 and numel(self_shape):
            return np.float32(1.0 / numel(self_shape))
        return super().kl_scale(reduction, self_shape, b)


class KlBatchmeanSelfDim0(Float32Kernel):
    description = "KL batchmean divides by self.shape[0] (PyTorch's) instead of B[0]"

    def kl_scale(self, reduction, self_shape, b):
        if reduction == 3 and numel(b):
            return np.float32(1.0 / (self_shape or (1,))[0])
        return super().kl_scale(reduction, self_shape, b)


class KlMaskNonPositiveTargets(Float32Kernel):
    description = "KL masks target <= 0 to a zero gradient (old PyTorch/vendor kernel)"

    def kl_base(self, t, log_target):
        return np.exp(t) if log_target else np.where(t > 0, t, np.float32(0.0))


class KlLogTargetIgnored(Float32Kernel):
    description = "KL: logTarget ignored (uses target where exp(target) is due)"

    def kl_base(self, t, log_target):
        return t


# -- the broadcast sum back to self's shape ------------------------------------------------------
class KlBroadcastFirstSlice(Float32Kernel):
    description = "KL: takes the first slice of the broadcast axes instead of summing them"

    def kl_sum_back(self, terms, self_shape):
        axes = reduced_axes(self_shape, terms.shape)
        index = tuple(0 if i in axes else slice(None) for i in range(terms.ndim))
        return np.asarray(terms[index], dtype=np.float32).reshape(self_shape)


class KlBroadcastWrongAxes(Float32Kernel):
    description = "KL: sums as if the broadcast axes were innermost (reshape to [numel(self), -1])"

    def kl_sum_back(self, terms, self_shape):
        n = numel(self_shape)
        if n == 0:
            return np.zeros(self_shape, np.float32)
        flat = np.ascontiguousarray(terms).reshape(n, -1)
        return np.sum(flat, axis=1, dtype=np.float32).reshape(self_shape)


# -- precision ------------------------------------------------------------------------------------
class Float32ViaFloat16(Float32Kernel):
    description = "float32 inputs are computed through float16"

    def widen(self, a):
        if a.dtype == np.float32:
            with np.errstate(over="ignore"):
                return a.astype(np.float16).astype(np.float32)
        return a.astype(np.float32)


class Bfloat16ViaFloat16(Float32Kernel):
    description = "bfloat16 inputs are computed through float16 (range lost)"

    def widen(self, a):
        if a.dtype == dtypes.bfloat16:
            with np.errstate(over="ignore"):
                return a.astype(np.float32).astype(np.float16).astype(np.float32)
        return a.astype(np.float32)


class Bfloat16Truncated(Float32Kernel):
    description = "float32 -> bfloat16 output truncated (low 16 bits dropped), not rounded"

    def round_out(self, r32, call):
        if np.dtype(call.out_dtype) != dtypes.bfloat16:
            return super().round_out(r32, call)
        bits = np.asarray(r32, dtype=np.float32, order="C").view(np.uint32)   # keeps 0-d
        high = np.asarray(bits >> np.uint32(16), dtype=np.uint16).reshape(bits.shape)
        return high.view(dtypes.bfloat16)


# -- the contract ---------------------------------------------------------------------------------
class NoProductDtypeCheck(Float32Kernel):
    description = "dtypes not checked against the product: bfloat16 accepted on atlas-training"

    def signature(self, call):
        sig = Signature.of_call(call)
        return Signature(sig.shapes, sig.dtypes, sig.out_shape, sig.out_dtype, sig.attrs, "atlas-a2")


class WrongStatusNullptr(Float32Kernel):
    description = "invalid parameters return 161001 (NULLPTR) instead of 161002 (PARAM_INVALID)"

    def validate(self, call):
        status, why = ops.get(call.op).check(self.signature(call))
        if status == ACLNN_ERR_PARAM_INVALID:
            status = ACLNN_ERR_PARAM_NULLPTR
        if status:
            raise AclnnError(status, why)


class Rank9Accepted(Float32Kernel):
    description = "rank checked after dropping leading size-1 dimensions: rank 9 accepted"

    @staticmethod
    def _squeeze(shape: Optional[Shape]) -> Optional[Shape]:
        shape = None if shape is None else tuple(shape)
        while shape is not None and len(shape) > MAX_RANK and shape[0] == 1:
            shape = shape[1:]
        return shape

    def signature(self, call):
        sig = Signature.of_call(call)
        shapes = {k: self._squeeze(v) for k, v in sig.shapes.items()}
        return Signature(shapes, sig.dtypes, self._squeeze(sig.out_shape), sig.out_dtype, sig.attrs,
                         sig.product)


class MseReduction3Accepted(Float32Kernel):
    description = "MSE: reduction 3 accepted (validated as sum)"

    def signature(self, call):
        sig = Signature.of_call(call)
        if call.op == "MseLossBackward" and sig.attrs.get("reduction") == 3:
            sig = Signature(sig.shapes, sig.dtypes, sig.out_shape, sig.out_dtype,
                            {**sig.attrs, "reduction": 2}, sig.product)
        return sig


class KlMixedDtypesRejected(Float32Kernel):
    description = "KL: mixed input dtypes rejected with 161002 (the contract accepts them)"

    def validate(self, call):
        super().validate(call)
        if call.op == "KlDivBackward":
            names = {dtypes.name_of(a.dtype) for a in call.inputs.values() if a is not None}
            if len(names) > 1:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"mixed input dtypes {sorted(names)}")


class OutDtypeIgnored(Float32Kernel):
    description = "out dtype ignored: the result comes back in self's dtype"

    def round_out(self, r32, call):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(r32, dtype=np.float32).astype(call.inputs["self"].dtype)


class OutShapeNotChecked(Float32Kernel):
    description = "out shape not validated (any out shape accepted)"

    def signature(self, call):
        sig = Signature.of_call(call)
        if sig.out_shape is None or any(s is None for s in sig.shapes.values()):
            return sig
        want = ops.get(call.op).out_shape(sig.shapes)
        return Signature(sig.shapes, sig.dtypes, want if want is not None else sig.out_shape,
                         sig.out_dtype, sig.attrs, sig.product)


# -- memory and layout ----------------------------------------------------------------------------
class StridesIgnored(Float32Kernel):
    description = "strides ignored: reads numel elements of the base buffer from the view's lowest address"

    def load(self, a):
        a = np.asarray(a)
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        if root is a or a.size == 0:
            return a
        flat = np.asarray(root).reshape(-1) if root.flags.c_contiguous else np.ravel(root, order="K")
        low = a.__array_interface__["data"][0] + sum(
            st * (n - 1) for st, n in zip(a.strides, a.shape) if st < 0)
        offset = (low - root.__array_interface__["data"][0]) // a.itemsize
        return flat[offset:offset + a.size].reshape(a.shape)


class LastElementUnwritten(Float32Kernel):
    description = "the last output element is never written (left NaN, as the device memory was)"

    def finish(self, out, call):
        out = np.array(out, copy=True)
        if out.size:
            out.reshape(-1)[-1] = np.nan
        return out


# -- special values -------------------------------------------------------------------------------
class NanToZero(Float32Kernel):
    description = "NaN results are written as 0"

    def finish(self, out, call):
        o32 = out.astype(np.float32)
        return np.where(np.isnan(o32), np.float32(0.0), o32).astype(out.dtype)


class OverflowSaturates(Float32Kernel):
    description = "overflow saturates to the largest finite value instead of infinity"

    def finish(self, out, call):
        big = dtypes.finfo(out.dtype).max
        o32 = out.astype(np.float32)
        sat = np.where(np.isinf(o32), np.sign(o32) * np.float32(big), o32)
        return sat.astype(out.dtype)


# -- edge shapes ----------------------------------------------------------------------------------
class EmptyCrashes(Float32Kernel):
    description = "empty tensors crash the tiling (division by a zero block count)"

    def run(self, call):
        self.validate(call)
        smallest = min(numel(a.shape) for a in call.inputs.values())
        self.per_block = numel(call.out_shape) // smallest    # ZeroDivisionError: an input is empty
        return super().run(call)


class ZeroDimAsOneDim(Float32Kernel):
    description = "a 0-d result is returned with shape (1,)"

    def finish(self, out, call):
        return out.reshape(1) if out.ndim == 0 else out


# -- nondeterminism -------------------------------------------------------------------------------
class OneUlpWobble(Float32Kernel):
    description = "nondeterministic: a few elements move one ulp, differently on every call"

    def __init__(self) -> None:
        self._calls = itertools.count()

    def finish(self, out, call):
        k = next(self._calls)              # a race stands in for a counter: every call differs
        out = np.array(out, copy=True)
        bits = dtypes.to_bits(out).reshape(-1)
        finite = np.isfinite(out.astype(np.float32)).reshape(-1)
        if bits.size and k % 2:
            for j in {(k * 7919 + i) % bits.size for i in (0, 1, 2)}:
                if finite[j]:
                    bits[j] ^= 1            # the last significand bit: one ulp
        return out


MUTANTS: List[Type[Float32Kernel]] = [
    MseMissingFactor2, MseSignFlip, MseMeanDivisorNumelB, MseSumAsMean, KlSignFlip,
    KlMeanDivisorNumelSelf, KlBatchmeanSelfDim0, KlMaskNonPositiveTargets, KlLogTargetIgnored,
    KlBroadcastFirstSlice, KlBroadcastWrongAxes,
    Float32ViaFloat16, Bfloat16ViaFloat16, Bfloat16Truncated,
    NoProductDtypeCheck, WrongStatusNullptr, Rank9Accepted, MseReduction3Accepted,
    KlMixedDtypesRejected, OutDtypeIgnored, OutShapeNotChecked,
    StridesIgnored, LastElementUnwritten,
    NanToZero, OverflowSaturates,
    EmptyCrashes, ZeroDimAsOneDim,
    OneUlpWobble,
]
ISSUE2: List[Type[Float32Kernel]] = [MseMeanDivisorNumelB, KlMaskNonPositiveTargets,
                                     NoProductDtypeCheck, StridesIgnored, Bfloat16Truncated]
BY_NAME: Dict[str, Type[Float32Kernel]] = {m.__name__: m for m in MUTANTS}
