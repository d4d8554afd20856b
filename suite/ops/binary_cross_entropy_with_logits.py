"""aclnnBinaryCrossEntropyWithLogits: -w [pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))] on
self's shape (target of self's shape; the weight and posWeight optional, NULL: ones, each
broadcasting to target's shape), returned as it is (none), summed (sum) or summed and divided by
numel(self) (mean); out is self's shape for none and 0-d otherwise
(docs/operators/BinaryCrossEntropyWithLogits.md)."""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, Unsupported
from suite.ops.base import MAX_RANK, Example, Rejection, Signature, broadcast, ftz, numel, table
from suite.ops.loss import R8, LossForward
from suite.ops.records import VendorNames
from suite.values import sets as V
from suite.values.draw import Dist, Sprinkle, Uniform

WEIGHTS = ("weight", "posWeight")


def _uniform(sig: Signature) -> Dict[str, Dist]:
    """logits in [-5, 5), target in [0, 1), the weights in [0, 2)."""
    lo = {"self": -5.0, "target": 0.0, "weight": 0.0, "posWeight": 0.0}
    hi = {"self": 5.0, "target": 1.0, "weight": 2.0, "posWeight": 2.0}
    return {n: Uniform(lo[n], hi[n]) for n in sig.shapes if sig.shapes[n] is not None}


def _large(sig: Signature) -> Dict[str, Dist]:
    """|logits| in [20, 1e4): exp(-|x|) underflows float32 (past 103), log(1 + exp(-|x|)) is 0 and
    the term (1 - t) x - min(x, 0) stays finite in every dtype (< 65504)."""
    d = _uniform(sig)
    d["self"] = Sprinkle(Uniform(20.0, 1e4), (-20.0, -1e4, -5e3), 0.5)
    return d


def _specials(sig: Signature) -> Dict[str, Dist]:
    """NaN, +-inf and +-0 in every input."""
    return {n: Sprinkle(v, V.SPECIALS, 0.2) for n, v in _uniform(sig).items()}


class BinaryCrossEntropyWithLogits(LossForward):
    """The forward family's contract with the C signature self, target, weightOptional,
    posWeightOptional, int64 reduction, out [BCEL-H]; checks in CheckParams' order [BCEL-API]."""

    name = "BinaryCrossEntropyWithLogits"
    # The vendor's system tests [cases import]: the kernel SigmoidCrossEntropyWithLogitsV2 takes
    # (predict, target, weight, pos_weight) and a string reduction, default mean (ops-nn @e5c3fa93
    # loss/sigmoid_cross_entropy_with_logits_v2/op_host/sigmoid_cross_entropy_with_logits_v2_def.cpp).
    vendor = VendorNames(atk_names={"weightOptional": "weight", "posWeightOptional": "posWeight"}, ttk="sigmoid_cross_entropy_with_logits_v2",
                         ttk_inputs=("self", "target", "weight", "posWeight"), ttk_defaults={"reduction": "mean"})
    inputs = ("self", "target", "weight", "posWeight")
    optional = WEIGHTS
    row_out = "self"
    value_sets = {"uniform": _uniform, "large": _large, "specials": _specials}
    # The TBE families' reduce schedule is not public; the API list's determinism is for A2/A3 and
    # the 950 (the page's "Determinism").
    nondeterministic = {p: {"reduction": (1, 2)} for p in ("atlas-training", "atlas-inference")}
    term_text = "-w (pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x)))"
    divisor_text = {1: " / numel(self)"}

    # -- contract -------------------------------------------------------------------------------
    def check(self, sig: Signature) -> Rejection:
        """CheckParams of [BCEL-API] in its order (the page's rows 1 to 6), then out under none."""
        bad = self._nulls(sig) or self._unsupported_dtype(sig, ["self", "target", "out"])
        if bad:
            return bad
        if sig.out_dtype != sig.dtypes["target"]:
            return INVALID, f"out is {sig.out_dtype}, not target's {sig.dtypes['target']}"
        bad = self._reduction(sig) or self._rank(sig, with_out=False)
        if bad:
            return bad
        s, t = tuple(sig.shapes["self"]), tuple(sig.shapes["target"])
        if s != t:
            return INVALID, f"target {t} is not self's shape {s}"
        if numel(t) == 0:                       # empty: no broadcast check, the fill takes out's shape
            return 0, ""
        for n in WEIGHTS:
            w = sig.shapes.get(n)
            if w is not None and broadcast(w, t) is None:
                return INVALID, f"{n} {tuple(w)} does not broadcast to target {t}"
        if sig.attrs["reduction"] == 0 and tuple(sig.out_shape) != s:
            return INVALID, f"out shape {tuple(sig.out_shape)} is not self's {s} (none)"
        return 0, ""

    def outside_contract(self, sig: Signature) -> Optional[str]:
        if sig.out_shape is None or any(sig.shapes.get(n) is None for n in ("self", "target")) or self.check(sig)[0]:
            return None
        s, out = tuple(sig.shapes["self"]), tuple(sig.out_shape)
        for n in WEIGHTS:
            w = sig.shapes.get(n)
            if w is None:
                continue
            if sig.dtypes[n] not in self.product_dtypes[sig.product]:
                return f"{n} {sig.dtypes[n]}: the op API checks no dtype of it (cast to P), undocumented"
            if numel(s) and broadcast(w, s) != s:
                return f"{n} {tuple(w)} broadcasts past self {s}: the kernel's output shape then, not established"
        if sig.attrs["reduction"] != 0 and (numel(out) != 1 or len(out) > MAX_RANK):
            return f"out {out} under mean or sum: the op API checks no shape (a warning), the copy undocumented"
        if sig.attrs["reduction"] == 0 and numel(s) == 0 and out != s:
            return f"empty none into out {out}: the op API returns without a check, undocumented"
        return None

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """The inputs are cast to P = promote(self, target); the l0 op's result is FLOAT for any P
        [BCEL-L0], cast once to out's dtype [BCEL-API]."""
        return "float32"

    # -- numbers ----------------------------------------------------------------------------------
    def b_shape(self, shapes) -> Optional[Tuple[int, ...]]:
        """self's shape (the weights broadcast to it)."""
        s = shapes.get("self")
        return None if s is None else tuple(s)

    none_shape = b_shape

    def loss(self, x, attrs) -> np.ndarray:
        s, t = x["self"], x["target"]
        with np.errstate(over="ignore", invalid="ignore"):
            ls = np.minimum(s, 0.0) - np.log1p(np.exp(-np.abs(s)))          # log sigmoid(x)
            if "posWeight" in x:
                ls = ls * ((x["posWeight"] - 1.0) * t + 1.0)
            r = (1.0 - t) * s - ls
            return r * x["weight"] if "weight" in x else r

    def reference_loss(self, x, attrs) -> np.ndarray:
        """The 950's kernel in FLOAT [BCEL-DAG]: m = min(x, 0); l = ln(exp(-|x|) + 1); ls = m - l;
        ls = ls * ((pw - 1) * y + 1); r = (1 - y) * x - ls; r = r * w."""
        one = np.float32(1.0)
        s, t = x["self"], x["target"]
        with np.errstate(over="ignore", invalid="ignore"):
            ls = ftz(np.minimum(s, np.float32(0)) - ftz(np.log(ftz(ftz(np.exp(-np.abs(s))) + one))))
            if "posWeight" in x:
                ls = ftz(ls * ftz(ftz(ftz(x["posWeight"] - one) * t) + one))
            r = ftz(ftz(ftz(one - t) * s) - ls)
            return ftz(r * x["weight"]) if "weight" in x else r

    def torch(self, torch, t, attrs, device):
        """aten's binary_cross_entropy_with_logits; it refuses a weight that does not broadcast to an
        empty self, which the op API does not check: Unsupported, a skip."""
        s = tuple(t["self"].shape)
        if any(n in t and broadcast(tuple(t[n].shape), s) != s for n in WEIGHTS):
            raise Unsupported("torch backend: aten refuses a weight that does not broadcast to an empty self")
        return torch.ops.aten.binary_cross_entropy_with_logits(t["self"], t["target"], t.get("weight"),
                                                               t.get("posWeight"), self.torch_reduction(attrs))

    # -- the page's phase-1 table -------------------------------------------------------------
    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        reject = {
            **self.null_rows(),
            "NULL before a bad dtype and reduction 3 (row 1)": (sig(s=None, dt="bfloat16", product="atlas-training",
                                                                   reduction=3), 161001),
            "self bfloat16 on atlas-training (row 2)": (sig(sdt="bfloat16", odt="float32", w=None, p=None,
                                                        product="atlas-training"), INVALID),
            "target bfloat16 on atlas-inference (row 2)": (sig(tdt="bfloat16", odt="bfloat16", product="atlas-inference"),
                                                           INVALID),
            "out float16, target float32 (row 2)": (sig(odt="float16"), INVALID),
            **self.reduction_rows(),
            "reduction before shapes (row 3)": (sig(reduction=3, t=(2, 4)), INVALID),
            **self.rank_rows(),
            "target of another shape (row 5)": (sig(t=(3,)), INVALID),
            "weight that does not broadcast (row 5)": (sig(w=(4,)), INVALID),
            "posWeight that does not broadcast (row 5)": (sig(p=(2, 2)), INVALID),
            "none: out transposed (row 6)": (sig(out=(3, 2)), INVALID),
        }
        accept = {
            "weight and posWeight NULL": sig(w=None, p=None),
            "weight [3], posWeight [2, 1]": sig(w=(3,), p=(2, 1)),
            "bfloat16 on atlas-a2": sig(dt="bfloat16"),
            "bfloat16 on ascend-950": sig(dt="bfloat16", product="ascend-950"),
            "self float16, target and out float32": sig(sdt="float16", tdt="float32", odt="float32"),
            "weights float16 with float32 inputs": sig(wdt="float16", pdt="float16"),
            "mean, out 0-d": sig(reduction=1, out=()),
            "sum, out [1]": sig(reduction=2, out=(1,)),
            "0-d everything": sig(s=(), t=(), w=(), p=(), out=()),
            "8-d": sig(s=R8, t=R8, w=R8, p=R8, out=R8),
            "empty self, weight that does not broadcast": sig(s=(0, 3), t=(0, 3), w=(4,), out=(0, 3)),
            "empty mean: NaN": sig(s=(0, 3), t=(0, 3), reduction=1, out=()),
        }
        outside = {
            "weight broadcasting past self": sig(w=(4, 2, 3)),
            "weight int32": sig(wdt="int32"),
            "mean into out [2, 3]": sig(reduction=1),
            "empty none into out [5]": sig(s=(0, 3), t=(0, 3), out=(5,)),
        }
        return table(reject, accept, outside)


OP = BinaryCrossEntropyWithLogits()
