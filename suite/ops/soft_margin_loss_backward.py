"""aclnnSoftMarginLossBackward: out = -target * sigmoid(-target * self) * gradOutput [/ numel(B) for
mean] on B = broadcast(gradOutput, self, target); out is B under every reduction
(docs/operators/SoftMarginLossBackward.md). Phase 1 never looks at the reduction, which the op API
then uses to index a three-entry table: a value outside 0-2 is outside the contract."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID
from suite.ops.records import VendorNames
from suite.ops.base import Example, Rejection, Shape, Signature, broadcast, element_inputs, ftz, numel, table
from suite.ops.loss import R8, LossBackward, promote
from suite.values import sets as V
from suite.values.draw import Dist, Uniform


def _large(sig: Signature) -> Dict[str, Dist]:
    # -tx in [90, 10^4]: exp(-tx) overflows float32 (past 88.72), where the kernels' e / (1 + e) is
    # inf / inf; the contract's value is -target * gradOutput (at most 200 in magnitude).
    return {"gradOutput": Uniform(-2.0, 2.0), "self": Uniform(30.0, 100.0), "target": Uniform(-100.0, -3.0)}


def _cof(attrs, shapes) -> float:
    """1 / numel(B) for mean (both kernels' cof), else 1."""
    n = numel(broadcast(*shapes.values()))
    return 1.0 / n if attrs["reduction"] == 1 and n else 1.0


class SoftMarginLossBackward(LossBackward):
    name = "SoftMarginLossBackward"
    # The vendor's system tests [cases import]: atk_aclnnSoftMarginLossBackward.json names the call
    # and its inputs as the suite does; the kernel takes (predict, label, dout) and a string
    # reduction, default mean (ops-nn @e5c3fa93 loss/soft_margin_loss_grad/op_host/soft_margin_loss_grad_def.cpp).
    vendor = VendorNames(ttk="soft_margin_loss_grad", ttk_inputs=("self", "target", "gradOutput"),
                         ttk_defaults={"reduction": "mean"})
    value_sets = {"uniform": V.uniform_set, "large": _large, "specials": V.specials_set}

    # -- contract -------------------------------------------------------------------------------
    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        return None if any(shapes.get(n) is None for n in self.inputs) else self.b_shape(shapes)

    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        return broadcast(*(shapes[n] for n in self.inputs))

    def check(self, sig: Signature) -> Rejection:
        """CheckParams of [SMLB-API], in its order (the page's rows 2 to 7). No reduction check."""
        bad = (self._nulls(sig) or self._unsupported_dtype(sig, [*self.inputs, "out"])
               or self._rank(sig, with_out=False))
        if bad:
            return bad
        b = self.b_shape(sig.shapes)
        if b is None:
            return INVALID, "gradOutput, self and target do not broadcast together"
        if tuple(sig.out_shape) != b:
            return INVALID, f"out shape {tuple(sig.out_shape)} is not the broadcast shape {b}"
        return 0, ""

    def outside_contract(self, sig: Signature) -> Optional[str]:
        red = sig.attrs.get("reduction")
        return None if red in (0, 1, 2) else "reduction outside 0-2: the op API reads REDUCTION_STR past its end"

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """The kernel writes P = promote(gradOutput, self, target); the op API casts that to out's."""
        return promote(dts.get(n) for n in self.inputs) or out_dtype

    # -- numbers ----------------------------------------------------------------------------------
    def terms(self, x, attrs, shapes) -> np.ndarray:
        s = 1.0 / (1.0 + np.exp(x["target"] * x["self"]))      # sigmoid(-tx), never NaN for a finite tx
        return -x["target"] * s * x["gradOutput"] * _cof(attrs, shapes)

    def reference_terms(self, x, attrs, shapes) -> np.ndarray:
        """The TBE kernel's order in FLOAT, e = exp(-y*x); q = e / (e + 1); r = (-y * q) * g [* cof],
        with q = 1 where e overflows (the contract's limit, where the kernels give inf / inf)."""
        y = x["target"]
        e = ftz(np.exp(ftz(-y * x["self"])))
        q = np.where(np.isinf(e), np.float32(1), ftz(e / ftz(e + np.float32(1))))
        r = ftz(ftz(-y * q) * x["gradOutput"])
        return ftz(r * np.float32(_cof(attrs, shapes))) if attrs["reduction"] == 1 else r

    def describe(self, x, attrs, out_shape, index) -> str:
        return element_inputs(x, out_shape, index)

    def torch(self, torch, t, attrs, device):
        """aten's soft_margin_loss_backward on the inputs broadcast to B (its mean divides by
        numel(self) as passed: B here); where exp(-tx) overflows aten gives NaN and the contract
        -target * gradOutput [/ N], so those elements are that (docs/torch-backend.md)."""
        g, x, y = torch.broadcast_tensors(t["gradOutput"], t["self"], t["target"])
        reduction = self.torch_reduction(attrs)
        r = torch.ops.aten.soft_margin_loss_backward(g, x, y, reduction)
        over = torch.isinf(torch.exp(-(x * y))) & ~torch.isnan(x * y)
        norm = 1.0 / x.numel() if reduction == 1 and x.numel() else 1.0
        return torch.where(over, -y * g * norm, r)

    # -- the page's phase-1 table -------------------------------------------------------------
    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        reject = {
            **self.null_rows(),
            "gradOutput bfloat16 on atlas-training (row 3)": (sig(gdt="bfloat16", product="atlas-training"), INVALID),
            "self bfloat16 on atlas-inference (row 3)": (sig(sdt="bfloat16", odt="float32",
                                                             product="atlas-inference"), INVALID),
            "target bfloat16 on atlas-training (row 3)": (sig(tdt="bfloat16", product="atlas-training"), INVALID),
            "out bfloat16 on atlas-inference (row 3)": (sig(odt="bfloat16", product="atlas-inference"), INVALID),
            **self.rank_rows(),
            "gradOutput and self do not broadcast (row 5)": (sig(g=(2, 4), out=(2, 4)), INVALID),
            "target does not broadcast (row 6)": (sig(t=(4,), out=(2, 3)), INVALID),
            "out is self's shape, not B (row 7)": (sig(s=(2, 1), out=(2, 1)), INVALID),
            "mean: out 0-d (row 7)": (sig(reduction=1, out=()), INVALID),
            "out with an extra 1 (row 7)": (sig(out=(1, 2, 3)), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950": sig(dt="bfloat16", product="ascend-950"),
            "bfloat16 on atlas-a2": sig(dt="bfloat16"),
            "three dtypes promote to float32 (atlas-a3)": sig(gdt="bfloat16", sdt="float16", product="atlas-a3"),
            "float16 with float32, out float16 (atlas-training)": sig(sdt="float16", odt="float16",
                                                                      product="atlas-training"),
            "0-d everything": sig(g=(), s=(), t=()),
            "0-d gradOutput under sum": sig(g=(), reduction=2),
            "all three broadcast": sig(g=(4, 1, 3), s=(1, 5, 1), t=(5, 3)),
            "empty self": sig(g=(0, 3), s=(0, 3), t=(0, 3), reduction=1),
            "only gradOutput empty": sig(g=(0, 3), s=(3,), t=(1, 3)),
            "8-d": sig(g=R8, s=R8, t=R8),
        }
        outside = {  # phase 1 accepts it; the plan then reads REDUCTION_STR[reduction] out of bounds
            "reduction 3": sig(reduction=3),
            "reduction -1": sig(reduction=-1),
        }
        return table(reject, accept, outside)


OP = SoftMarginLossBackward()
