"""Deliberately broken backends that fit any operator: each is `Float32Kernel` with exactly one
defect of a kind real kernels have, a one-line `description`, the kinds of check that must fail
(`fails`) and the cases where its defect shows (`where`, read off the operator's declarations:
`out_shape`, `b_shape`, `reductions`, `product_dtypes`, `primary`; never a name).
`tests/test_mutants.py` proves the suite fails every one of them, there and only there, together
with every registered operator's own mutants (its kit's `MUTANTS`, collected by
`tests/mutants/registry.py`).

Any mutant, generic or an operator's, runs as a backend: `--backend tests.mutants.gallery:<Name>`.
A description ending in "(issue 2)" marks the five defects issue 2 lists.
"""
from __future__ import annotations

import dataclasses

import itertools
from typing import Any, List, Optional, Set, Type

import numpy as np

from suite.common import dtypes
from suite import ops
from suite.cases.model import NUMBERS, Case
from suite.contract import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError
from suite.ops.base import MAX_RANK, Operator, Shape, Signature, numel, reduced_axes
from tests.mutants.kernel import Float32Kernel, SumKernel

NUM = frozenset({"numbers"})
REJ = frozenset({"rejection"})


# -- what a case declares, through its operator ----------------------------------------------------
def _op(c: Case) -> Operator:
    return ops.get(c.op)


def _live(c: Case) -> dict:
    return {n: s for n, s in dict(c.shapes).items() if s is not None}


def _dts(c: Case) -> Set[str]:
    return {d for n, d in dict(c.dtypes).items() if dict(c.shapes).get(n) is not None}


def _summed(c: Case) -> bool:
    """The operator sums its terms over axes of `b_shape` that `out_shape` lacks, in this case."""
    if c.expect != NUMBERS:
        return False
    op, shapes = _op(c), _live(c)
    b, out = op.b_shape(shapes), op.out_shape(shapes, dict(c.attrs))
    return b is not None and out is not None and tuple(b) != tuple(out)


# -- precision ------------------------------------------------------------------------------------
class Float32ViaFloat16(Float32Kernel):
    description = "float32 inputs are computed through float16"
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        return "float32" in _dts(c)

    def values(self, name, a, call):
        if a.dtype == np.float32:
            with np.errstate(over="ignore"):
                return a.astype(np.float16).astype(np.float32)
        return a


class Bfloat16ViaFloat16(Float32Kernel):
    description = "bfloat16 inputs are computed through float16 (range lost)"
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        """A bfloat16 input beyond float16's range or below its smallest normal (the case's data)."""
        def lost(a) -> bool:
            m = np.abs(a.astype(np.float32))
            return bool(np.any(np.isfinite(m) & ((m > 65504.0) | ((m > 0) & (m < 2.0 ** -14)))))
        return c.expect == NUMBERS and "bfloat16" in _dts(c) and any(
            a.dtype == dtypes.bfloat16 and lost(a) for a in _data(c).inputs.values() if a is not None)

    def values(self, name, a, call):
        if a.dtype == dtypes.bfloat16:        # exact back to bfloat16: only range is lost
            with np.errstate(over="ignore"):
                return a.astype(np.float32).astype(np.float16).astype(np.float32).astype(a.dtype)
        return a


class Bfloat16Truncated(Float32Kernel):
    description = "float32 -> bfloat16 output truncated (low 16 bits dropped), not rounded (issue 2)"
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        return c.out_dtype == "bfloat16"

    def round_out(self, r32, call):
        if np.dtype(call.out_dtype) != dtypes.bfloat16:
            return super().round_out(r32, call)
        bits = np.asarray(r32, dtype=np.float32, order="C").view(np.uint32)   # keeps 0-d
        high = np.asarray(bits >> np.uint32(16), dtype=np.uint16).reshape(bits.shape)
        return high.view(dtypes.bfloat16)


# -- the contract ---------------------------------------------------------------------------------
def _widest(op: Operator) -> str:
    """The product that takes the most dtypes (the first such, in the declaration's order)."""
    return max(op.product_dtypes, key=lambda p: len(op.product_dtypes[p]))


class NoProductDtypeCheck(Float32Kernel):
    description = ("dtypes not checked against the product: validated as on the product taking the "
                   "most, so bfloat16 is accepted on atlas-training (issue 2)")
    fails = REJ

    @staticmethod
    def where(c: Case) -> bool:
        op = _op(c)
        used = _dts(c) | ({c.out_dtype} if c.out_dtype else set())
        return c.expect != NUMBERS and not used <= op.product_dtypes[c.product]

    def signature(self, call):
        sig = Signature.of_call(call)
        return dataclasses.replace(sig, product=_widest(self.op(call)))


class WrongStatusNullptr(Float32Kernel):
    description = "invalid parameters return 161001 (NULLPTR) instead of 161002 (PARAM_INVALID)"
    fails = REJ

    @staticmethod
    def where(c: Case) -> bool:
        return c.expect == ACLNN_ERR_PARAM_INVALID

    def validate(self, call):
        status, why = self.op(call).check(self.signature(call))
        if status == ACLNN_ERR_PARAM_INVALID:
            status = ACLNN_ERR_PARAM_NULLPTR
        if status:
            raise AclnnError(status, why)


class Rank9Accepted(Float32Kernel):
    description = "rank checked after dropping leading size-1 dimensions: rank 9 accepted"
    fails = REJ

    @staticmethod
    def where(c: Case) -> bool:
        return any(s is not None and len(s) > MAX_RANK for s in [*dict(c.shapes).values(), c.out_shape])

    @staticmethod
    def _squeeze(shape: Optional[Shape]) -> Optional[Shape]:
        shape = None if shape is None else tuple(shape)
        while shape is not None and len(shape) > MAX_RANK and shape[0] == 1:
            shape = shape[1:]
        return shape

    def signature(self, call):
        sig = Signature.of_call(call)
        shapes = {k: self._squeeze(v) for k, v in sig.shapes.items()}
        outputs = None if sig.outputs is None else {n: (self._squeeze(o), d) for n, (o, d) in sig.outputs.items()}
        return dataclasses.replace(sig, shapes=shapes, out_shape=self._squeeze(sig.out_shape), outputs=outputs)


def _as_sum(op: Operator) -> Optional[int]:
    """The value of the operator's sum reduction (its largest value when none is named sum)."""
    return op.reductions.get("sum", max(op.reductions.values(), default=None))


class ReductionOutsideAccepted(Float32Kernel):
    description = "a reduction outside the operator's reductions accepted (validated as sum)"
    fails = REJ

    @staticmethod
    def where(c: Case) -> bool:
        red = dict(c.attrs).get("reduction")
        return c.expect != NUMBERS and bool(_op(c).reductions) and red not in _op(c).reductions.values()

    def signature(self, call):
        sig = Signature.of_call(call)
        op = self.op(call)
        if op.reductions and sig.attrs.get("reduction") not in op.reductions.values():
            sig = dataclasses.replace(sig, attrs={**sig.attrs, "reduction": _as_sum(op)})
        return sig


class MixedDtypesRejected(Float32Kernel):
    description = "mixed input dtypes rejected with 161002 (where the operator accepts them)"
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        return c.expect == NUMBERS and len(_dts(c)) > 1

    def validate(self, call):
        super().validate(call)
        names = {dtypes.name_of(a.dtype) for a in call.inputs.values() if a is not None}
        if len(names) > 1:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"mixed input dtypes {sorted(names)}")


class OutDtypeIgnored(Float32Kernel):
    description = "out dtype ignored: the result comes back in the primary input's dtype"
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        return c.out_dtype != dict(c.dtypes)[_op(c).primary]

    def round_out(self, r32, call):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(r32, dtype=np.float32).astype(call.inputs[self.op(call).primary].dtype)


class OutShapeNotChecked(Float32Kernel):
    description = "out shape not validated (any out shape accepted)"
    fails = REJ

    @staticmethod
    def where(c: Case) -> bool:
        return c.out_shape is not None and tuple(c.out_shape) != _op(c).out_shape(dict(c.shapes), dict(c.attrs))

    def signature(self, call):
        sig = Signature.of_call(call)
        if sig.out_shape is None or any(s is None for s in sig.shapes.values()):
            return sig
        want = self.op(call).out_shape(sig.shapes, sig.attrs)
        out = want if want is not None else sig.out_shape
        # (several outputs: the first is out, its entry follows; the others are checked as given)
        outputs = None if sig.outputs is None else {**sig.outputs, self.op(call).outputs[0]: (out, sig.out_dtype)}
        return dataclasses.replace(sig, out_shape=out, outputs=outputs)


# -- the sum over the axes out lacks (operators whose out_shape is smaller than b_shape) ----------
class BroadcastFirstSlice(SumKernel):
    description = "takes the first slice of the summed broadcast axes instead of summing them"
    fails = NUM
    where = staticmethod(_summed)

    def sum_back(self, terms, out_shape):
        axes = reduced_axes(tuple(out_shape), terms.shape)
        index = tuple(0 if i in axes else slice(None) for i in range(terms.ndim))
        return np.asarray(terms[index], dtype=np.float32).reshape(out_shape)


class BroadcastWrongAxes(SumKernel):
    description = "sums as if the summed broadcast axes were innermost (reshape to [numel(out), -1])"
    fails = NUM
    where = staticmethod(_summed)

    def sum_back(self, terms, out_shape):
        n = numel(tuple(out_shape))
        if n == 0:
            return np.zeros(out_shape, np.float32)
        flat = np.ascontiguousarray(terms).reshape(n, -1)
        return np.sum(flat, axis=1, dtype=np.float32).reshape(out_shape)


# -- memory and layout ----------------------------------------------------------------------------
class StridesIgnored(Float32Kernel):
    description = ("strides ignored: reads numel elements of the base buffer from the view's lowest "
                   "address (issue 2)")
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        return c.layout != "contiguous"

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
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        return c.expect == NUMBERS and numel(c.out_shape) > 0

    def finish(self, out, call):
        out = np.array(out, copy=True)
        if out.size:
            out.reshape(-1)[-1] = np.nan
        return out


# -- special values -------------------------------------------------------------------------------
def _data(c: Case):
    from tests.mutants import harness       # (harness imports this module's neighbours)
    return harness.store().load(c)


def _golden_any(c: Case, test) -> bool:
    """Whether `test` holds for some element of the case's golden (read block by block)."""
    return any(bool(np.any(test(g))) for _, g, _, _ in _data(c).golden.blocks())

def _vendor_nan(c: Case) -> bool:
    """Whether the vendor's arithmetic along the operator's rounding path gives a NaN where the
    golden has none: a sum of terms past the range of the 16-bit dtype they are rounded to first
    (+inf and -inf terms), which only an operator with a narrower `term_dtype` can give."""
    op = ops.get(c.op)
    live = {n: d for n, d in c.dtypes.items() if c.shapes.get(n) is not None}
    if op.term_dtype(live) == "float32":
        return False
    data = _data(c)
    from suite.run.runner import build_call
    return bool(np.isnan(op.reference(build_call(c, data.inputs)).astype(np.float32)).any())


class NanToZero(Float32Kernel):
    description = "NaN results are written as 0"
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        """A NaN in the golden (the case's data), or in what the vendor's arithmetic gives."""
        return c.expect == NUMBERS and (_golden_any(c, np.isnan) or _vendor_nan(c))

    def finish(self, out, call):
        o32 = out.astype(np.float32)
        return np.where(np.isnan(o32), np.float32(0.0), o32).astype(out.dtype)


class OverflowSaturates(Float32Kernel):
    description = "overflow saturates to the largest finite value instead of infinity"
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        """A golden that is infinite or past the range of out's dtype (or of the dtype the operator
        rounds its result to first) in the case's data."""
        if c.expect != NUMBERS:
            return False
        from suite.run.paths import result_dtype
        out = dtypes.dtype_of(c.out_dtype)
        big = min(dtypes.finfo(out).max, dtypes.finfo(result_dtype(c, out)).max)
        return _golden_any(c, lambda g: np.isinf(g) | (np.abs(g) > big))

    def finish(self, out, call):
        big = dtypes.finfo(out.dtype).max
        o32 = out.astype(np.float32)
        sat = np.where(np.isinf(o32), np.sign(o32) * np.float32(big), o32)
        return sat.astype(out.dtype)


# -- edge shapes ----------------------------------------------------------------------------------
class EmptyCrashes(Float32Kernel):
    description = "empty tensors crash the tiling (division by a zero block count)"
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        return any(numel(s) == 0 for s in _live(c).values())

    def run(self, call):
        self.validate(call)
        smallest = min(numel(a.shape) for a in call.inputs.values() if a is not None)
        self.per_block = numel(call.out_shape) // smallest    # ZeroDivisionError: an input is empty
        return super().run(call)


class ZeroDimAsOneDim(Float32Kernel):
    description = "a 0-d result is returned with shape (1,)"
    fails = NUM

    @staticmethod
    def where(c: Case) -> bool:
        return c.out_shape is not None and tuple(c.out_shape) == ()

    def finish(self, out, call):
        return out.reshape(1) if out.ndim == 0 else out


# -- nondeterminism -------------------------------------------------------------------------------
class OneUlpWobble(Float32Kernel):
    description = "nondeterministic: a few elements move one ulp, differently on every call"
    fails = frozenset({"determinism"})

    @staticmethod
    def where(c: Case) -> bool:
        return c.expect == NUMBERS

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


GENERIC: List[Type[Float32Kernel]] = [
    Float32ViaFloat16, Bfloat16ViaFloat16, Bfloat16Truncated,
    NoProductDtypeCheck, WrongStatusNullptr, Rank9Accepted, ReductionOutsideAccepted,
    MixedDtypesRejected, OutDtypeIgnored, OutShapeNotChecked,
    BroadcastFirstSlice, BroadcastWrongAxes,
    StridesIgnored, LastElementUnwritten,
    NanToZero, OverflowSaturates,
    EmptyCrashes, ZeroDimAsOneDim,
    OneUlpWobble,
]


def __getattr__(name: str) -> Any:
    """Every registered operator's mutants and variants, by name (for `--backend
    tests.mutants.gallery:<Name>`): the registry builds them from the declarations."""
    if name.startswith("__"):
        raise AttributeError(name)
    from tests.mutants import registry
    try:
        return registry.by_name(name)
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
