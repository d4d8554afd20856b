"""aclnnL1Loss: |self - target| on B = broadcast(self, target), returned as it is (none), summed (sum)
or summed and divided by numel(B) (mean); out is B for none and 0-d for mean and sum
(docs/operators/L1Loss.md). The forward family's contract (out shape, empty fills, shape rows) with
its own term and dtype rows: only the promoted dtype P is listed (INT64 included), out only by CanCast."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID
from suite.ops.base import LOSS_DTYPES, Example, Rejection, Signature, ftz, table
from suite.ops.loss import R8, LossForward, promote
from suite.ops.mse_loss import _close
from suite.ops.promotion import FLOATING, can_cast
from suite.ops.records import VendorNames
from suite.values import sets as V
from suite.values.draw import Binades, Dist, Uniform

# The list P must be in (aclnn_l1_loss.cpp, CheckSocVersionIsSupportBf16): the family's, and INT64.
P_DTYPES = {p: d | {"int64"} for p, d in LOSS_DTYPES.items()}


def _large(sig: Signature) -> Dict[str, Dist]:
    # float16: |d| up to 7e4, past 65504 (an inf term); wider: |d| to 1e37, sums overflow float32.
    if V.narrowest(sig.dtypes.values()) == "float16":
        return {"self": Uniform(1e4, 6e4), "target": Uniform(-1e4, 1e4)}
    return {"self": Binades(1e4, 1e37), "target": Uniform(-1.0, 1.0)}


def _tiny(sig: Signature) -> Dict[str, Dist]:
    a = V.tiny_scale(sig.out_dtype, sig.dtypes.values())           # |d| in out's subnormal range
    return {"self": Uniform(-a, a), "target": Uniform(-a, a)}


class L1Loss(LossForward):
    name = "L1Loss"
    # The vendor's system tests: the kernel LpLoss takes (predict, label), p fixed at 1
    # (ops-nn @e5c3fa93 loss/lp_loss/op_graph/lp_loss_proto.h).
    vendor = VendorNames(ttk="lp_loss", ttk_inputs=("self", "target"), ttk_defaults={"reduction": "mean"},
                         ttk_fixed={"p": 1})
    # out's dtype where a case does not name it: target's, the float operand beside an integer self
    # in the vendor's ATK cases (their executor compares with torch's FLOAT result)
    primary = "target"
    value_sets = {"uniform": V.uniform_set, "large": _large, "tiny": _tiny, "close": _close,
                  "specials": V.specials_set}
    # The TBE LpLoss's reduce_sum schedule is not public; the API list states determinism for A2/A3
    # and the 950 only (the page's "Determinism").
    nondeterministic = {"atlas-training": {"reduction": (1, 2)}, "atlas-inference": {"reduction": (1, 2)}}
    term_text = "|self - target|"
    aten = "l1_loss"

    def check(self, sig: Signature) -> Rejection:
        """CheckParams of aclnn_l1_loss.cpp, in its order (the page's rows 2 to 11)."""
        bad = self._nulls(sig) or self._reduction(sig)
        if bad:
            return bad
        s, t, red = sig.dtypes["self"], sig.dtypes["target"], sig.attrs["reduction"]
        if red == 0 and s not in FLOATING and t in FLOATING:
            return INVALID, f"none: self {s} is not floating while target {t} is"
        if red == 1 and s not in FLOATING and t not in FLOATING:
            return INVALID, f"mean: neither self {s} nor target {t} is floating"
        bad = self._promoted(sig, P_DTYPES)
        if bad:
            return bad
        p = promote((s, t))
        if not can_cast(p, sig.out_dtype):
            return INVALID, f"the promoted dtype {p} cannot be cast to out's {sig.out_dtype}"
        return self._shape_checks(sig)

    def outside_contract(self, sig: Signature) -> Optional[str]:
        """Accepted by phase 1, not covered: P = INT64 (Sub, Abs and ReduceSum, an integer result
        the suite does not judge) and a BFLOAT16 tensor on a product without BFLOAT16."""
        if sig.product is None or self.check(sig)[0] != 0:
            return None                                            # rejected: in the contract
        p = promote(sig.dtypes.get(n) for n in self.inputs)
        if p == "int64":
            return "P = INT64 runs Sub, Abs and ReduceSum into an integer result, which the suite does not judge"
        if "bfloat16" not in LOSS_DTYPES[sig.product] and "bfloat16" in (*sig.dtypes.values(), sig.out_dtype):
            return f"a BFLOAT16 tensor on {sig.product} with promoted dtype {p} is not established"
        return None

    def operand_dtype(self, dts) -> Optional[str]:
        """An integer operand is cast to P before the broadcast (the op API's l0op::Cast)."""
        return promote(dts.values())

    def loss(self, x, attrs) -> np.ndarray:
        return np.abs(x["self"] - x["target"])

    def reference_loss(self, x, attrs) -> np.ndarray:
        """The TBE LpLoss in FLOAT: vabs(vsub(x, y)), for mean times cof = float(1.0 / N) per term
        before reduce_sum."""
        return np.abs(ftz(x["self"] - x["target"]))

    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        reject = {
            **self.null_rows(),
            "NULL before a bad reduction": (sig(s=None, reduction=3), 161001),
            **self.reduction_rows(),
            "reduction before dtypes (row 3)": (sig(dt="int32", reduction=3), INVALID),
            "none: int32 self, float32 target (row 4)": (sig(sdt="int32"), INVALID),
            "mean: int64 self and target (row 5)": (sig(dt="int64", reduction=1, out=()), INVALID),
            "uint16 target: no promotion (row 6)": (sig(tdt="uint16"), INVALID),
            "sum: int32 inputs, P = INT32 (row 7)": (sig(dt="int32", odt="float32", reduction=2, out=()), INVALID),
            "bfloat16 on atlas-training (row 7)": (sig(dt="bfloat16", product="atlas-training"), INVALID),
            "float32 into a bool out (row 8)": (sig(odt="bool"), INVALID),
            "float32 into an int64 out (row 8)": (sig(odt="int64"), INVALID),
            "self 9-d (row 9)": (sig(s=(1,) * 7 + (2, 3), out=(1,) * 7 + (2, 3)), INVALID),
            "shapes do not broadcast (row 10)": (sig(s=(2, 4), out=(2, 4)), INVALID),
            "mean: out [1] (row 11)": (sig(reduction=1, out=(1,)), INVALID),
            "none: out [] (row 11)": (sig(out=()), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950": sig(dt="bfloat16", product="ascend-950"),
            "float32 self, int32 target under none (P = FLOAT)": sig(tdt="int32"),
            "mean: int64 self, float32 target": sig(sdt="int64", odt="float32", reduction=1, out=()),
            "float16 inputs into a float32 out": sig(dt="float16", odt="float32", product="atlas-training"),
            "sum of a broadcast, 0-d out": sig(s=(2, 1), t=(3,), reduction=2, out=()),
            "empty mean": sig(s=(0, 3), t=(0, 3), reduction=1, out=()),
            "8-d": sig(s=R8, t=R8),
        }
        outside = {
            "sum: int64 inputs (P = INT64)": sig(dt="int64", reduction=2, out=()),
            "bfloat16 out on atlas-inference": sig(odt="bfloat16", product="atlas-inference"),
        }
        return table(reject, accept, outside)


OP = L1Loss()
