"""aclnnNLLLossBackward: out has self's shape [N, C] (or [C]) and is +0 except, for each sample n
whose class index t_n is not ignoreIndex, out[n, t_n] = -w[t_n] * g[n] (none), -w[t_n] * g (sum)
or -w[t_n] * (g / W) (mean, W the totalWeight input, the quotient formed first); self's values are
never read (docs/operators/NLLLossBackward.md). A scatter along the class axis: the terms live on
self's shape, target [N] and gradOutput [N] reach them as columns [N, 1] and a class coordinate
[C] tells the one written column of each row (Operator.operands, suite/ops/operands.py)."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.common import dtypes
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.ops.records import VendorNames
from suite.ops.base import LOSS_DTYPES, Attr, Example, Rejection, Shape, Signature, ftz, numel, table
from suite.ops.class_index import (INT32, classes, fitted, ignore_token, keyed_null_rows, keyed_rank_rows,
                                   target_rows)
from suite.ops.loss import LossBackward
from suite.ops.operands import class_coordinate, per_row
from suite.ops.promotion import can_cast
from suite.values import sets as V
from suite.values.draw import Binades, Dist, Sprinkle, Uniform
from suite.values.exact import Integers

NAME = "NLLLossBackward"


# -- value sets ----------------------------------------------------------------------------------
def _n(sig: Signature) -> int:
    s = sig.shapes.get("self")
    return s[0] if s is not None and len(s) == 2 else 1


def _uniform(sig: Signature) -> Dict[str, Dist]:
    """g and w uniform on [-5, 5); self anything (never read); W positive, about the size of the
    forward's weight sum of N samples (taken as given, never 0 while samples take part)."""
    n = max(_n(sig), 1)
    return {"gradOutput": Uniform(-5.0, 5.0), "self": Uniform(-5.0, 5.0), "target": classes(sig),
            "weight": Uniform(-5.0, 5.0), "totalWeight": Binades(0.5 * n, 2.0 * n)}


def _specials(sig: Signature) -> Dict[str, Dist]:
    """self all NaN, +-inf and +-0 (a kernel that reads it turns the zeros NaN); g with NaN and
    +-inf (only the written elements may show them: a one-hot multiply makes NaN everywhere in
    the row); w with +-0 (-w * g is -0 or +0 there, and +0 off the written elements)."""
    d = _uniform(sig)
    d["self"] = Sprinkle(Uniform(-5.0, 5.0), V.SPECIALS, 0.5)
    d["gradOutput"] = Sprinkle(Uniform(-5.0, 5.0), V.SPECIALS, 0.2)
    d["weight"] = Sprinkle(Uniform(-5.0, 5.0), (0.0, -0.0), 0.3)
    return d


def _all_ignored(sig: Signature) -> Dict[str, Dist]:
    """Every target is ignoreIndex (drawn only where the target's dtype holds it): out all +0,
    whatever W holds; W small, so a kernel that writes the rows anyway shows."""
    d = _uniform(sig)
    v = sig.attrs["ignoreIndex"]
    d["target"] = Integers(v, v)
    d["totalWeight"] = Binades(1e-3, 1e-2)
    return d


def _order(sig: Signature) -> Dict[str, Dist]:
    """The mean's order: g about 1e26 and w about 1e12 (g * w past float32's 3.4e38, half the time),
    W about 1e12: the kernel's (g / W) * w is finite, the page's (g * w) / W overflows to inf first.
    For FLOAT and BFLOAT16 inputs and outs, whose range holds the result (about 1e26)."""
    d = _uniform(sig)
    d["gradOutput"] = Sprinkle(Binades(1e25, 1e27), (-1e26,), 0.3)
    d["weight"] = Binades(1e12, 1e13)
    d["totalWeight"] = Binades(1e12, 1e13)
    return d


def _tiny(sig: Signature) -> Dict[str, Dist]:
    """Results around out's smallest normal: g near it, w about 1, W about 1 (mean's quotient stays
    normal in float32; only the cast to a 16-bit out goes subnormal)."""
    t = dtypes.finfo(dtypes.dtype_of(sig.out_dtype)).tiny
    g_tiny = dtypes.finfo(dtypes.dtype_of(sig.dtypes["gradOutput"])).tiny
    d = _uniform(sig)
    d["gradOutput"] = Binades(max(t / 16.0, g_tiny), 16.0 * max(t, g_tiny))
    d["weight"] = Uniform(0.5, 2.0)
    d["totalWeight"] = Uniform(0.5, 2.0)
    return d


class NLLLossBackward(LossBackward):
    name = NAME
    # The vendor's system tests [cases import]: the kernel NLLLossGrad takes (x, y_grad, target,
    # weight, total_weight) (ops-nn @e5c3fa93 loss/nll_loss_grad/op_graph/nll_loss_grad_proto.h).
    vendor = VendorNames(ttk="nll_loss_grad", ttk_inputs=("self", "gradOutput", "target", "weight", "totalWeight"),
                         ttk_attrs={"ignore_index": "ignoreIndex"},
                         ttk_defaults={"reduction": "mean", "ignore_index": -100})
    inputs = ("gradOutput", "self", "target", "weight", "totalWeight")
    attributes = (Attr("ignoreIndex", int, (-100, 0), -100, ignore_token),)
    # The header's order: totalWeight comes after the two attributes [NLLB-HDR].
    c_params = (("gradOutput", "tensor", None), ("self", "tensor", None), ("target", "tensor", None),
                ("weight", "tensor", None), ("reduction", "int64", 1), ("ignoreIndex", "int64", -100),
                ("totalWeight", "tensor", None))
    product_dtypes = LOSS_DTYPES
    row_out = "self"
    # self gives out's shape and the dtype list; its values are never read [NLLB-950-KERNEL].
    reads = ("gradOutput", "target", "weight", "totalWeight")
    # target is compared with the class coordinate as an integer, as the kernels do; never a float.
    indices = ("target", "cls")
    value_sets = {name: fitted(f) for name, f in (("uniform", _uniform), ("specials", _specials),
                                                   ("all_ignored", _all_ignored), ("order", _order),
                                                   ("tiny", _tiny))}
    tiling_names = ("normal_c", "col_tile")

    def tiling(self, hw, dts) -> Dict[str, int]:
        """The A2/A3 experimental kernel's tiling [NLLB-EXP-TILING], the suite's estimate for every
        product: "normal" mode holds whole rows while 8 C + 2 s + 8 bytes fit in the UB less 9 KiB
        and the weight row (4 ceil8(C), a further 2 ceil8(C) for BFLOAT16; s the target's element
        size), C up to `normal_c`; past it rows go in column tiles of `col_tile` FLOAT elements
        (floor8((UB - 9 KiB) / 4), / 6 for BFLOAT16). FLOAT16 inputs reach it cast to FLOAT."""
        s = dtypes.dtype_of(dts["target"]).itemsize
        bf = dts["self"] == "bfloat16"
        room = hw.ub_bytes - 9 * 1024
        return {"normal_c": (room - 2 * s - 8) // (14 if bf else 12),
                "col_tile": room // (6 if bf else 4) // 8 * 8}

    # -- contract -------------------------------------------------------------------------------
    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        """self's shape (the page's "Parameters")."""
        s = shapes.get("self")
        return None if s is None else tuple(s)

    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        """The terms live on self's shape: one per (sample, class)."""
        s = shapes.get("self")
        return None if s is None else tuple(s)

    def check(self, sig: Signature) -> Rejection:
        """The page's phase-1 table, rows 1 to 15, in the code's order [NLLB-API]."""
        bad = self._nulls(sig)                                                        # row 1
        if bad:
            return bad
        x = sig.dtypes["self"]
        for row, n in ((2, "weight"), (3, "gradOutput"), (4, "totalWeight")):
            if sig.dtypes[n] != x:
                return INVALID, f"{n}'s dtype {sig.dtypes[n]} differs from self's {x} (row {row})"
        if not can_cast(x, sig.out_dtype):                                            # row 5
            return INVALID, f"self's {x} cannot be cast to out's {sig.out_dtype} (row 5)"
        bad = target_rows(self, sig, 6)                                               # rows 6 to 10
        if bad:
            return bad
        s, t, w = sig.shapes["self"], sig.shapes["target"], sig.shapes["weight"]
        if not (len(s) == 1 and len(t) == 0) and (not t or s[0] != t[0]):             # row 11
            return INVALID, f"target {t} does not match self {s} in dimension 0"
        if len(w) != 1 or w[0] != s[-1]:                                              # row 12
            return INVALID, f"weight {w} is not 1-D of length C = {s[-1]}"
        if numel(sig.shapes["totalWeight"]) != 1:                                     # row 13
            return INVALID, f"totalWeight {sig.shapes['totalWeight']} does not have exactly one element"
        g = sig.shapes["gradOutput"]
        if sig.attrs["reduction"] == 0 and len(s) == 2:                               # row 14
            if len(g) != 1 or g[0] != s[0]:
                return INVALID, f"gradOutput {g} is not [N] = [{s[0]}] under none"
        elif len(g) > 1 or numel(g) != 1:
            return INVALID, f"gradOutput {g} is not one element of rank 0 or 1"
        if tuple(sig.out_shape) != tuple(s):                                          # row 15
            return INVALID, f"out shape {tuple(sig.out_shape)} is not self's {tuple(s)}"
        return 0, ""

    def outside_contract(self, sig: Signature) -> Optional[str]:
        """Calls phase 1 accepts whose result the page leaves open: a 2-D self with a 0-d target
        (row 11 reads dimension 0 of a 0-d shape: opbase's answer), a 1-D self with a target of
        C > 1 elements (the 950 kernel reads only the first), an ignoreIndex outside INT32 (the
        op API's INT32 cast of the target; not established), and a BFLOAT16 out on a product
        without BFLOAT16 (not list-checked; not established)."""
        s, t = sig.shapes.get("self"), sig.shapes.get("target")
        if s is not None and t is not None:
            if len(s) == 2 and len(t) == 0:
                return "a 2-D self with a 0-d target: row 11 reads dimension 0 of a 0-d shape"
            if len(s) == 1 and len(t) == 1 and t[0] == s[0] > 1:
                return "a 1-D self with a 1-D target of more than one element"
        ig = sig.attrs.get("ignoreIndex", -100)
        if not INT32[0] <= ig <= INT32[1]:
            return f"ignoreIndex {ig} outside INT32 (the op API casts the target to INT32)"
        listed = self.product_dtypes.get(sig.product, frozenset())
        if sig.out_dtype == "bfloat16" and "bfloat16" not in listed and sig.dtypes.get("self") in listed:
            return f"a BFLOAT16 out on {sig.product} is not established"
        return None

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """FLOAT16 inputs are computed in FLOAT and rounded once, to out's dtype; BFLOAT16 inputs
        give a BFLOAT16 result that is then cast (the page's "How the vendor kernel computes")."""
        return "bfloat16" if dts.get("self") == "bfloat16" else "float32"

    # -- numbers --------------------------------------------------------------------------------
    def operands(self, x, attrs):
        """target and gradOutput (one per sample) as columns [N, 1] beside the terms [N, C], weight
        [C] as it is, totalWeight as its one value, and the class coordinate `cls` [C]. A 1-D self
        is one sample: its target is its first (only) element."""
        s = x["self"]
        two = np.ndim(s) == 2
        t = np.asarray(x["target"])
        return {"gradOutput": per_row(x["gradOutput"]) if two else np.asarray(x["gradOutput"]),
                "target": per_row(t) if two else t.reshape(-1)[:1].reshape(()),
                "weight": x["weight"], "totalWeight": np.asarray(x["totalWeight"]).reshape(()),
                "cls": class_coordinate(np.shape(s)[-1])}

    def _hit(self, x, attrs) -> np.ndarray:
        """Where a term is written: its class is the sample's target, which is not ignoreIndex."""
        return (x["cls"] == x["target"]) & (x["target"] != attrs["ignoreIndex"])

    def terms(self, x, attrs, shapes) -> np.ndarray:
        g, w = x["gradOutput"], x["weight"]
        v = w * (g / x["totalWeight"]) if attrs["reduction"] == 1 else w * g
        return np.where(self._hit(x, attrs), -v, 0.0)

    # The vendor kernel's FLOAT computation, in override points a planted defect replaces.
    def _value32(self, x, attrs) -> np.ndarray:
        """q = g / W once, in FLOAT, then q * w (mean); g * w otherwise: one FLOAT product, negated
        [NLLB-950-KERNEL] [NLLB-EXP-KERNEL]."""
        g, w = x["gradOutput"], x["weight"]
        if attrs["reduction"] == 1:
            return -ftz(ftz(g / x["totalWeight"]) * w)
        return -ftz(g * w)

    def reference_terms(self, x, attrs, shapes) -> np.ndarray:
        """Zero fill, then the written element of each row (+0 off it, whatever g and w hold)."""
        return np.where(self._hit(x, attrs), self._value32(x, attrs), np.float32(0.0))

    def describe(self, x, attrs, out_shape, index) -> str:
        ops = self.operands({n: a for n, a in x.items() if a is not None}, attrs)
        at = {n: np.broadcast_to(a, out_shape)[index] for n, a in ops.items()}
        t, c = int(at["target"]), int(at["cls"])
        if t == attrs["ignoreIndex"]:
            return f"target={t} is ignoreIndex: the row stays +0"
        if c != t:
            return f"class {c} is not the target {t}: +0"
        how = {0: "-w * g", 2: "-w * g", 1: "-w * (g / totalWeight)"}.get(attrs["reduction"], "?")
        return (f"{how} with gradOutput={float(at['gradOutput'])!r}, weight[{t}]={float(at['weight'])!r}, "
                f"totalWeight={float(at['totalWeight'])!r}")

    def torch(self, torch, t, attrs, device):
        """aten's nll_loss_backward, the same parameters as the op API (grad_output, self, target,
        weight, reduction, ignore_index, total_weight): its CPU kernel forms -(g / W) under mean
        and multiplies by w[t], the vendor's order, and leaves the other elements 0. Where PyTorch
        differs from the contract, adjusted here: aten takes only INT64 (or UINT8) targets (cast
        exactly), a 0-d target with a 1-D self (the contract's [1] is its one element), and a
        0-d or [1] gradOutput under mean and sum (kept); torch's own nll_loss forward recomputes
        the mean's divisor from target and weight, the backward here takes totalWeight as given."""
        x, tgt = t["self"], t["target"].to(torch.int64)
        if x.dim() == 1:
            tgt = tgt.reshape(-1)[:1].reshape(())
        reduction = self.torch_reduction(attrs)
        g = t["gradOutput"] if reduction == 0 and x.dim() == 2 else t["gradOutput"].reshape(())
        return torch.ops.aten.nll_loss_backward(g, x, tgt, t["weight"], reduction, int(attrs["ignoreIndex"]),
                                                t["totalWeight"].reshape(()))

    # -- the page's phase-1 table ---------------------------------------------------------------
    def sig(self, out: Any = "default", dt: str = "float32", odt: Optional[str] = None,
            product: str = "atlas-a2", **given: Any) -> Signature:
        """A page-table row: N = 2, C = 3 unless a shape is given (s=, t=, w=, g=, tw=: totalWeight),
        target INT64 (tdt=), gradOutput [N] under none and [] otherwise, reduction none."""
        red = given.pop("reduction", 0)
        ig = given.pop("ignoreIndex", -100)
        s = given.pop("s", (2, 3))
        default_t = (s[0],) if s is not None and len(s) == 2 else ()
        shapes = {"gradOutput": given.pop("g", default_t if red == 0 else ()), "self": s,
                  "target": given.pop("t", default_t), "weight": given.pop("w", (s[-1],) if s else (3,)),
                  "totalWeight": given.pop("tw", ())}
        dts = {"gradOutput": given.pop("gdt", dt), "self": given.pop("sdt", dt), "target": given.pop("tdt", "int64"),
               "weight": given.pop("wdt", dt), "totalWeight": given.pop("twdt", dt)}
        if given:
            raise TypeError(f"{self.name}.sig: unknown {', '.join(sorted(given))}")
        if out == "default":
            out = s if s is not None else (2, 3)
        return Signature(shapes, dts, out, odt or dts["self"] or dt, {"reduction": red, "ignoreIndex": ig}, product)

    # The family's row helpers name each tensor by its initial; target and totalWeight share one.
    _KEYS = {"gradOutput": "g", "self": "s", "target": "t", "weight": "w", "totalWeight": "tw"}

    def null_rows(self) -> Dict[str, Tuple[Signature, int]]:
        """'<input> NULL' for each input (weight included: it is required), then 'out NULL'."""
        return keyed_null_rows(self, self._KEYS)

    def rank_rows(self, names=()) -> Dict[str, Tuple[Signature, int]]:
        """'<tensor> 9-d' for each of `names`: 161002 by the tensor's own shape row (9, 10, 12, 13,
        14 or 15)."""
        return keyed_rank_rows(self, self._KEYS, names)

    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        reject = {
            "gradOutput NULL": (sig(g=None), NULLPTR),
            "self NULL (and nothing else checked)": (sig(s=None, t=(2,), w=(3,)), NULLPTR),
            "target NULL": (sig(t=None), NULLPTR),
            "weight NULL (required)": (sig(w=None), NULLPTR),
            "totalWeight NULL": (sig(tw=None), NULLPTR),
            "out NULL": (sig(out=None), NULLPTR),
            "NULL before a bad reduction": (sig(w=None, reduction=3), NULLPTR),
            "weight float16 with float32 self (row 2)": (sig(wdt="float16"), INVALID),
            "gradOutput float16 (row 3)": (sig(gdt="float16"), INVALID),
            "totalWeight float16 (row 4)": (sig(twdt="float16"), INVALID),
            "int32 out (row 5)": (sig(odt="int32"), INVALID),
            "bool out (row 5)": (sig(odt="bool"), INVALID),
            "bfloat16 on atlas-training (row 6)": (sig(dt="bfloat16", product="atlas-training"), INVALID),
            "bfloat16 on atlas-inference (row 6)": (sig(dt="bfloat16", odt="float32", product="atlas-inference"),
                                                    INVALID),
            "int32 self, weight, totalWeight, float32 gradOutput (row 3)": (sig(dt="int32", gdt="float32"), INVALID),
            "all int32 floats (row 6)": (sig(dt="int32", odt="float32"), INVALID),
            "float32 target (row 7)": (sig(tdt="float32"), INVALID),
            "int16 target (row 7)": (sig(tdt="int16"), INVALID),
            "bool target (row 7)": (sig(tdt="bool"), INVALID),
            "reduction 3 (row 8)": (sig(reduction=3, g=()), INVALID),
            "reduction -1 (row 8)": (sig(reduction=-1, g=()), INVALID),
            "target dtype before reduction (row 7, then 8)": (sig(tdt="float32", reduction=3), INVALID),
            "0-d self (row 9)": (sig(s=(), t=(), w=(1,), out=()), INVALID),
            "3-d self (row 9)": (sig(s=(2, 3, 4), t=(2,), w=(4,), g=(2,)), INVALID),
            "2-d target (row 10)": (sig(t=(2, 1)), INVALID),
            "target length differs from N (row 11)": (sig(t=(3,)), INVALID),
            "1-d self, target length differs from C (row 11)": (sig(s=(3,), t=(2,), g=()), INVALID),
            "weight of length C + 1 (row 12)": (sig(w=(4,)), INVALID),
            "2-d weight (row 12)": (sig(w=(1, 3)), INVALID),
            "0-d weight (row 12)": (sig(w=()), INVALID),
            "totalWeight of two elements (row 13)": (sig(tw=(2,)), INVALID),
            "totalWeight empty (row 13)": (sig(tw=(0,)), INVALID),
            "none: gradOutput [] with 2-d self (row 14)": (sig(g=()), INVALID),
            "none: gradOutput [N + 1] (row 14)": (sig(g=(3,)), INVALID),
            "mean: gradOutput [N] with N = 2 (row 14)": (sig(reduction=1, g=(2,)), INVALID),
            "sum: gradOutput [1, 1] (row 14)": (sig(reduction=2, g=(1, 1)), INVALID),
            "none with 1-d self: gradOutput [2] (row 14)": (sig(s=(3,), t=(), g=(2,)), INVALID),
            "out of another shape (row 15)": (sig(out=(3, 2)), INVALID),
            "out with an extra axis (row 15)": (sig(out=(1, 2, 3)), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950 (DAV_3510: the three-dtype list)": sig(dt="bfloat16", product="ascend-950"),
            "none, float32": sig(),
            "mean, 0-d gradOutput and totalWeight": sig(reduction=1),
            "sum, gradOutput [1], totalWeight [1, 1]": sig(reduction=2, g=(1,), tw=(1, 1)),
            "int32 target": sig(tdt="int32"),
            "uint8 target": sig(tdt="uint8"),
            "float16 on atlas-inference": sig(dt="float16", product="atlas-inference"),
            "bfloat16 on atlas-a3": sig(dt="bfloat16", product="atlas-a3"),
            "float32 into a float16 out (the vendor's case_020)": sig(reduction=1, odt="float16"),
            "float16 into a float32 out": sig(dt="float16", odt="float32", product="atlas-training"),
            "1-d self, 0-d target": sig(s=(5,), t=(), g=()),
            "1-d self [1], target [1] (the vendor's case_004)": sig(s=(1,), t=(1,), g=(1,)),
            "empty N (the vendor's case_017)": sig(s=(0, 4), t=(0,), g=(0,)),
            "empty N under mean (case_019)": sig(s=(0, 4), t=(0,), reduction=1),
            "C = 0 is not rejected": sig(s=(2, 0), t=(2,), w=(0,)),
            "ignoreIndex inside [0, C)": sig(ignoreIndex=1),
        }
        # (a 2-D self with a 0-d target is outside the contract with an unknown status: no row)
        outside = {
            "1-d self [3], target [3]": sig(s=(3,), t=(3,), g=()),
            "bfloat16 out of float32 on atlas-training": sig(odt="bfloat16", product="atlas-training"),
            "ignoreIndex past INT32": sig(ignoreIndex=1 << 32),
        }
        return table(reject, accept, outside)


OP = NLLLossBackward()
