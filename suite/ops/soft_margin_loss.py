"""aclnnSoftMarginLoss: log(1 + exp(-target * self)) on B = broadcast(self, target), returned as it
is (none), summed (sum) or summed and divided by numel(B) (mean); out is B for none and 0-d
otherwise (docs/operators/SoftMarginLoss.md). Phase 1 never looks at the reduction: the code
computes any value but 0 and 1 as sum, which the suite keeps outside its contract."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID
from suite.ops.records import VendorNames
from suite.ops.base import Example, Rejection, Signature, ftz, table
from suite.ops.loss import R8, LossForward
from suite.values import sets as V
from suite.values.draw import Dist, Uniform


def _uniform(sig: Signature) -> Dict[str, Dist]:
    # [-2, 2), not the field's [-5, 5): |target * self| <= 4 keeps exp(-|tx|) >= 0.018, where the
    # vendor kernels' log(1 + e) is accurate; the region past it is the `saturated` set's.
    return {"self": Uniform(-2.0, 2.0), "target": Uniform(-2.0, 2.0)}


def _saturated(sig: Signature) -> Dict[str, Dist]:
    # tx = target * self in [6, 40]: the loss is about exp(-tx), 2.5e-3 down to 4e-18; 1 + exp(-tx)
    # keeps few or none of its bits in float32 (the page's "Numeric hazards").
    return {"self": Uniform(2.0, 5.0), "target": Uniform(3.0, 8.0)}


def _large(sig: Signature) -> Dict[str, Dist]:
    # -tx in [90, 10^4]: exp(-tx) overflows float32 (past 88.72); the loss is -tx, finite in every
    # dtype (at most 10^4 < 65504).
    return {"self": Uniform(30.0, 100.0), "target": Uniform(-100.0, -3.0)}


class SoftMarginLoss(LossForward):
    """The loss family's helpers (NULL rows, page-table signatures) serve the forward too: the C
    signature is self, target, int64 reduction, out [SML-H]."""

    name = "SoftMarginLoss"
    # The vendor's system tests [cases import]: atk_aclnnSoftMarginLoss.json names the aclnn call
    # and its inputs as the suite does; the kernel SoftMarginLoss takes (self, target) and a string
    # reduction, default mean (ops-nn @e5c3fa93 loss/soft_margin_loss/op_host/soft_margin_loss_def.cpp).
    vendor = VendorNames(ttk="soft_margin_loss", ttk_inputs=("self", "target"), ttk_defaults={"reduction": "mean"})
    value_sets = {"uniform": _uniform, "saturated": _saturated, "large": _large, "specials": V.specials_set}
    # The TBE kernel's reduce_sum schedule is not public, and ops-nn's API list gives no determinism
    # for these two families (it says deterministic for A2/A3 and the 950): their mean and sum are
    # not held to identical bits (the page's "Determinism").
    nondeterministic = {p: {"reduction": (1, 2)} for p in ("atlas-training", "atlas-inference")}

    term_text = "log(1 + exp(-target * self))"
    reduced_why = "a reduction other than none wants a 0-d out"

    # -- contract -------------------------------------------------------------------------------
    def reduces(self, reduction) -> bool:
        """out is B for none; () for every other reduction, the only shape they accept ([SML-API]
        CheckShape)."""
        return reduction != 0

    def check(self, sig: Signature) -> Rejection:
        """The rejection table of the page, in the code's order (rows 2 to 8; row 1, a NULL
        workspaceSize or executor, is not a call the suite can make). No reduction row."""
        return (self._nulls(sig) or self._unsupported_dtype(sig, ["self", "target", "out"])
                or self._shape_checks(sig))

    def outside_contract(self, sig: Signature) -> Optional[str]:
        """A reduction outside 0-2: the page lists 0-2; the code computes every other value as sum
        (and fills nothing for empty inputs), which the suite models but does not hold the kernel to."""
        red = sig.attrs.get("reduction")
        return None if red in (0, 1, 2) else "reduction outside 0-2 is undocumented (the code computes it as sum)"

    # -- numbers ----------------------------------------------------------------------------------
    # mean of an empty B: the op API fills out with NaN; sum: 0 [SML-API] (`empty_fill`).
    def loss(self, x, attrs) -> np.ndarray:
        return np.logaddexp(0.0, -(x["target"] * x["self"]))      # log(1 + exp(-tx)), never overflowing

    def reference_loss(self, x, attrs) -> np.ndarray:
        """The 950 kernel's stable form in FLOAT, max(0, -tx) + log(1 + exp(-|tx|)), with log1p
        where the kernel takes log(1 + e) (the page's "Where the suite and the kernels differ");
        mean: each term times float(1.0 / N) (the kernel scales the sum once: rounding only)."""
        t = ftz(x["target"] * x["self"])
        return ftz(np.maximum(-t, np.float32(0)) + ftz(np.log1p(ftz(np.exp(-np.abs(t))))))

    def torch(self, torch, t, attrs, device):
        """aten's soft_margin_loss (none) on the inputs broadcast to B, log1p(exp(-tx)): where
        exp(-tx) overflows (-tx past 88.7 in float32) aten gives inf and the contract -tx, so those
        elements are -tx (docs/torch-backend.md); then the mean or sum as aten reduces. A reduction
        outside 0-2 is sum, as the op API computes it."""
        x, y = torch.broadcast_tensors(t["self"], t["target"])
        loss = torch.ops.aten.soft_margin_loss(x, y, 0)
        tx = x * y
        loss = torch.where(torch.isinf(loss) & torch.isfinite(tx), -tx, loss)
        red = int(attrs["reduction"])
        return loss if red == 0 else loss.mean() if red == 1 else loss.sum()

    # -- the page's phase-1 table -------------------------------------------------------------
    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        reject = {
            **self.null_rows(),
            "self bfloat16 on atlas-training (row 3)": (sig(sdt="bfloat16", odt="float32", product="atlas-training"),
                                                        INVALID),
            "target bfloat16 on atlas-inference (row 4)": (sig(tdt="bfloat16", product="atlas-inference"), INVALID),
            "out bfloat16 on atlas-training (row 5)": (sig(odt="bfloat16", product="atlas-training"), INVALID),
            **self.rank_rows(),
            "shapes do not broadcast (row 7)": (sig(s=(2, 4), out=(2, 4)), INVALID),
            "none: out is self's shape, not B (row 8)": (sig(s=(2, 1), out=(2, 1)), INVALID),
            "mean: out [1] (row 8)": (sig(reduction=1, out=(1,)), INVALID),
            "sum: out [2, 3] (row 8)": (sig(reduction=2, out=(2, 3)), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950": sig(dt="bfloat16", product="ascend-950"),
            "bfloat16 on atlas-a2": sig(dt="bfloat16"),
            "float16 with float32 promotes (atlas-training)": sig(sdt="float16", odt="float32",
                                                                  product="atlas-training"),
            "float32 in, float16 out": sig(odt="float16", product="atlas-inference"),
            "bfloat16 with float16, out bfloat16 (atlas-a3)": sig(sdt="bfloat16", tdt="float16", odt="bfloat16",
                                                                 product="atlas-a3"),
            "0-d everything": sig(s=(), t=(), out=()),
            "sum of a broadcast, 0-d out": sig(s=(2, 1), t=(3,), reduction=2, out=()),
            "empty mean": sig(s=(0, 3), t=(0, 3), reduction=1, out=()),
            "8-d": sig(s=R8, t=R8),
        }
        outside = {  # phase 1 does not look at the reduction: accepted, computed as sum, undocumented
            "reduction 3 (computed as sum)": sig(reduction=3, out=()),
            "reduction -4 (computed as sum)": sig(reduction=-4, out=()),
        }
        return table(reject, accept, outside)


OP = SoftMarginLoss()
