"""aclnnBinaryCrossEntropyBackward: out = gradOutput * weight * (self - target) / max(self * (1 - self), 1e-12)
[/ numel(self) for mean], every input broadcast to self's shape, weight optional (NULL: ones)
(docs/operators/BinaryCrossEntropyBackward.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.common import dtypes
from suite.values import sets as V
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.values.draw import Binades, Dist, Sprinkle, Uniform
from suite.ops.records import VendorNames
from suite.ops.base import (MAX_RANK, Example, Rejection, Shape, Signature, broadcast, element_inputs, ftz, numel,
                            table)
from suite.ops.loss import R8, LossBackward, promote

EPS = 1e-12                                   # the clamp of x * (1 - x) (float64 golden)
EPS32 = np.float32(EPS)                       # the kernel's float32 constant, 9.99999996e-13
# uniform's self: the domain's interior, away from the clamp in every dtype (2^-8 and 1 - 2^-8
# are bfloat16 values, so rounding cannot reach 0 or 1); x * (1 - x) >= 0.0039 there.
LO, HI = 2.0 ** -8, 1.0 - 2.0 ** -8
NARROW = ("float16", "bfloat16")


# -- value sets -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grid(Dist):
    """Element k of the flattened input is values[(k // stride) % len(values)]: a fixed table, so
    that every pair of two inputs' listed values (self's with stride 1, target's with a stride of
    len(self's values)) occurs in any tensor of len(self's) * len(target's) elements. It draws no
    random words; `state` carries the position across chunks."""

    values: Tuple[float, ...]
    stride: int = 1

    def sample(self, streams, n, state):
        start = state.get("at", 0)
        state["at"] = start + n
        k = (np.arange(start, start + n, dtype=np.int64) // self.stride) % len(self.values)
        return np.asarray(self.values, dtype=np.float64)[k]


# self at the clamp: exactly 0 and 1 first (so that every pair with target 0 and 1 is among the
# first 2 * 17 + 2 elements), then within a few ulps of them in each dtype (draws round these to
# self's dtype: in float16 the values below 2^-25 become 0, and 1 - 2^-24 becomes 1), around the
# clamp at 1e-12 (float32 and bfloat16 hold it), and one interior point. The smallest is 2^-126,
# the smallest normal: whether the device flushes subnormal inputs is not established, and a
# kernel that multiplies first (the ascend950 one's g * (x - t)) loses a subnormal x - t entirely.
CLAMP_SELF = (0.0, 1.0, -0.0, 2.0 ** -126, 1e-13, 5e-13, 1e-12, 2e-12, 1e-11, 2.0 ** -24,
              1.0 - 2.0 ** -24, 1.0 - 2.0 ** -23, 1.0 - 2.0 ** -11, 1.0 - 2.0 ** -10, 1.0 - 2.0 ** -8,
              2.0 ** -11, 0.5)
CLAMP_TARGET = (0.0, 1.0, 0.5)


def _uniform(sig: Signature) -> Dict[str, Dist]:
    """self in [2^-8, 1 - 2^-8] (inside [0, 1], away from the clamp), target in [0, 1),
    gradOutput and weight in [-5, 5)."""
    d = V.uniform_set(sig)
    d["self"] = Uniform(LO, HI)
    d["target"] = Uniform(0.0, 1.0)
    return d


def _clamp(sig: Signature) -> Dict[str, Dist]:
    """self exactly 0 and 1 and within a few ulps of them, and around 1e-12 (the clamp of
    x * (1 - x)), against target 0, 1 and 0.5: every pair in tensors of 51 elements or more."""
    d = _uniform(sig)
    d["self"] = Grid(CLAMP_SELF)
    d["target"] = Grid(CLAMP_TARGET, stride=len(CLAMP_SELF))
    return d


def _outside(sig: Signature) -> Dict[str, Dist]:
    """self outside [0, 1] (neither self nor target is range-checked): x * (1 - x) < 0 is clamped
    to 1e-12, a result of about 1e12 * (x - t); target in [-1, 2)."""
    d = _uniform(sig)
    d["self"] = Sprinkle(Uniform(-2.0, 3.0), (-0.5, 1.5, 2.0, -1.0, 1.0, 0.0), 0.25)
    d["target"] = Uniform(-1.0, 2.0)
    return d


def _specials(sig: Signature) -> Dict[str, Dist]:
    """NaN, +-inf and +-0 sprinkled into every input (on the uniform set)."""
    return {n: Sprinkle(v, V.SPECIALS, 0.2) for n, v in _uniform(sig).items()}


def _large(sig: Signature) -> Dict[str, Dist]:
    # gradOutput and weight large: past float16's range in the result (16-bit inputs: 2e2..3e4 each,
    # products to 1e9 and more); wider inputs 1e3..1e15, beyond float16's range yet with every
    # float32 intermediate in any order (g*(x-t), w*r, g*w*r <= 2.6e32) far below float32's maximum.
    d = _uniform(sig)
    lo, hi = (2e2, 3e4) if V.narrowest(sig.dtypes.values()) == "float16" else (1e3, 1e15)
    d["gradOutput"] = Binades(lo, hi)
    d["weight"] = Binades(lo, hi)
    return d


def _tiny(sig: Signature) -> Dict[str, Dist]:
    """gradOutput and weight so small that the result (g * w, divided by N for mean) lands in out's
    subnormal range; with a NULL weight gradOutput alone is that small, floored where its own dtype
    cannot go that small."""
    d = _uniform(sig)
    a = V.tiny_scale(sig.out_dtype, sig.dtypes.values())
    n = max(numel(sig.shapes["self"]), 1) if sig.attrs.get("reduction") == 1 else 1
    if "weight" in sig.shapes:
        s = a * float(np.sqrt(n))
        d["weight"] = Binades(s / 4, s)
    else:
        floor = 4.0 * max(dtypes.finfo(dtypes.dtype_of(t)).tiny for t in sig.dtypes.values())
        s = max(a * a * n, floor)
    d["gradOutput"] = Binades(s / 4, s)
    return d


def _nonpos_weight(sig: Signature) -> Dict[str, Dist]:
    """weight <= 0, a quarter of it exact zeros of either sign."""
    d = _uniform(sig)
    d["weight"] = Sprinkle(Uniform(-5.0, 0.0), (0.0, -0.0), 0.25)
    return d


def _unit_weight(sig: Signature) -> Dict[str, Dist]:
    """weight exactly 1 everywhere: the result must be the NULL weight's."""
    d = _uniform(sig)
    d["weight"] = Grid((1.0,))
    return d


class BinaryCrossEntropyBackward(LossBackward):
    name = "BinaryCrossEntropyBackward"
    # The vendor's system tests [cases import, docs/vendor-cases.md]: ATK names the weight
    # weightOptional; the arch35 kernel BinaryCrossEntropyGrad takes (x, y, grad_output, weight)
    # (ops-nn @e5c3fa93 loss/binary_cross_entropy_grad/op_graph/binary_cross_entropy_grad_proto.h).
    vendor = VendorNames(atk_names={"weightOptional": "weight"}, ttk="binary_cross_entropy_grad",
                         ttk_inputs=("self", "target", "gradOutput", "weight"),
                         ttk_defaults={"reduction": "mean"})
    inputs = ("gradOutput", "self", "target", "weight")
    optional = ("weight",)
    row_out, row_reduction = "self", 1
    value_sets = {"uniform": _uniform, "clamp": _clamp, "outside": _outside, "specials": _specials,
                  "large": _large, "tiny": _tiny, "nonpos_weight": _nonpos_weight,
                  "unit_weight": _unit_weight}

    tiling_names = ("tile", "one_core")

    def tiling(self, hw, dts) -> Dict[str, int]:
        """The built-in TBE kernel's host tiling is the generic elementwise one, EletwiseTiling over
        x and grad_output ([canndev-2022] ops/built-in/op_tiling/binary_cross_entropy_grad.cc and
        eletwise.cc @e202bb34): a UB tile holds ((ub / coexisting) // 32 * 32) / 4 float32
        elements, at most 16383 (split_factors[4]); below 1024 output elements one core does it
        all; above, each core takes ceil(N / cores) elements rounded up to a 32-byte block of the
        output dtype. The coexisting-buffer count is compiled into the kernel (not public): 6 is
        estimated for float32 (x, y, grad, weight, two temporaries), 8 for 16-bit inputs (their
        float32 casts too). The tile is an estimate; `one_core` (1024) is the tiling's own."""
        coexisting = 6 if promote(dts.values()) == "float32" else 8
        tile = (hw.ub_bytes // coexisting) // 32 * 32 // 4
        return {"tile": min(tile, 16383), "one_core": 1024}

    # -- contract ---------------------------------------------------------------------------------
    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        return shapes.get("self")

    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        """self's shape, when every other input broadcasts to it (nothing is summed)."""
        s = shapes.get("self")
        if s is None or any(broadcast(s, v) != tuple(s) for n, v in shapes.items() if v is not None):
            return None
        return tuple(s)

    @staticmethod
    def _shape_problem(sig: Signature) -> Optional[str]:
        """The op_api's CheckShape after its empty-self exit: out must be self's shape, and target,
        the weight (if given) and gradOutput must each broadcast to self's shape, in that order."""
        s = tuple(sig.shapes["self"])
        if tuple(sig.out_shape) != s:
            return f"out shape {tuple(sig.out_shape)} is not self's shape {s}"
        for n in ("target", "weight", "gradOutput"):
            v = sig.shapes.get(n)
            if v is None:
                continue
            b = broadcast(s, v)
            if b is None:
                return f"{n} {tuple(v)} and self {s} do not broadcast"
            if b != s:
                return f"{n} {tuple(v)} does not broadcast to self's shape {s} (the broadcast is {b})"
        return None

    def check(self, sig: Signature) -> Rejection:
        """[ops-nn] aclnn_binary_cross_entropy_backward.cpp, CheckParams then CheckPromoteType."""
        bad = self._nulls(sig)                       # gradOutput, self, target, out (the weight may be NULL)
        if bad:
            return bad
        if len(sig.out_shape) > MAX_RANK:            # CheckDimension tests only out (see the page)
            return INVALID, f"out has {len(sig.out_shape)} dimensions (at most {MAX_RANK})"
        bad = self._unsupported_dtype(sig, ["self", "gradOutput", "target", "out", "weight"])
        if bad:
            return bad
        if numel(sig.shapes["self"]) != 0:           # an empty self skips every shape check
            why = self._shape_problem(sig)
            if why:
                return INVALID, why
        return self._reduction(sig) or (0, "")        # promotion cannot fail after the dtype check

    def outside_contract(self, sig: Signature) -> Optional[str]:
        if any(sig.shapes.get(n) is None for n in self.inputs if n not in self.optional) or sig.out_shape is None:
            return None
        if numel(sig.shapes["self"]) == 0 and self._shape_problem(sig) and self.check(sig)[0] == 0:
            return ("an empty self skips the shape checks, so the code accepts shapes it would reject "
                    "otherwise: undocumented")
        return None

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """The kernel computes in P (the promoted input dtype) and the op_api casts P to out."""
        return promote(dts.values()) or out_dtype

    # -- numbers ----------------------------------------------------------------------------------
    @staticmethod
    def _n(shapes) -> int:
        return numel(shapes["self"])

    def terms(self, x, attrs, shapes) -> np.ndarray:
        s = x["self"]
        den = np.maximum(s * (1.0 - s), EPS)
        g = x["gradOutput"] * x["weight"] if "weight" in x else x["gradOutput"]
        out = g * (s - x["target"]) / den
        n = self._n(shapes)
        return out / n if attrs["reduction"] == 1 and n else out     # float64: the exact division

    @staticmethod
    def cof(shapes) -> np.float32:
        """The TBE tiling's mean coefficient: 1.0f divided by each of self's dims in turn, in float32."""
        c = np.float32(1.0)
        for d in shapes["self"]:
            c = np.float32(c / np.float32(d))
        return c

    def reference_terms(self, x, attrs, shapes) -> np.ndarray:
        """The TBE kernel's order, in float32: a = x - t; b = max(x * ((-x) + 1), 1e-12); r = a / b;
        r = w * r; r = g * r; mean: r = r * cof."""
        s = x["self"]
        a = ftz(s - x["target"])
        b = np.maximum(ftz(s * ftz(np.float32(1.0) - s)), EPS32)
        r = ftz(a / b)
        if "weight" in x:
            r = ftz(x["weight"] * r)
        r = ftz(x["gradOutput"] * r)
        if attrs["reduction"] == 1 and self._n(shapes):
            r = ftz(r * self.cof(shapes))
        return r

    def describe(self, x, attrs, out_shape, index) -> str:
        return element_inputs(x, out_shape, index) + ("" if "weight" in x else ", weight=NULL")

    def torch(self, torch, t, attrs, device):
        """aten's binary_cross_entropy_backward: grad * (x - t) / max((1 - x) * x, 1e-12), times
        the weight, divided by numel(self) for mean: the vendor's clamp and epsilon, so nothing is
        adjusted. Every input is expanded to self's shape first: aten squeezes its inputs, and a
        gradOutput of [N, 1] against self [N, C] would then not broadcast."""
        x = t["self"]
        reduction = self.torch_reduction(attrs)
        for n in ("gradOutput", "target", "weight"):
            if n in t and torch.broadcast_shapes(t[n].shape, x.shape) != x.shape:
                raise ValueError(f"torch backend: {n} {tuple(t[n].shape)} does not broadcast to self "
                                 f"{tuple(x.shape)}")
        w = t["weight"].expand(x.shape) if "weight" in t else None
        return torch.ops.aten.binary_cross_entropy_backward(
            t["gradOutput"].expand(x.shape), x, t["target"].expand(x.shape), w, reduction)

    def examples(self) -> Tuple[Example, ...]:
        """The page's phase-1 table, row by row (R9 ends in self's (2, 3): a 9-d input broadcasts
        with self, so only the rank is wrong)."""
        sig = self.sig
        R9 = (1, 1, 1, 1, 1, 1, 1, 2, 3)
        reject = {
            # 1: NULL (161001), in the code's order, before anything else
            **self.null_rows(),
            "target NULL with a NULL weight": (sig(t=None, w=None), NULLPTR),
            "out NULL with bfloat16 on atlas-training": (sig(out=None, dt="bfloat16", product="atlas-training"), NULLPTR),
            # 2: rank: only out's is checked directly; an input's rank 9 fails the shape checks
            "out 9-d": (sig(s=(2, 3), out=R9), INVALID),
            "self 9-d (out too)": (sig(g=(2, 3), s=R9, t=(2, 3), w=(2, 3), out=R9), INVALID),
            "gradOutput 9-d": (sig(g=R9), INVALID),
            "target 9-d": (sig(t=R9), INVALID),
            "weight 9-d": (sig(w=R9), INVALID),
            # 3: dtype outside the product's list, on any tensor given
            "self bfloat16 on atlas-training": (sig(sdt="bfloat16", odt="float32", product="atlas-training"), INVALID),
            "gradOutput bfloat16 on atlas-inference": (sig(gdt="bfloat16", product="atlas-inference"), INVALID),
            "target bfloat16 on atlas-training": (sig(tdt="bfloat16", product="atlas-training"), INVALID),
            "out bfloat16 on atlas-inference": (sig(odt="bfloat16", product="atlas-inference"), INVALID),
            "weight bfloat16 on atlas-training": (sig(wdt="bfloat16", product="atlas-training"), INVALID),
            "empty self, bfloat16 on atlas-inference": (sig(g=(0, 3), s=(0, 3), t=(0, 3), w=(0, 3), dt="bfloat16",
                                                            product="atlas-inference"), INVALID),
            # 5: out must be self's shape
            "out transposed": (sig(out=(3, 2)), INVALID),
            "out with an extra 1": (sig(out=(1, 2, 3)), INVALID),
            "out of the broadcast shape, not self's": (sig(s=(2, 1), t=(2, 3), out=(2, 3)), INVALID),
            # 6-8: target, the weight, gradOutput must broadcast to self's shape
            "target does not broadcast": (sig(t=(2, 4)), INVALID),
            "target larger than self": (sig(g=(3,), s=(3,), t=(2, 3), w=(3,)), INVALID),
            "weight does not broadcast": (sig(w=(3, 3)), INVALID),
            "weight larger than self": (sig(g=(3,), s=(3,), t=(3,), w=(2, 3)), INVALID),
            "gradOutput does not broadcast": (sig(g=(4,)), INVALID),
            "gradOutput larger than self": (sig(g=(2, 3), s=(3,), t=(3,), w=(3,)), INVALID),
            "0-d self, gradOutput [1]": (sig(g=(1,), s=(), t=(), w=()), INVALID),
            "non-empty self, empty target": (sig(t=(0, 3)), INVALID),
            "non-empty self, empty weight": (sig(w=(0, 3)), INVALID),
            "non-empty self, empty gradOutput": (sig(g=(0, 3)), INVALID),
            # 9: reduction, after the shape checks (an empty self too)
            **self.reduction_rows(),
            "empty self, reduction 3": (sig(g=(0, 3), s=(0, 3), t=(0, 3), w=(0, 3), reduction=3), INVALID),
            "empty self, out 9-d": (sig(g=(0, 3), s=(0, 3), t=(0, 3), w=(0, 3), out=R9), INVALID),
        }
        accept = {
            "every tensor bfloat16 on ascend-950 (regbase: the DAV_2201 list)": sig(dt="bfloat16", product="ascend-950"),
            "weight given": sig(),
            "weight NULL": sig(w=None),
            "weight 0-d": sig(w=()),
            "weight [C] against self [N, C]": sig(w=(3,)),
            "weight [N, 1]": sig(w=(2, 1)),
            "target [C] against self [N, C]": sig(t=(3,)),
            "gradOutput 0-d": sig(g=()),
            "gradOutput [1]": sig(g=(1,)),
            "gradOutput [1, 3]": sig(g=(1, 3), reduction=0),
            "0-d everything": sig(g=(), s=(), t=(), w=()),
            "0-d self, NULL weight": sig(g=(), s=(), t=(), w=None, reduction=2),
            "self [1], gradOutput 0-d": sig(g=(), s=(1,), t=(1,), w=()),
            "8-d": sig(g=R8, s=R8, t=R8, w=R8),
            "mixed: float16 self, float32 target": sig(sdt="float16", tdt="float32", odt="float32"),
            "mixed: bfloat16 and float16 on atlas-a2": sig(gdt="bfloat16", sdt="float16", tdt="bfloat16",
                                                           wdt="float16", odt="float32"),
            "out float32 from float16 inputs": sig(dt="float16", odt="float32", product="atlas-training"),
            "out float16 from float32 inputs": sig(dt="float32", odt="float16", product="atlas-inference"),
            "out bfloat16 from float32 on atlas-a3": sig(odt="bfloat16", product="atlas-a3"),
            "bfloat16 on atlas-a2": sig(dt="bfloat16"),
            "reduction none": sig(reduction=0),
            "reduction sum": sig(reduction=2),
            "empty self": sig(g=(0, 3), s=(0, 3), t=(0, 3), w=(0, 3)),
            "empty self, 0-d gradOutput, NULL weight": sig(g=(), s=(0, 3), t=(3,), w=None),
        }
        outside = {  # accepted by the code (the shape checks are skipped), yet undocumented: no case
            "empty self, out of another shape": sig(g=(0, 3), s=(0, 3), t=(0, 3), w=(0, 3), out=(5,)),
            "empty self, target that does not broadcast": sig(g=(0, 3), s=(0, 3), t=(2, 4), w=None),
            "empty self, weight larger than self": sig(g=(0, 3), s=(0, 3), t=(0, 3), w=(2, 0, 3)),
            "empty self, 9-d gradOutput": sig(g=(1, 1, 1, 1, 1, 1, 1, 2, 3), s=(0, 3), t=(0, 3), w=(0, 3)),
            "9-d empty self, 8-d out": sig(g=(), s=(1, 1, 1, 1, 1, 1, 1, 0, 3), t=(), w=None,
                                           out=(1, 1, 1, 1, 1, 1, 0, 3)),
        }
        return table(reject, accept, outside)


OP = BinaryCrossEntropyBackward()
