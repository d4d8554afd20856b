"""aclnnL1LossBackward: out = gradOutput * sign(self - target) [/ numel(B) for mean] on
B = broadcast(self, gradOutput, target), the sign taken by comparison (sign(0) = 0)
(docs/operators/L1LossBackward.md)."""
from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

import numpy as np

from suite.common import dtypes
from suite.values import sets as V
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.values.draw import Binades, Choice, Dist, Sprinkle, Uniform
from suite.ops.records import VendorNames
from suite.ops.base import (LOSS_DTYPES, MAX_RANK, Example, Rejection, Shape, Signature, broadcast, element_inputs,
                            ftz, numel, table)
from suite.ops.loss import R8, LossBackward, promote
from suite.ops.promotion import can_cast, promote_pair

NAME = "L1LossBackward"


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
    suite.run.paths.judged_dtype, which cannot see that second rounding overflow): there below 3e4."""
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
        # A BFLOAT16 result cast to a FLOAT16 out is judged in BFLOAT16 (suite.run.paths.judged_dtype),
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


def _int_ties(sig: Signature) -> Dict[str, Dist]:
    """For integer and BOOL operands: every input from the integers -3..3 (BOOL: 0 and 1; UINT8:
    0..3), a float one as those values (exact in every dtype), so an integer self ties a float
    target (sign 0) about a seventh of the time, and the sign elsewhere comes from comparing the
    values cast to P."""
    pool = tuple(float(v) for v in range(-3, 4))
    return {n: V.integers(sig.dtypes[n], -3, 3) if dtypes.is_exact(sig.dtypes[n]) else Choice(pool)
            for n in sig.shapes}


class L1LossBackward(LossBackward):
    name = NAME
    # The vendor's system tests [cases import]: the kernel L1LossGrad takes (grads, predict, label)
    # (ops-nn @e5c3fa93 loss/l1_loss_grad/op_graph/l1_loss_grad_proto.h).
    vendor = VendorNames(ttk="l1_loss_grad", ttk_inputs=("gradOutput", "self", "target"),
                         ttk_defaults={"reduction": "mean"})
    # The list the *promoted* dtype P must be in ([ops-nn] aclnn_l1_loss_backward.cpp, CheckDtypeValid):
    # the loss family's table. Each input is not list-checked, nor is out.
    product_dtypes = LOSS_DTYPES
    value_sets = {"uniform": _uniform, "specials": _specials, "large": _large, "tiny": _tiny,
                  "ties": _ties, "one_ulp": _one_ulp, "int_ties": _int_ties}
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
    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        if any(shapes.get(n) is None for n in self.inputs):
            return None
        return self.b_shape(shapes)

    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        """broadcast(broadcast(self, gradOutput), target), as CheckShape forms it."""
        first = broadcast(shapes["self"], shapes["gradOutput"])
        return None if first is None else broadcast(first, shapes["target"])

    def check(self, sig: Signature) -> Rejection:
        """CheckParams of [ops-nn] aclnn_l1_loss_backward.cpp, in its order."""
        bad = self._nulls(sig) or self._reduction(sig)             # gradOutput, self, target, out
        if bad:
            return bad
        g, x, t = (sig.dtypes[n] for n in self.inputs)
        p1 = promote_pair(g, x)
        if p1 is None:                                                             # row 4
            return INVALID, f"gradOutput's {g} and self's {x} have no promoted dtype"
        p = promote_pair(t, p1)
        if p is None:                                                              # row 5
            return INVALID, f"target's {t} and the promoted {p1} have no promoted dtype"
        if not can_cast(p, sig.out_dtype):                                         # row 6
            return INVALID, f"the promoted dtype {p} cannot be cast to out's {sig.out_dtype}"
        allowed = self.product_dtypes[sig.product]
        if p not in allowed:
            return (INVALID, f"the promoted dtype {p} of gradOutput, self and target is not "
                             f"supported on {sig.product} (supported: {', '.join(sorted(allowed))})")
        for n, s in (("self", sig.shapes["self"]), ("target", sig.shapes["target"]),
                     ("gradOutput", sig.shapes["gradOutput"]), ("out", sig.out_shape)):
            if len(s) > MAX_RANK:
                return INVALID, f"{n} has {len(s)} dimensions (at most {MAX_RANK})"
        first = broadcast(sig.shapes["self"], sig.shapes["gradOutput"])
        if first is None:
            return (INVALID,
                    f"self {sig.shapes['self']} and gradOutput {sig.shapes['gradOutput']} do not broadcast")
        b = broadcast(first, sig.shapes["target"])
        if b is None:
            return (INVALID,
                    f"broadcast(self, gradOutput) {first} and target {sig.shapes['target']} do not broadcast")
        if tuple(sig.out_shape) != b:
            return INVALID, f"out shape {tuple(sig.out_shape)} is not the broadcast shape {b}"
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

    def operand_dtype(self, dts: Mapping[str, str]) -> Optional[str]:
        """Every operand is broadcast to B in its own dtype, then cast to P (the page's "Integer
        operands": l0op::BroadcastTo, then l0op::Cast)."""
        return promote(dts.values())

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
        reduction = self.torch_reduction(attrs)
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

    def examples(self) -> Tuple[Example, ...]:
        """The page's phase-1 table, row by row."""
        sig = self.sig
        reject = {
            **self.null_rows(),
            "NULL before a bad reduction": (sig(g=None, reduction=3), NULLPTR),
            "NULL before an unsupported dtype": (sig(t=None, dt="bfloat16", product="atlas-training"), NULLPTR),
            "NULL before shapes that do not broadcast": (sig(s=(2, 4), out=None), NULLPTR),
            **self.reduction_rows(),
            "all-bfloat16 on atlas-training": (sig(dt="bfloat16", product="atlas-training"), INVALID),
            "all-bfloat16 on atlas-inference, float32 out": (sig(dt="bfloat16", odt="float32", product="atlas-inference"), INVALID),
            "uint16 gradOutput: no promotion with self's float32": (sig(gdt="uint16"), INVALID),        # row 4
            "uint32 target: no promotion with float32": (sig(tdt="uint32"), INVALID),                  # row 5
            "float32 inputs into an int32 out": (sig(odt="int32"), INVALID),                           # row 6
            "float16 inputs into a bool out": (sig(dt="float16", odt="bool"), INVALID),
            "all-int32 inputs (P = INT32)": (sig(dt="int32", odt="float32"), INVALID),                  # row 7
            "all-bool inputs (P = BOOL)": (sig(dt="bool", odt="float16"), INVALID),
            "an int32 self with bfloat16 on atlas-inference (P = BFLOAT16)":
                (sig(dt="bfloat16", sdt="int32", product="atlas-inference"), INVALID),
            "a float64 self (P = DOUBLE)": (sig(sdt="float64", odt="float32"), INVALID),
            **self.rank_rows(("self", "target", "gradOutput", "out")),  # in the code's order
            "self and gradOutput do not broadcast": (sig(g=(2, 3), s=(2, 4), out=(2, 3)), INVALID),
            "target does not broadcast with them": (sig(t=(2, 4), out=(2, 3)), INVALID),
            "out is self's shape, not B": (sig(g=(3,), s=(3,), t=(2, 3), out=(3,)), INVALID),
            "out has an extra leading 1": (sig(out=(1, 2, 3)), INVALID),
            "0-d B, out (1,)": (sig(g=(), s=(), t=(), out=(1,)), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950 (ASCEND950 lies in ASCEND910B..ASCEND910E)": sig(dt="bfloat16", product="ascend-950"),
            "0-d everything": sig(g=(), s=(), t=()),
            "mixed float16 and float32": sig(gdt="float16", tdt="float16"),
            "bfloat16 with float16 (promoted to float32) on atlas-a2": sig(gdt="bfloat16", sdt="float16", tdt="bfloat16"),
            "float16 inputs into a bfloat16 out on atlas-a3": sig(dt="float16", odt="bfloat16", product="atlas-a3"),
            "target widens B": sig(g=(3,), s=(3,), t=(2, 3)),
            "8-d": sig(g=R8, s=R8, t=R8),
            "empty": sig(g=(0, 3), s=(3,), t=(1, 3)),
            "an int32 gradOutput with float32 (the vendor's test 17)": sig(gdt="int32", product="atlas-training"),
            "an int32 self with float16 (P = FLOAT16)": sig(dt="float16", sdt="int32", odt="float16"),
            "int8 and uint8 (INT16) with float32": sig(sdt="int8", tdt="uint8", odt="float32", product="atlas-inference"),
            "a bool target with bfloat16 on atlas-a3": sig(dt="bfloat16", tdt="bool", product="atlas-a3"),
        }
        outside = {  # accepted by phase 1, yet outside the contract (BFLOAT16 on 910/310P)
            "bfloat16 gradOutput promoted to float32 on atlas-training": sig(gdt="bfloat16", product="atlas-training"),
            "bfloat16 out on atlas-inference": sig(odt="bfloat16", product="atlas-inference"),
        }
        return table(reject, accept, outside)


OP = L1LossBackward()
