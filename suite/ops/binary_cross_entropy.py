"""aclnnBinaryCrossEntropy: -w * (t * ln x + (1 - t) * ln(1 - x)) on self's shape (self, target and
the weight of one shape and one dtype; the weight optional, NULL: ones), returned as it is (none),
summed (sum) or summed and divided by numel(self) (mean); out is self's shape for none and one
element for mean and sum (docs/operators/BinaryCrossEntropy.md)."""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, Unsupported
from suite.ops.base import (MAX_RANK, Example, Rejection, Shape, Signature, element_inputs, ftz, numel,
                            table)
from suite.ops.binary_cross_entropy_backward import Grid
from suite.ops.loss import R8, LossForward
from suite.ops.records import VendorNames
from suite.values import sets as V
from suite.values.draw import Dist, Sprinkle, Uniform

INNER_NULLPTR = 561103                       # ACLNN_ERR_INNER_NULLPTR: the op_api's status for a NULL
EPS = 1e-12                                  # TBE: x and 1 - x clamped to >= 1e-12 before the log
EPS32 = np.float32(EPS)
LO, HI = 2.0 ** -8, 1.0 - 2.0 ** -8          # uniform's self: inside (0, 1), away from either clamp
# The clamp set: (self, target) pairs, element k taking pair k mod 12. self exactly 0 only with
# target 0 and exactly 1 only with target 1: there both kernels (TBE's clamp of x at 1e-12, the 950's
# clamp of the log at -100) give 0, and a kernel without a clamp gives 0 * -inf = NaN. The other
# self values are held by every dtype (2^-24: a float16 subnormal; 1 - 2^-8: bfloat16's largest
# below 1) and their logs are clamped by neither kernel, so every target is allowed.
CLAMP_SELF = (0.0, 1.0, -0.0, 0.0, 1.0, 2.0 ** -24, 2.0 ** -24, 2.0 ** -14, 1.0 - 2.0 ** -8,
              1.0 - 2.0 ** -8, 0.5, 2.0 ** -20)
CLAMP_TARGET = (0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.0, 0.0, 0.75, 1.0, 1.0)


def _uniform(sig: Signature) -> Dict[str, Dist]:
    """self in [2^-8, 1 - 2^-8], target in [0, 1), the weight in [-1, 1) (the vendor's ATK range)."""
    d = {"self": Uniform(LO, HI), "target": Uniform(0.0, 1.0)}
    if "weight" in sig.shapes:
        d["weight"] = Uniform(-1.0, 1.0)
    return d


def _clamp(sig: Signature) -> Dict[str, Dist]:
    d = _uniform(sig)
    d["self"], d["target"] = Grid(CLAMP_SELF), Grid(CLAMP_TARGET)
    return d


def _specials(sig: Signature) -> Dict[str, Dist]:
    """NaN, +-inf and +-0 in target and the weight (self stays inside (0, 1): at a special self the
    two kernels' clamps give different results, the page's "Not established")."""
    return {n: (v if n == "self" else Sprinkle(v, V.SPECIALS, 0.2)) for n, v in _uniform(sig).items()}


def _large(sig: Signature) -> Dict[str, Dist]:
    """The weight large: terms past float16's range (16-bit) and sums near float32's top in none."""
    d = _uniform(sig)
    if "weight" in sig.shapes:
        lo, hi = (1e3, 6e4) if V.narrowest(sig.dtypes.values()) == "float16" else (1e30, 1e36)
        d["weight"] = Uniform(lo, hi)
    return d


class BinaryCrossEntropy(LossForward):
    """The loss family's helpers serve this forward: the C signature self, target, weight, int64
    reduction, out [BCEF-H]; the page-table rows' `sig`."""

    name = "BinaryCrossEntropy"
    # The vendor's system tests [cases import]: ATK names the inputs as the aclnn call does; the
    # kernel BinaryCrossEntropy takes (x, y, weight) (ops-nn @e5c3fa93
    # loss/binary_cross_entropy/op_graph/binary_cross_entropy_proto.h).
    vendor = VendorNames(ttk="binary_cross_entropy", ttk_inputs=("self", "target", "weight"),
                         ttk_defaults={"reduction": "mean"})
    inputs = ("self", "target", "weight")
    optional = ("weight",)
    row_out, row_reduction = "self", 0
    null_status = INNER_NULLPTR                  # CheckNotNull's status [BCEF-API] [BCEF-UT]
    value_sets = {"uniform": _uniform, "clamp": _clamp, "specials": _specials, "large": _large}
    # Deterministic on every product: "默认确定性实现" for this API [OP-LIST] (the default).
    tiling_names = ()

    # -- contract -------------------------------------------------------------------------------
    def none_shape(self, shapes: Mapping[str, Optional[Shape]]) -> Optional[Shape]:
        """self's shape (the kernel's InferShape4Elewise); () for mean and sum (dim num 0) [BCEF-INFER]."""
        s = shapes.get("self")
        return None if s is None else tuple(s)

    def check(self, sig: Signature) -> Rejection:
        """[BCEF-API] CheckParams (NULL, dtypes, shapes), the reduction, then CheckReduceOutShape."""
        bad = self._nulls(sig) or self._unsupported_dtype(sig, ["self", "target", "out", "weight"])
        if bad:
            return bad
        if sig.shapes.get("weight") is not None:
            for n in ("target", "weight", "out"):
                d = sig.out_dtype if n == "out" else sig.dtypes[n]
                if d != sig.dtypes["self"]:
                    return INVALID, f"{n} is {d}, not self's {sig.dtypes['self']} (a weight is given)"
        s, t = tuple(sig.shapes["self"]), tuple(sig.shapes["target"])
        if s != t:
            return INVALID, f"target {t} is not self's shape {s}"
        bad = self._reduction(sig)
        if bad:
            return bad
        if numel(s) == 0:                            # the fill takes out's own shape: no out check
            return 0, ""
        want, out = self.out_shape(sig.shapes, sig.attrs), tuple(sig.out_shape)
        if out != want and not (numel(out) == 1 and numel(want) == 1):
            return INVALID, f"out shape {out} is not {want} (nor both of one element)"
        return 0, ""

    def outside_contract(self, sig: Signature) -> Optional[str]:
        if sig.out_shape is None or any(sig.shapes.get(n) is None for n in ("self", "target")):
            return None
        if self.check(sig)[0] != 0:
            return None
        s, w = tuple(sig.shapes["self"]), sig.shapes.get("weight")
        if any(len(v) > MAX_RANK for v in (*sig.shapes.values(), sig.out_shape) if v is not None):
            return "a rank past 8: the op API checks no rank, and what the kernel does is not established"
        if w is None and len({sig.dtypes["self"], sig.dtypes["target"], sig.out_dtype}) > 1:
            return ("mixed dtypes with a NULL weight: the op API compares them only when a weight is given, "
                    "the kernel takes one dtype; where the call then fails is not established")
        if w is not None and tuple(w) != s:
            return ("a weight of another shape than self's: the op API checks none, the page wants self's; "
                    "whether the kernel broadcasts it is not established")
        out = tuple(sig.out_shape)
        page = numel(out) == 1 if sig.attrs["reduction"] in (1, 2) else out == s   # self's, or "[1]"
        if not page:
            return ("out of another shape than the page's (one element either way, or an empty self, whose fill "
                    "takes out's shape): accepted by the code, undocumented")
        return None

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """The kernel writes self's dtype (InferDataType4BinaryCrossEntropy), out's dtype too."""
        return dts.get("self") or out_dtype

    # -- numbers ----------------------------------------------------------------------------------
    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        """self's shape, when target and the weight (if given) have it."""
        s = shapes.get("self")
        if s is None or any(v is not None and tuple(v) != tuple(s) for v in shapes.values()):
            return None
        return tuple(s)

    # mean of an empty self: the op API fills out with NaN; sum: 0 [BCEF-API] (`empty_fill`).
    def divisor(self, attrs, shapes) -> Optional[int]:
        n = numel(shapes["self"])                                  # mean: numel(self)
        return n if attrs["reduction"] == 1 and n else None

    def loss(self, x, attrs) -> np.ndarray:
        s, t = x["self"], x["target"]
        with np.errstate(divide="ignore", invalid="ignore"):
            r = -(t * np.log(np.maximum(s, EPS)) + (1.0 - t) * np.log(np.maximum(1.0 - s, EPS)))
        return r * x["weight"] if "weight" in x else r

    def reference_loss(self, x, attrs) -> np.ndarray:
        """The TBE kernel's order in float32 [TBE-BCE]: x = max(x, 1e-12); a = ln(x) * y;
        x1 = max(x * -1 + 1, 1e-12); b = ln(x1) * (y * -1 + 1); r = (a + b) * -1; r = r * w; mean:
        r * cof, cof = float32(1 / N), then the sum."""
        one = np.float32(1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.maximum(x["self"], EPS32)
            a = ftz(np.log(s) * x["target"])
            x1 = np.maximum(ftz(s * -one + one), EPS32)
            b = ftz(np.log(x1) * ftz(x["target"] * -one + one))
            r = ftz(ftz(a + b) * -one)
            return ftz(r * x["weight"]) if "weight" in x else r

    def describe(self, x, attrs, out_shape, index) -> str:
        n = numel(np.shape(x["self"]))
        tail = "" if "weight" in x else ", weight=NULL"
        if attrs["reduction"] in (1, 2) and tuple(out_shape) != tuple(np.shape(x["self"])):
            how = " / numel(self)" if attrs["reduction"] == 1 else ""
            return f"the sum of {n} terms -w(t ln x + (1 - t) ln(1 - x)){how}{tail}"
        return element_inputs(x, out_shape, index) + tail

    def torch(self, torch, t, attrs, device):
        """aten's binary_cross_entropy: its log clamped at -100, as the 950's kernel; the value sets
        keep away from where the clamps differ (the page's "How the kernel computes"). aten refuses
        self or target outside [0, 1] (NaN too), which the kernel computes: Unsupported, a skip."""
        for n in ("self", "target"):
            v = t[n]
            if v.numel() and not bool(((v >= 0) & (v <= 1)).all()):
                raise Unsupported(f"torch backend: aten's binary_cross_entropy refuses a {n} outside [0, 1] "
                                  "(NaN included), which the kernel computes")
        return torch.ops.aten.binary_cross_entropy(t["self"], t["target"], t.get("weight"),
                                                   self.torch_reduction(attrs))

    # -- the page's phase-1 table -------------------------------------------------------------
    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        R9 = (1, 1, 1, 1, 1, 1, 1, 2, 3)
        reject = {
            **self.null_rows(),
            "self NULL, bfloat16 on atlas-training (row 1 first)": (sig(s=None, dt="bfloat16", product="atlas-training"),
                                                                      INNER_NULLPTR),
            "self bfloat16 on atlas-training (row 2)": (sig(sdt="bfloat16", product="atlas-training", w=None), INVALID),
            "target bfloat16 on atlas-inference (row 2)": (sig(tdt="bfloat16", product="atlas-inference"), INVALID),
            "out bfloat16 on atlas-training (row 2)": (sig(odt="bfloat16", product="atlas-training"), INVALID),
            "weight bfloat16 on atlas-inference (row 2)": (sig(wdt="bfloat16", product="atlas-inference"), INVALID),
            "weight given, target float16 (row 3)": (sig(tdt="float16"), INVALID),
            "weight given, weight float16 (row 3)": (sig(wdt="float16"), INVALID),
            "weight given, out float16 (row 3)": (sig(odt="float16"), INVALID),
            "weight given, mean into a float32 [1] from float16 (row 3)": (sig(dt="float16", odt="float32",
                                                                              reduction=1, out=(1,)), INVALID),
            "target of another shape (row 4)": (sig(t=(2, 4)), INVALID),
            "target broadcasting to self (row 4)": (sig(t=(3,)), INVALID),
            "target [1] against 0-d self (row 4)": (sig(s=(), t=(1,), w=None, out=()), INVALID),
            "empty self, target of another empty shape (row 4)": (sig(s=(0, 3), t=(0, 4), w=None, out=(0, 3)), INVALID),
            **self.reduction_rows(),
            "none: out transposed (row 6)": (sig(out=(3, 2)), INVALID),
            "mean: out of self's shape (row 6)": (sig(reduction=1), INVALID),
            "sum: out [2] (row 6)": (sig(reduction=2, out=(2,)), INVALID),
        }
        accept = {
            "weight given": sig(),
            "weight NULL": sig(w=None),
            "bfloat16 on atlas-a2": sig(dt="bfloat16"),
            "bfloat16 on ascend-950": sig(dt="bfloat16", product="ascend-950"),
            "float16 on atlas-training": sig(dt="float16", product="atlas-training"),
            "mean, 0-d out": sig(reduction=1, out=()),
            "sum, out [1]": sig(reduction=2, out=(1,)),
            "mean, out [1, 1]": sig(reduction=1, out=(1, 1)),
            "0-d everything, none": sig(s=(), t=(), w=(), out=()),
            "8-d": sig(s=R8, t=R8, w=R8, out=R8),
            "empty self, none": sig(s=(0, 3), t=(0, 3), w=(0, 3), out=(0, 3)),
            "empty self, mean: NaN": sig(s=(0, 3), t=(0, 3), w=None, reduction=1, out=()),
            "empty self, sum into [1]: 0": sig(s=(0, 3), t=(0, 3), w=(0, 3), reduction=2, out=(1,)),
        }
        outside = {  # accepted by the op API, outside the page's contract: no case
            "9-d self, target and out": sig(s=R9, t=R9, w=None, out=R9),
            "weight NULL, target float16": sig(tdt="float16", w=None),
            "weight NULL, out float16": sig(odt="float16", w=None),
            "weight [3] against self [2, 3]": sig(w=(3,)),
            "weight that does not broadcast": sig(w=(4,)),
            "none, self [1], out 0-d": sig(s=(1,), t=(1,), w=(1,), out=()),
            "empty self, none, out [5]": sig(s=(0, 3), t=(0, 3), w=(0, 3), out=(5,)),
        }
        return table(reject, accept, outside)


OP = BinaryCrossEntropy()
