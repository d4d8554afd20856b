"""aclnnNLLLoss: for each sample n whose class index t_n is not ignoreIndex, the term
l_n = -w[t_n] * self[n, t_n]; out is the terms (none, [N] with a 2-D self), their sum (sum) or their
sum divided by the sum of the weights of the samples that take part (mean); a second output,
totalWeightOut, receives that weight sum under mean and sum and is left untouched under none
(docs/operators/NLLLoss.md). A gather along the class axis: the terms live on [N] (one per sample),
self's row and weight are read at t_n only (Operator.operands), so NaN or infinity in classes no
target selects never reaches the result. The mean's divisor is data (the weight sum), so the golden
divides each term by the exact weight sum W and the reference kernel divides its FLOAT sum of terms
by its FLOAT sum of weights, as the kernels do."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.common import blocks as B
from suite.common import dtypes
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.ops.records import VendorNames
from suite.ops.base import (LOSS_DTYPES, Attr, Example, Golden, Rejection, Shape, Signature, flushing, ftz,
                            numel, present, table, to_out)
from suite.ops.class_index import INT32, classes, fitted, gather, ignore_token, keyed_rank_rows, target_rows
from suite.ops.loss import LossBackward
from suite.ops.records import sum_golden
from suite.ops.walk import float32_sum
from suite.ops.promotion import can_cast
from suite.values import sets as V
from suite.values.draw import Binades, Choice, Dist, Sprinkle, Uniform
from suite.values.exact import Integers

NAME = "NLLLoss"
TOTAL = "totalWeightOut"


# -- value sets ----------------------------------------------------------------------------------
def _uniform(sig: Signature) -> Dict[str, Dist]:
    """self U[-5, 5) (scores of both signs: the sum cancels), weights positive U[0.25, 2) (the mean's
    divisor well away from 0), targets in [0, C) with about a tenth ignoreIndex."""
    return {"self": Uniform(-5.0, 5.0), "target": classes(sig), "weight": Uniform(0.25, 2.0)}


def _unit_weights(sig: Signature) -> Dict[str, Dist]:
    """Every weight exactly 1: the mean's divisor is the count of samples that take part (exact in
    FLOAT below 2^24), and totalWeightOut that count; a weight sum accumulated in BFLOAT16 stops at
    256. self log-probabilities in [-10, 0) (terms all positive: no cancellation)."""
    return {"self": Uniform(-10.0, 0.0), "target": classes(sig), "weight": Choice((1.0,))}


def _specials(sig: Signature) -> Dict[str, Dist]:
    """self half NaN, +-inf and +-0: only the gathered positions of samples that take part may
    reach out (a one-hot multiply over the row turns 0 * inf into NaN); weights with +-0."""
    d = _uniform(sig)
    d["self"] = Sprinkle(Uniform(-5.0, 5.0), V.SPECIALS, 0.5)
    d["weight"] = Sprinkle(Uniform(0.25, 2.0), (0.0, -0.0), 0.2)
    return d


def _all_ignored(sig: Signature) -> Dict[str, Dist]:
    """Every target is ignoreIndex: none gives all +0, sum 0 and a weight sum 0, mean 0/0 = NaN
    (the page's "Result"). self with NaN: a kernel that reads a left-out sample's score shows it."""
    d = _uniform(sig)
    v = sig.attrs["ignoreIndex"]
    d["target"] = Integers(v, v)
    d["self"] = Sprinkle(Uniform(-5.0, 5.0), (float("nan"),), 0.3)
    return d


def _negative_weights(sig: Signature) -> Dict[str, Dist]:
    """Weights of both signs, U[-1, 1) as the vendor's tests draw them (none and sum: a mean's
    divisor may then cancel to nothing, which the page leaves a plain division)."""
    d = _uniform(sig)
    d["weight"] = Uniform(-1.0, 1.0)
    return d


def _large(sig: Signature) -> Dict[str, Dist]:
    """Scores and weights up to about 2^60 and 2^10 where out is 16-bit: FLOAT16 self is summed
    in FLOAT, only the final cast overflows past 65504 (FLOAT inputs: terms up to 1e30)."""
    d = _uniform(sig)
    half = V.narrowest([sig.dtypes.get("self") or "float32", sig.out_dtype or "float32"]) == "float16"
    d["self"] = Binades(1e2, 6e4) if half else Binades(1e20, 1e30)
    d["weight"] = Uniform(1.0, 2.0)
    return d


class NLLLoss(LossBackward):
    """The loss family's helpers (reduction check, torch guard, page-table rows) serve this forward;
    its C signature is self, target, weight, int64 reduction, int64 ignoreIndex, then the two
    outputs out and totalWeightOut [NLL-HDR]."""

    name = NAME
    # The vendor's system tests [cases import]: the kernel NLLLoss takes (x, target, weight) and
    # writes (y, total_weight) (ops-nn @e5c3fa93 loss/nll_loss/op_graph/nll_loss_proto.h).
    vendor = VendorNames(ttk="nll_loss", ttk_inputs=("self", "target", "weight"),
                         ttk_attrs={"ignore_index": "ignoreIndex"},
                         ttk_defaults={"reduction": "mean", "ignore_index": -100})
    inputs = ("self", "target", "weight")
    attributes = (Attr("ignoreIndex", int, (-100, 0), -100, ignore_token),)
    outputs = ("out", TOTAL)
    product_dtypes = LOSS_DTYPES
    row_out = "self"
    # target is compared with ignoreIndex as an integer, as the kernels do; never a float.
    indices = ("target",)
    value_sets = {name: fitted(f) for name, f in (("uniform", _uniform), ("unit_weights", _unit_weights),
                                                  ("specials", _specials), ("all_ignored", _all_ignored),
                                                  ("negative_weights", _negative_weights), ("large", _large))}
    tiling_names = ("vector_rows", "ub_c")
    # The TBE kernel the four families run adds each core's partial sums into the two outputs by
    # atomic add; ops-nn's API list says nondeterministic by default on A2/A3, the operator's page
    # on training and inference too (the page's "Determinism"): none is elementwise. The Ascend 950
    # kernel sums without atomics, deterministic by default there [NLL-950-SIMT] [OP-LIST].
    nondeterministic = {p: {"reduction": (1, 2)} for p in ("atlas-training", "atlas-inference",
                                                           "atlas-a2", "atlas-a3")}

    def tiling(self, hw, dts) -> Dict[str, int]:
        """The A2/A3 experimental kernel's tiling [NLL-EXP-TILING], the suite's estimate for every
        product: a core takes the vector path from `vector_rows` = 128 rows; the weight row
        (C (e + 4) + 256 bytes) and one self row (C e + 320) stay in the UB, so C up to
        `ub_c` = (UB - 576) / (2 e + 4) fits (about 16 300 FLOAT on A2); e the compute dtype's size
        (FLOAT16 reaches the kernel as FLOAT)."""
        e = 2 if dts.get("self") == "bfloat16" else 4
        return {"vector_rows": 128, "ub_c": (hw.ub_bytes - 576) // (2 * e + 4)}

    # -- contract -------------------------------------------------------------------------------
    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        """[N] under none with a 2-D self; otherwise one element, () (the code accepts [1] too)."""
        s = shapes.get("self")
        if s is None:
            return None
        return (s[0],) if len(s) == 2 and attrs.get("reduction") == 0 else ()

    def output_shape(self, name: str, shapes: Mapping[str, Optional[Shape]],
                     attrs: Mapping[str, Any]) -> Optional[Shape]:
        """totalWeightOut: one element, () (any one-element shape passes row 13)."""
        return () if name == TOTAL else super().output_shape(name, shapes, attrs)

    def output_dtype(self, name: str, dts: Mapping[str, Optional[str]], out_dtype: Optional[str],
                     attrs: Mapping[str, Any]) -> Optional[str]:
        """totalWeightOut in out's dtype, except for BFLOAT16 inputs: BFLOAT16, the dtype the kernel
        writes it in (a FLOAT totalWeightOut would carry BFLOAT16 precision, which the second
        output's judging, in its own dtype, cannot tell from an error)."""
        if name != TOTAL:
            return super().output_dtype(name, dts, out_dtype, attrs)
        return "bfloat16" if dts.get("self") == "bfloat16" and out_dtype is not None else out_dtype

    def writes(self, name: str, attrs: Mapping[str, Any]) -> bool:
        """Under none the op API copies nothing into totalWeightOut [NLL-API]."""
        return name != TOTAL or attrs.get("reduction") != 0

    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        """One term per sample: [N] for a 2-D self, () for a 1-D one (one sample)."""
        s = shapes.get("self")
        if s is None:
            return None
        return (s[0],) if len(s) == 2 else ()

    def check(self, sig: Signature) -> Rejection:
        """The page's phase-1 table, rows 1 to 14, in the code's order [NLL-API]."""
        bad = self._null_rows(sig) or self._dtype_rows(sig, 2)                       # rows 1 to 4
        if bad:
            return bad
        tw_shape = sig.output(TOTAL)[0]
        bad = target_rows(self, sig, 5)                                               # rows 5 to 9
        if bad:
            return bad
        s, t, w = sig.shapes["self"], sig.shapes["target"], sig.shapes["weight"]
        if not ((len(s) == 1 and len(t) == 0) or (len(s) == 2 and len(t) == 1 and t[0] == s[0])):  # row 10
            return INVALID, f"target {t} does not match self {s} (1-D self with 0-d target, or [N, C] with [N])"
        if len(w) != 1 or w[0] != s[-1]:                                              # row 11
            return INVALID, f"weight {w} is not 1-D of length C = {s[-1]}"
        out = tuple(sig.out_shape)
        if sig.attrs["reduction"] == 0 and len(s) == 2:                               # row 12
            if out != (s[0],):
                return INVALID, f"out {out} is not [N] = [{s[0]}] under none"
        elif len(out) > 1 or numel(out) != 1:
            return INVALID, f"out {out} is not one element of rank 0 or 1"
        if numel(tw_shape) != 1:                                                      # row 13
            return INVALID, f"totalWeightOut {tuple(tw_shape)} does not have exactly one element"
        if numel(s) == 0 and s[-1] == 0 and numel(t) > 0:                             # row 14
            return INVALID, f"self {s} has no classes while target {t} has elements (Target is out of bounds)"
        return 0, ""

    def _null_rows(self, sig: Signature) -> Optional[Rejection]:
        """Row 1: a NULL tensor, then a NULL totalWeightOut (161001)."""
        bad = self._nulls(sig)
        if bad:
            return bad
        if sig.outputs is None or sig.output(TOTAL)[0] is None:
            return NULLPTR, "totalWeightOut is NULL"
        return None

    def _dtype_rows(self, sig: Signature, row: int) -> Optional[Rejection]:
        """Rows `row` to `row` + 2: weight's dtype is self's, self's casts to out's and to
        totalWeightOut's."""
        x, tw_dt = sig.dtypes["self"], sig.output(TOTAL)[1]
        if sig.dtypes["weight"] != x:
            return INVALID, f"weight's dtype {sig.dtypes['weight']} differs from self's {x} (row {row})"
        if not can_cast(x, sig.out_dtype):
            return INVALID, f"self's {x} cannot be cast to out's {sig.out_dtype} (row {row + 1})"
        if not can_cast(x, tw_dt):
            return INVALID, f"self's {x} cannot be cast to totalWeightOut's {tw_dt} (row {row + 2})"
        return None

    def outside_contract(self, sig: Signature) -> Optional[str]:
        """Calls phase 1 accepts whose result the page leaves open: an ignoreIndex outside INT32
        (the op API's INT32 cast of the target; not established), a BFLOAT16 out on a product
        without BFLOAT16 (not list-checked; not established). Out-of-range targets depend on
        values: no value set draws them. (A 1-D self's single sample is always drawn left out:
        the page's "Result".)"""
        ig = sig.attrs.get("ignoreIndex", -100)
        if not INT32[0] <= ig <= INT32[1]:
            return f"ignoreIndex {ig} outside INT32 (the op API casts the target to INT32)"
        listed = self.product_dtypes.get(sig.product, frozenset())
        tw = sig.output(TOTAL)[1] if sig.outputs is not None else None
        if "bfloat16" in (sig.out_dtype, tw) and "bfloat16" not in listed and sig.dtypes.get("self") in listed:
            return f"a BFLOAT16 output on {sig.product} is not established"
        return None

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """FLOAT16 inputs are computed in FLOAT and rounded once, to out's dtype; BFLOAT16 inputs
        stay BFLOAT16 into and out of the kernel, then are cast (the page's "How the vendor kernel
        computes")."""
        return "bfloat16" if dts.get("self") == "bfloat16" else "float32"

    # -- numbers --------------------------------------------------------------------------------
    def operands(self, x, attrs):
        """The gather, once per walk: self[n, t_n] and w[t_n] as operands [N] (() for a 1-D self),
        the target [N] as an index, and under mean the exact (float64) weight sum W of the samples
        that take part. A left-out sample gathers class 0 (its values never reach a term)."""
        ig = attrs.get("ignoreIndex", -100) if attrs else -100
        t, xg, (wg,), shape = gather(x["self"], x["target"], ig, (x["weight"],))
        found = {"self": xg.reshape(shape), "target": t.reshape(shape), "weight": wg.reshape(shape)}
        if attrs and attrs.get("reduction") == 1:
            found["totalWeight"] = np.array(np.sum(np.where(t != ig, wg.astype(np.float64), 0.0)))
        return found

    def _taking_part(self, x, attrs) -> np.ndarray:
        return x["target"] != attrs["ignoreIndex"]

    def terms(self, x, attrs, shapes) -> np.ndarray:
        l = np.where(self._taking_part(x, attrs), -(x["weight"] * x["self"]), 0.0)
        return l / x["totalWeight"] if attrs["reduction"] == 1 else l

    def reference_terms(self, x, attrs, shapes) -> np.ndarray:
        """-float(w) * float(x) in FLOAT, +0 for a left-out sample; under mean each divided by the
        FLOAT weight sum (the walk's form: the kernel's own order, the sum first, is `reference`)."""
        l = np.where(self._taking_part(x, attrs), self._term32(x), np.float32(0.0))
        return ftz(l / x["totalWeight"]) if attrs["reduction"] == 1 else l

    # The vendor kernel's FLOAT computation, in override points a planted defect replaces.
    def _term32(self, x) -> np.ndarray:
        """One FLOAT product, negated [NLL-950-SIMT] [NLL-EXP-KERNEL]."""
        return -ftz(x["weight"] * x["self"])

    def _sum32(self, v: np.ndarray) -> np.float32:
        """A FLOAT sum of the per-sample values, block by block in sample order (numpy's pairwise
        sum within a block): the kernels' per-core partials added in core order (walk.float32_sum)."""
        return float32_sum(v)

    def _weight_sum32(self, w: np.ndarray, keep: np.ndarray) -> np.float32:
        """The FLOAT sum of the weights of the samples that take part (the same samples, the same
        pass as the terms)."""
        return self._sum32(np.where(keep, w, np.float32(0.0)))

    def _mean32(self, total: np.float32, weight: np.float32) -> np.float32:
        """The mean: one FLOAT division of the sum of terms by the sum of weights (0/0 = NaN)."""
        return ftz(np.float32(total) / np.float32(weight))

    def _gathered32(self, call) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(terms, weights, taking part) in FLOAT for the call's samples."""
        x = present(call.inputs)
        ops = self.operands(x, {k: v for k, v in call.attrs.items() if k != "reduction"})
        xs, ws = (ftz(np.asarray(ops[n]).astype(np.float32)) for n in ("self", "weight"))
        keep = np.asarray(self._taking_part(ops, call.attrs))
        with np.errstate(all="ignore"):
            l = np.where(keep, self._term32({"self": xs, "weight": ws}), np.float32(0.0))
        return np.asarray(l, dtype=np.float32), ws, keep

    def _outputs32(self, call) -> Tuple[np.ndarray, Optional[np.float32]]:
        """(out's FLOAT result, the FLOAT weight sum; None under none): the terms as they are
        (none), their FLOAT sum (sum), or that sum over the FLOAT sum of the same samples'
        weights (mean)."""
        l, w, keep = self._gathered32(call)
        red = call.attrs["reduction"]
        if red == 0:
            return l, None
        total, weight = self._sum32(l), self._weight_sum32(w, keep)
        return (self._mean32(total, weight) if red == 1 else total), weight

    def reference(self, call, block: int = B.BLOCK, flush: bool = False) -> Dict[str, np.ndarray]:
        """out and (under mean and sum) totalWeightOut as the kernel computes them: FLOAT terms, a
        FLOAT sum of terms and one of weights over the same samples, the mean as their quotient;
        each rounded through result_dtype to its output's dtype [NLL-950-SIMT] [NLL-EXP-KERNEL]."""
        with flushing(flush), np.errstate(all="ignore"):
            live = {n: dtypes.name_of(a.dtype) for n, a in present(call.inputs).items()}
            through = dtypes.dtype_of(self.result_dtype(live, dtypes.name_of(call.out_dtype)))
            r, weight = self._outputs32(call)
            found = {"out": to_out(to_out(r, through), call.out_dtype).reshape(call.out_shape)}
            if self.writes(TOTAL, call.attrs):
                shape, dt = call.outputs[TOTAL]
                found[TOTAL] = to_out(to_out(weight, through), dt).reshape(shape)
            return found

    def goldens(self, x, attrs, block: int = B.BLOCK) -> Dict[str, Golden]:
        """out's golden by the walk (terms l_n, or l_n / W under mean); totalWeightOut's the exact
        sum of the weights of the samples that take part, with its terms' scale and path."""
        found = {"out": self.golden(x, attrs, block)}
        if self.writes(TOTAL, attrs):
            ops = self.operands(present(x), attrs)
            keep = np.asarray(ops["target"] != attrs["ignoreIndex"]).reshape(-1)
            v = np.where(keep, np.asarray(ops["weight"], dtype=np.float64).reshape(-1), 0.0)
            found[TOTAL] = sum_golden(v)
        return found

    def empty_fill(self, attrs: Mapping[str, Any]) -> Optional[float]:
        """mean of no samples: the op API fills out with NaN (0/0); sum: 0 [NLL-API]."""
        return float("nan") if attrs["reduction"] == 1 else None

    def describe(self, x, attrs, out_shape, index) -> str:
        ops = self.operands({n: a for n, a in x.items() if a is not None}, attrs)
        n = int(np.size(ops["target"]))
        how = {1: "summed and divided by the weight sum of the samples that take part", 2: "summed"}
        if tuple(out_shape) != tuple(np.shape(ops["target"])) or attrs["reduction"] != 0:
            return f"the terms -w[t_n] * self[n, t_n] of {n} samples, {how.get(attrs['reduction'], '?')}"
        t = int(np.asarray(ops["target"])[index])
        if t == attrs["ignoreIndex"]:
            return f"target={t} is ignoreIndex: +0"
        return (f"-w[t] * self[n, t] with t={t}, self[n, t]={float(np.asarray(ops['self'])[index])!r}, "
                f"weight[t]={float(np.asarray(ops['weight'])[index])!r}")

    def torch(self, torch, t, attrs, device):
        """torch.nn.functional.nll_loss(self, target, weight, ignore_index, reduction): the same
        gather, sum and weight-sum divisor. totalWeightOut is computed here from the same mask
        (PyTorch's functional form does not return it; aten's nll_loss_forward does, but counts
        only in-range targets). Where PyTorch differs from the contract, adjusted here: it takes
        INT64 targets only (INT32 and UINT8 cast exactly), and a 1-D self with a 0-d target is one
        sample as in the contract."""
        import torch.nn.functional as F
        x, tgt, w = t["self"], t["target"].to(torch.int64), t["weight"]
        reduction = self.torch_reduction(attrs)
        ig = int(attrs["ignoreIndex"])
        names = {0: "none", 1: "mean", 2: "sum"}
        out = F.nll_loss(x, tgt, weight=w, ignore_index=ig, reduction=names[reduction])
        if reduction == 0:
            return {"out": out}
        keep = tgt.reshape(-1) != ig
        safe = torch.where(keep, tgt.reshape(-1), torch.zeros_like(tgt.reshape(-1)))
        total = torch.where(keep, w[safe], torch.zeros((), dtype=w.dtype, device=device)).sum() \
            if x.shape[-1] else torch.zeros((), dtype=w.dtype, device=device)
        return {"out": out, TOTAL: total}

    # -- the page's phase-1 table ---------------------------------------------------------------
    def sig(self, out: Any = "default", dt: str = "float32", odt: Optional[str] = None,
            product: str = "atlas-a2", **given: Any) -> Signature:
        """A page-table row: N = 2, C = 3 unless a shape is given (s=, t=, w=, tw=: totalWeightOut),
        target INT64 (tdt=), out [N] under none with a 2-D self and [] otherwise, totalWeightOut []
        in out's dtype (twdt=), reduction none."""
        red = given.pop("reduction", 0)
        ig = given.pop("ignoreIndex", -100)
        s = given.pop("s", (2, 3))
        default_t = (s[0],) if s is not None and len(s) == 2 else ()
        shapes = {"self": s, "target": given.pop("t", default_t), "weight": given.pop("w", (s[-1],) if s else (3,))}
        dts = {"self": given.pop("sdt", dt), "target": given.pop("tdt", "int64"), "weight": given.pop("wdt", dt)}
        tw = given.pop("tw", ())
        if out == "default":
            out = (s[0],) if s is not None and len(s) == 2 and red == 0 else ()
        odt = odt or dts["self"] or dt
        twdt = given.pop("twdt", odt)
        if given:
            raise TypeError(f"{self.name}.sig: unknown {', '.join(sorted(given))}")
        outputs = {"out": (out, odt), TOTAL: (tw, twdt)}
        return Signature(shapes, dts, out, odt, {"reduction": red, "ignoreIndex": ig}, product, outputs)

    # (null_rows: the family's, LossBackward.null_rows: each input by its initial, s, t, w)
    def rank_rows(self, names=()) -> Dict[str, Tuple[Signature, int]]:
        """'<tensor> 9-d' for each of `names`: 161002 by the tensor's own shape row."""
        return keyed_rank_rows(self, {"self": "s", "target": "t", "weight": "w", TOTAL: "tw"}, names)

    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        reject = {
            **self.null_rows(),
            "totalWeightOut NULL": (sig(tw=None), NULLPTR),
            "NULL before a bad reduction": (sig(w=None, reduction=3), NULLPTR),
            "totalWeightOut NULL before a weight of another dtype": (sig(tw=None, wdt="float16"), NULLPTR),
            "weight float16 with float32 self (row 2)": (sig(wdt="float16"), INVALID),
            "int32 out (row 3, the vendor's case_021)": (sig(odt="int32"), INVALID),
            "bool out (row 3)": (sig(odt="bool"), INVALID),
            "int32 totalWeightOut (row 4)": (sig(twdt="int32"), INVALID),
            "bfloat16 on atlas-training (row 5)": (sig(dt="bfloat16", product="atlas-training"), INVALID),
            "bfloat16 on atlas-inference (row 5)": (sig(dt="bfloat16", odt="float32", twdt="float32",
                                                        product="atlas-inference"), INVALID),
            "int32 self and weight (row 5, the vendor's case_010)": (sig(dt="int32"), INVALID),
            "float32 target (row 6)": (sig(tdt="float32"), INVALID),
            "bool target (row 6)": (sig(tdt="bool"), INVALID),
            "reduction 3 (row 7)": (sig(reduction=3), INVALID),
            "reduction -1 (row 7)": (sig(reduction=-1), INVALID),
            "target dtype before reduction (row 6, then 7)": (sig(tdt="float32", reduction=3), INVALID),
            "0-d self (row 8)": (sig(s=(), t=(), w=(1,), out=()), INVALID),
            "3-d self (row 8)": (sig(s=(2, 3, 4), t=(2,), w=(4,), out=(2,)), INVALID),
            "2-d target (row 9)": (sig(t=(2, 1)), INVALID),
            "target length differs from N (row 10)": (sig(t=(3,)), INVALID),
            "1-d self with a 1-d target (row 10, the vendor's case_004)": (sig(s=(1,), t=(1,), out=(1,)), INVALID),
            "2-d self with a 0-d target (row 10)": (sig(t=()), INVALID),
            "weight of length C + 1 (row 11)": (sig(w=(4,)), INVALID),
            "2-d weight (row 11)": (sig(w=(1, 3)), INVALID),
            "none: out [] with 2-d self (row 12)": (sig(out=()), INVALID),
            "none: out [N + 1] (row 12)": (sig(out=(3,)), INVALID),
            "mean: out [N] with N = 2 (row 12)": (sig(reduction=1, out=(2,)), INVALID),
            "sum: out [1, 1] (row 12)": (sig(reduction=2, out=(1, 1)), INVALID),
            "totalWeightOut of two elements (row 13)": (sig(tw=(2,)), INVALID),
            "totalWeightOut empty (row 13)": (sig(tw=(0,)), INVALID),
            "[N, 0] self with N > 0 (row 14)": (sig(s=(2, 0), t=(2,), w=(0,)), INVALID),
            "1-d [0] self (row 14)": (sig(s=(0,), t=(), w=(0,), out=()), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950 (DAV_3510: the three-dtype list)": sig(dt="bfloat16", product="ascend-950"),
            "none, float32": sig(),
            "mean, 0-d out and totalWeightOut": sig(reduction=1),
            "sum, out [1], totalWeightOut [1, 1]": sig(reduction=2, out=(1,), tw=(1, 1)),
            "int32 target": sig(tdt="int32"),
            "uint8 target": sig(tdt="uint8"),
            "float16 on atlas-inference": sig(dt="float16", product="atlas-inference"),
            "bfloat16 on atlas-a3": sig(dt="bfloat16", product="atlas-a3"),
            "float32 into float16 outs (the vendor's case_020)": sig(odt="float16"),
            "float16 into float32 outs": sig(dt="float16", odt="float32", product="atlas-training"),
            "1-d self, 0-d target": sig(s=(5,), t=()),
            "1-d self under none: out [1]": sig(s=(5,), t=(), out=(1,)),
            "empty N (the vendor's case_017)": sig(s=(0, 4), t=(0,)),
            "empty N under mean (case_019)": sig(s=(0, 4), t=(0,), reduction=1),
            "[0, 0] self": sig(s=(0, 0), t=(0,), w=(0,), reduction=2),
            "ignoreIndex inside [0, C)": sig(ignoreIndex=1, reduction=1),
        }
        outside = {
            "bfloat16 out of float32 on atlas-training": sig(odt="bfloat16", twdt="float32", product="atlas-training"),
            "ignoreIndex past INT32": sig(ignoreIndex=1 << 32),
        }
        return table(reject, accept, outside)


OP = NLLLoss()
