"""aclnnL1LossBackward: out = gradOutput * sign(self - target) [/ numel(B) for mean] on
B = broadcast(self, gradOutput, target), the sign taken by comparison (sign(0) = 0)
(docs/operators/L1LossBackward.md)."""
from __future__ import annotations

import functools
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

import numpy as np

from suite.common import dtypes
from suite.values import sets as V
from suite.contract import ACLNN_ERR_PARAM_INVALID
from suite.values.draw import Binades, Dist, Sprinkle, Uniform
from suite.ops.base import (table, LOSS_DTYPES, MAX_RANK, Example, Mutant, Operator, Rejection, Shape, Signature, Variant,
                            broadcast, element_inputs, ftz, numel)

NAME = "L1LossBackward"
FLOATS = ("float32", "float16", "bfloat16")
# The float32 smallest normal: a subtract-then-sign kernel with flush-to-zero loses differences below it.
F32_TINY = 2.0 ** -126


def promote(names: Iterable[Optional[str]]) -> Optional[str]:
    """opbase's PromoteType folded over the inputs' dtypes, for the suite's three floating dtypes
    ([opbase] data_type_utils.h, kPromoteTypesLookup): equal dtypes stay, FLOAT16 with BFLOAT16 and
    either with FLOAT give FLOAT. None when a dtype is outside those three (not modelled)."""
    names = [n for n in names if n is not None]
    if not names or any(n not in FLOATS for n in names):
        return None
    return names[0] if len(set(names)) == 1 else "float32"


def _range(name: str) -> Tuple[float, float, float]:
    """(largest finite, smallest normal, smallest subnormal) of a dtype."""
    fi = dtypes.finfo(dtypes.dtype_of(name))
    return fi.max, fi.tiny, fi.smallest_subnormal


def _next(x: float, name: str, up: bool) -> float:
    """The neighbour of x (representable in dtype `name`) above it (`up`) or below it."""
    if x == 0:
        sub = _range(name)[2]
        return sub if up else -sub
    a = np.asarray(dtypes.round_to(np.float64(x), dtypes.dtype_of(name))).reshape(1)
    bits = dtypes.to_bits(a).copy()
    one = bits.dtype.type(1)
    bits = bits + one if (x > 0) == up else bits - one          # magnitude up or down
    return float(dtypes.from_bits(bits, name).astype(np.float64)[0])


def _coarsest(names: Iterable[str]) -> str:
    """The dtype with the fewest significand bits (its neighbours are representable in the others
    near 1; bfloat16 before float16)."""
    order = {"bfloat16": 0, "float16": 1, "float32": 2}
    return min(names, key=lambda n: order[n])


# -- value sets --------------------------------------------------------------------------------
def _uniform(sig: Signature) -> Dict[str, Dist]:
    return V.uniform_set(sig)


def _specials(sig: Signature) -> Dict[str, Dist]:
    """NaN, +-inf and +-0 in gradOutput; +-inf and +-0 (no NaN) in self and target, so that equal
    infinities and +0 against -0 give sign 0. NaN in self or target is kernel-dependent (the TBE
    kernel gives sign -1, the 950 kernel 0) and outside the contract: never drawn."""
    d = V.uniform_set(sig)
    d["gradOutput"] = Sprinkle(d["gradOutput"], V.SPECIALS, 0.2)
    for n in ("self", "target"):
        d[n] = Sprinkle(d[n], (np.inf, -np.inf, -0.0, 0.0), 0.2)
    return d


def _large(sig: Signature) -> Dict[str, Dist]:
    """self and target near their dtype's largest value, a fifth of them exactly +-max (float16
    65504 against -65504: the difference overflows float16 while the sign is +1). gradOutput
    reaches 1e30, past float16's range where out is float16 (infinity is due there), except where
    it is float16 itself, or where a bfloat16 result is cast to a float16 out (judged in bfloat16,
    suite.runner.judged_dtype, which cannot see that second rounding overflow): there below 3e4."""
    d: Dict[str, Dist] = {}
    for n in ("self", "target"):
        mx = _range(sig.dtypes[n])[0]
        lo = 1e3 if sig.dtypes[n] == "float16" else 1e30
        d[n] = Sprinkle(Binades(lo, mx), (mx, -mx), 0.2)
    p = promote(sig.dtypes.values())
    narrow = sig.dtypes["gradOutput"] == "float16" or (p == "bfloat16" and sig.out_dtype == "float16")
    d["gradOutput"] = Binades(1.0, 3e4) if narrow else Binades(1.0, 1e30)
    return d


def _tiny(sig: Signature) -> Dict[str, Dist]:
    """gradOutput around out's smallest normal (results straddle its subnormal range); self and
    target in their dtypes' subnormal and smallest normal range, so their differences are
    subnormal in float32 (a flush-to-zero subtraction gives 0 there, the comparison does not)."""
    out_tiny = _range(sig.out_dtype)[1]
    g_sub = _range(sig.dtypes["gradOutput"])[2]
    a = max(out_tiny, 64.0 * g_sub)
    d: Dict[str, Dist] = {"gradOutput": Binades(a / 64.0, 4.0 * a)}
    if promote(sig.dtypes.values()) == "bfloat16" and sig.out_dtype == "float16":
        # A BFLOAT16 result cast to a FLOAT16 out is judged in BFLOAT16 (suite.runner.judged_dtype),
        # which cannot see the second rounding into FLOAT16's subnormals: keep these results normal.
        b = broadcast(*sig.shapes.values())
        n = numel(b) if sig.attrs.get("reduction") == 1 and b is not None else 1
        d["gradOutput"] = Binades(out_tiny * max(n, 1), 64.0 * out_tiny * max(n, 1))
    for n in ("self", "target"):
        _, tiny, sub = _range(sig.dtypes[n])
        d[n] = Binades(sub, 4.0 * tiny)
    return d


def _ties(sig: Signature) -> Dict[str, Dist]:
    """self == target exactly, often: both drawn mostly from one small pool (+0, -0, 1, -2.5, +inf,
    -inf; exact in every dtype), so about a seventh of the elements tie (+0 against -0 and equal
    infinities included) and the rest have sign +-1. gradOutput is uniform with a tenth +-inf
    (0 * inf = NaN where the inputs tie)."""
    pool = (0.0, -0.0, 1.0, -2.5, np.inf, -np.inf)
    return {"gradOutput": Sprinkle(Uniform(-5.0, 5.0), (np.inf, -np.inf), 0.1),
            "self": Sprinkle(Uniform(-5.0, 5.0), pool, 0.8),
            "target": Sprinkle(Uniform(-5.0, 5.0), pool, 0.8)}


def _one_ulp(sig: Signature) -> Dict[str, Dist]:
    """self and target one ulp apart, either side, often: both drawn from one pool of values and
    their neighbours in the coarser of the two dtypes (0 and +-the smallest subnormal, 1, -3, the
    smallest normal): differences of one ulp of either sign, subnormal ones included, and ties."""
    coarse = _coarsest([sig.dtypes["self"], sig.dtypes["target"]])
    sub = max(_range(sig.dtypes["self"])[2], _range(sig.dtypes["target"])[2])
    tiny = max(_range(sig.dtypes["self"])[1], _range(sig.dtypes["target"])[1])
    pool = [0.0, sub, -sub]
    for x in (1.0, -3.0):
        pool += [x, _next(x, coarse, True), _next(x, coarse, False)]
    pool += [tiny, tiny + sub, tiny - sub]
    pool_t = tuple(pool)
    return {"gradOutput": Uniform(-5.0, 5.0),
            "self": Sprinkle(Uniform(-5.0, 5.0), pool_t, 0.9),
            "target": Sprinkle(Uniform(-5.0, 5.0), pool_t, 0.9)}


class L1LossBackward(Operator):
    name = NAME
    inputs = ("gradOutput", "self", "target")
    reductions = {"none": 0, "mean": 1, "sum": 2}
    c_params = (("gradOutput", "tensor", None), ("self", "tensor", None), ("target", "tensor", None),
                ("reduction", "int64", 1))
    # The list the *promoted* dtype P must be in ([ops-nn] aclnn_l1_loss_backward.cpp, CheckDtypeValid):
    # the loss family's table. Each input is not list-checked, nor is out.
    product_dtypes = LOSS_DTYPES
    value_sets = {"uniform": _uniform, "specials": _specials, "large": _large, "tiny": _tiny,
                  "ties": _ties, "one_ulp": _one_ulp}
    tiling_names = ("tile", "core_elems")

    def tiling(self, hw, dts) -> Dict[str, int]:
        """The only public L1LossGrad tiling for these chips: ops-nn's Ascend C port for 910B
        (experimental/loss/l1_loss_grad/op_host/l1_loss_grad_tiling.cpp @e5c3fa93, L1LossGradTilingFunc):
        the UB less 64 KiB, in 32-byte blocks, split into 12 block groups for FLOAT or 16 for
        FLOAT16/BFLOAT16; a tile is one group, in elements of the promoted dtype (all three inputs
        reach the kernel cast to it). Cores: ceil(N / 1024), at most the vector cores; whole
        blocks per core, the first (blocks mod cores) one block more (CalculateCoreBlockNums).
        The shipped kernel is the TBE one, auto-scheduled, whose numbers are not public: the same
        arithmetic is the best estimate of its boundaries on every product."""
        p = promote(dts.values()) or "float32"
        size = 4 if p == "float32" else 2
        groups = 12 if p == "float32" else 16
        blocks = (hw.ub_bytes - 64 * 1024) // hw.block_bytes
        return {"tile": blocks // groups * hw.block_bytes // size, "core_elems": 1024}

    # -- contract -----------------------------------------------------------------------------
    def out_shape(self, shapes: Mapping[str, Optional[Shape]]) -> Optional[Shape]:
        if any(shapes.get(n) is None for n in self.inputs):
            return None
        return self.b_shape(shapes)

    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        """broadcast(broadcast(self, gradOutput), target), as CheckShape forms it."""
        first = broadcast(shapes["self"], shapes["gradOutput"])
        return None if first is None else broadcast(first, shapes["target"])

    def check(self, sig: Signature) -> Rejection:
        """CheckParams of [ops-nn] aclnn_l1_loss_backward.cpp, in its order."""
        bad = self._nulls(sig)                                    # gradOutput, self, target, out
        if bad:
            return bad
        red = sig.attrs.get("reduction")
        if red not in (0, 1, 2):
            return ACLNN_ERR_PARAM_INVALID, f"reduction {red} is not 0, 1 or 2"
        ins = [sig.dtypes[n] for n in self.inputs]
        p = promote(ins)
        if p is None:
            return ACLNN_ERR_PARAM_INVALID, f"input dtypes {', '.join(map(str, ins))} cannot be promoted"
        if sig.out_dtype not in FLOATS and sig.out_dtype != "float64":
            return ACLNN_ERR_PARAM_INVALID, f"the promoted dtype {p} cannot be cast to out's {sig.out_dtype}"
        allowed = self.product_dtypes[sig.product]
        if p not in allowed:
            return (ACLNN_ERR_PARAM_INVALID, f"the promoted dtype {p} of gradOutput, self and target is not "
                                             f"supported on {sig.product} (supported: {', '.join(sorted(allowed))})")
        for n, s in (("self", sig.shapes["self"]), ("target", sig.shapes["target"]),
                     ("gradOutput", sig.shapes["gradOutput"]), ("out", sig.out_shape)):
            if len(s) > MAX_RANK:
                return ACLNN_ERR_PARAM_INVALID, f"{n} has {len(s)} dimensions (at most {MAX_RANK})"
        first = broadcast(sig.shapes["self"], sig.shapes["gradOutput"])
        if first is None:
            return (ACLNN_ERR_PARAM_INVALID,
                    f"self {sig.shapes['self']} and gradOutput {sig.shapes['gradOutput']} do not broadcast")
        b = broadcast(first, sig.shapes["target"])
        if b is None:
            return (ACLNN_ERR_PARAM_INVALID,
                    f"broadcast(self, gradOutput) {first} and target {sig.shapes['target']} do not broadcast")
        if tuple(sig.out_shape) != b:
            return ACLNN_ERR_PARAM_INVALID, f"out shape {tuple(sig.out_shape)} is not the broadcast shape {b}"
        return 0, ""

    def outside_contract(self, sig: Signature) -> Optional[str]:
        """A BFLOAT16 tensor on a product without BFLOAT16 passes phase 1 when the promoted dtype
        is FLOAT (a mixed input) or when it is out (out is never list-checked); whether the device
        can cast it is not established (the page's "Not established")."""
        if sig.product is None or "bfloat16" in self.product_dtypes[sig.product]:
            return None
        ins = [sig.dtypes.get(n) for n in self.inputs]
        p = promote(ins)
        if p is None or p not in self.product_dtypes[sig.product]:
            return None                                           # rejected anyway (row 7)
        if "bfloat16" in ins or sig.out_dtype == "bfloat16":
            return f"a BFLOAT16 tensor on {sig.product} with promoted dtype {p} is not established"
        return None

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """The kernel returns the promoted dtype P; a separate Cast makes out's (the page's Dtypes)."""
        return promote(dts.values()) or out_dtype

    # -- numbers ------------------------------------------------------------------------------
    def _n(self, shapes: Mapping[str, Shape]) -> int:
        """The mean's divisor: numel(B), the broadcast shape (the kernel's own input shape)."""
        return numel(self.b_shape(shapes))

    def terms(self, x, attrs, shapes) -> np.ndarray:
        s = (x["self"] > x["target"]).astype(np.float64) - (x["self"] < x["target"]).astype(np.float64)
        out = x["gradOutput"] * s
        n = self._n(shapes)
        return out / n if attrs["reduction"] == 1 and n else out          # the exact division

    # The vendor kernel's float32 computation, in override points a planted defect replaces.
    def _sign32(self, a: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Two comparisons: +1 where self > target, -1 where self < target, else 0 (TBE: vcmpsel
        "gt" 1/-1, then "ne" -> 0)."""
        return (a > t).astype(np.float32) - (a < t).astype(np.float32)

    def _cof(self, attrs, shapes) -> np.float32:
        """The TBE dynamic tiling's coefficient: 1.0f divided by each dimension of the kernel's
        input (B) in turn, in float32 ([canndev-2022] op_tiling/l1_loss_grad.cc); 1 unless mean."""
        c = np.float32(1.0)
        if attrs["reduction"] == 1:
            for d in self.b_shape(shapes):
                if d:
                    c = np.float32(c / np.float32(d))
        return c

    def reference_terms(self, x, attrs, shapes) -> np.ndarray:
        s = self._sign32(x["self"], x["target"])
        g = x["gradOutput"]
        cof = self._cof(attrs, shapes)
        c = ftz(g * cof) if cof != np.float32(1.0) else g   # grads = vmuls(grads, cof) for mean
        return ftz(s * c)                                    # res = vmul(sign, grads)

    def examples(self) -> Tuple[Example, ...]:
        return _examples()

    def describe(self, x, attrs, out_shape, index) -> str:
        a = float(np.broadcast_to(x["self"], out_shape)[index])
        t = float(np.broadcast_to(x["target"], out_shape)[index])
        s = 1 if a > t else -1 if a < t else 0
        shapes = {n: tuple(np.shape(v)) for n, v in x.items()}
        tail = f", divided by numel(B) = {self._n(shapes)}" if attrs.get("reduction") == 1 else ""
        return f"{element_inputs(x, out_shape, index)}; sign(self - target) = {s}{tail}"

    def torch(self, torch, t, attrs, device):
        """Autograd through l1_loss(reduction='none') on inputs expanded to B, with gradOutput
        (expanded to B) as the incoming gradient. Two adjustments, made explicitly: the mean's
        1/numel(B) is applied to the incoming gradient (torch's own mean divides by the element
        count of its input and target only, not gradOutput's broadcast); and where self == target
        the result is set to 0 * gradOutput, as the contract's comparison gives. On the CPU this
        changes nothing (torch 2.13's sgn(inf - inf) = sgn(NaN) is 0, docs/operators/L1LossBackward.md);
        it guards devices where that was not measured."""
        g, x, y = t["gradOutput"], t["self"], t["target"]
        reduction = int(attrs["reduction"])
        if reduction not in self.reductions.values():
            raise ValueError(f"torch backend: {self.name} reduction {reduction} not in "
                             f"{tuple(self.reductions.values())}")
        shape = torch.broadcast_shapes(torch.broadcast_shapes(x.shape, g.shape), y.shape)
        incoming = g.expand(shape)
        if reduction == 1 and shape.numel():
            incoming = incoming / shape.numel()
        leaf = x.expand(shape).detach().clone().requires_grad_(True)
        target = y.expand(shape)
        with torch.enable_grad():
            loss = torch.nn.functional.l1_loss(leaf, target, reduction="none")
            (result,) = torch.autograd.grad(loss, leaf, incoming)
        return torch.where(leaf.detach() == target, incoming * 0, result)

    # -- planted defects and correct variants ---------------------------------------------------
    def mutants(self) -> Tuple[Mutant, ...]:
        return (
            Mutant("L1SignZeroAsPlusOne", "L1: sign(0) taken as +1 (self >= target -> 1): equal inputs "
                   "give gradOutput instead of 0", _SignZeroAsPlusOne(), _where(sign=_ge_as_plus_one)),
            Mutant("L1SignFlipped", "L1: the gradient's sign flipped (sign(target - self))",
                   _SignFlipped(), _where(sign=_flipped)),
            Mutant("L1SignOfFlushedDifference", "L1: sign of the float32 difference self - target with "
                   "subnormal differences flushed to zero (and inf - inf = NaN), not two comparisons",
                   _SignOfFlushedDifference(), _where(sign=_flushed)),
            Mutant("L1MeanDivisorNumelSelf", "L1: mean divides by numel(self) instead of numel(B)",
                   _MeanDivisorNumelSelf(), _where(divisor=_numel_self, reductions=(1,))),
            Mutant("L1MeanDivisorSelfGradBroadcast", "L1: mean divides by numel(broadcast(self, "
                   "gradOutput)), ignoring target's dimensions (the vendor's ST reference)",
                   _MeanDivisorSelfGrad(), _where(divisor=_numel_self_grad, reductions=(1,))),
            Mutant("L1SumAsMean", "L1: reduction sum treated as mean (divides by numel(B))",
                   _SumAsMean(), _where(divisor=_numel_b, reductions=(2,))),
            Mutant("L1MixedDtypesRejected", "L1: mixed input dtypes rejected with 161002 (the "
                   "contract promotes them)", _MixedDtypesRejected(), _where_mixed,
                   frozenset({"numbers"})),
        )

    def variants(self) -> Tuple[Variant, ...]:
        return (
            Variant("L1ScaleAfterSign", "L1: (gradOutput * sign) * float32(1/N): the Ascend C port's "
                    "order and coefficient (one rounding of 1/N)", _ScaleAfterSign()),
            Variant("L1DivideByN", "L1: sign * (gradOutput / N), a float32 division instead of the "
                    "coefficient", _DivideByN()),
        )


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
        d = np.where(np.abs(d) < np.float32(F32_TINY), np.float32(0.0), d)
        return np.sign(d).astype(np.float32)


class _MeanDivisorNumelSelf(L1LossBackward):
    def _cof(self, attrs, shapes):
        n = numel(shapes["self"])
        return np.float32(1.0) / np.float32(n) if attrs["reduction"] == 1 and n else np.float32(1.0)


class _MeanDivisorSelfGrad(L1LossBackward):
    def _cof(self, attrs, shapes):
        n = numel(broadcast(shapes["self"], shapes["gradOutput"]) or ())
        return np.float32(1.0) / np.float32(n) if attrs["reduction"] == 1 and n else np.float32(1.0)


class _SumAsMean(L1LossBackward):
    def _cof(self, attrs, shapes):
        return super()._cof({**attrs, "reduction": 1 if attrs["reduction"] in (1, 2) else 0}, shapes)


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
    from suite.cases.inputs import draw_inputs   # (a variant draws as its case does)
    x = draw_inputs(case)
    b = tuple(case.out_shape)
    return {n: np.broadcast_to(np.asarray(a).astype(np.float64), b) for n, a in x.items()}


def _judged(case: Any) -> str:
    """The dtype the case's result is judged in (suite.runner.judged_dtype's rule)."""
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


def _numel_self(case: Any) -> int:
    return numel(case.shapes["self"])


def _numel_self_grad(case: Any) -> int:
    return numel(broadcast(case.shapes["self"], case.shapes["gradOutput"]) or ())


def _numel_b(case: Any) -> int:
    return numel(case.out_shape)


def _where_mixed(case: Any) -> bool:
    """Rejecting mixed input dtypes fails every accepted call whose inputs' dtypes differ."""
    return case.op == NAME and case.expect == 0 and len(set(case.dtypes.values())) > 1


# -- the page's phase-1 table, row by row (Operator.examples) -----------------------------------
NULLPTR, INVALID = 161001, 161002
R9 = (1, 1, 1, 1, 1, 1, 1, 2, 2)


def _sig(g=(2, 3), s=(2, 3), t=(2, 3), out="B", dt="float32", gdt=None, sdt=None, tdt=None, odt=None,
        reduction=0, product="atlas-a2") -> Signature:
    shapes = {"gradOutput": g, "self": s, "target": t}
    dts = {"gradOutput": gdt or dt, "self": sdt or dt, "target": tdt or dt}
    if out == "B":
        out = (2, 3) if None in shapes.values() else broadcast(g, s, t)
    return Signature(shapes, dts, out, odt or sdt or dt, {"reduction": reduction}, product)


def _examples() -> Tuple[Example, ...]:
    reject = {
        "gradOutput NULL": (_sig(g=None), NULLPTR),
        "self NULL": (_sig(s=None), NULLPTR),
        "target NULL": (_sig(t=None), NULLPTR),
        "out NULL": (_sig(out=None), NULLPTR),
        "NULL before a bad reduction": (_sig(g=None, reduction=3), NULLPTR),
        "NULL before an unsupported dtype": (_sig(t=None, dt="bfloat16", product="atlas-training"), NULLPTR),
        "NULL before shapes that do not broadcast": (_sig(s=(2, 4), out=None), NULLPTR),
        "reduction 3": (_sig(reduction=3), INVALID),
        "reduction -1": (_sig(reduction=-1), INVALID),
        "all-bfloat16 on atlas-training": (_sig(dt="bfloat16", product="atlas-training"), INVALID),
        "all-bfloat16 on atlas-inference, float32 out": (_sig(dt="bfloat16", odt="float32", product="atlas-inference"), INVALID),
        "self 9-d": (_sig(g=(2, 2), s=R9, t=(2, 2)), INVALID),
        "target 9-d": (_sig(g=(2, 2), s=(2, 2), t=R9), INVALID),
        "gradOutput 9-d": (_sig(g=R9, s=(2, 2), t=(2, 2)), INVALID),
        "out 9-d": (_sig(g=(2, 2), s=(2, 2), t=(2, 2), out=R9), INVALID),
        "self and gradOutput do not broadcast": (_sig(g=(2, 3), s=(2, 4), out=(2, 3)), INVALID),
        "target does not broadcast with them": (_sig(t=(2, 4), out=(2, 3)), INVALID),
        "out is self's shape, not B": (_sig(g=(3,), s=(3,), t=(2, 3), out=(3,)), INVALID),
        "out has an extra leading 1": (_sig(out=(1, 2, 3)), INVALID),
        "0-d B, out (1,)": (_sig(g=(), s=(), t=(), out=(1,)), INVALID),
    }

    accept = {
        "0-d everything": _sig(g=(), s=(), t=()),
        "mixed float16 and float32": _sig(gdt="float16", tdt="float16"),
        "bfloat16 with float16 (promoted to float32) on atlas-a2": _sig(gdt="bfloat16", sdt="float16", tdt="bfloat16"),
        "float16 inputs into a bfloat16 out on atlas-a3": _sig(dt="float16", odt="bfloat16", product="atlas-a3"),
        "target widens B": _sig(g=(3,), s=(3,), t=(2, 3)),
        "8-d": _sig(g=(1, 2, 1, 2, 1, 1, 2, 1), s=(1, 2, 1, 2, 1, 1, 2, 1), t=(1, 2, 1, 2, 1, 1, 2, 1)),
        "empty": _sig(g=(0, 3), s=(3,), t=(1, 3)),
    }
    outside = {  # accepted by phase 1, yet outside the contract (BFLOAT16 on 910/310P)
        "bfloat16 gradOutput promoted to float32 on atlas-training": _sig(gdt="bfloat16", product="atlas-training"),
        "bfloat16 out on atlas-inference": _sig(odt="bfloat16", product="atlas-inference"),
    }
    return table(reject, accept, outside)



OP = L1LossBackward()
