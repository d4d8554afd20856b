"""aclnnMseLossBackward: out = gradOutput * (self - target) * 2 [/ numel(self) for mean], on the
broadcast shape of all three inputs (docs/operators/MseLossBackward.md)."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.values import sets as V
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID
from suite.values.draw import Binades, Dist, Uniform
from suite.ops.records import VendorNames
from suite.ops.base import Example, Rejection, Shape, Signature, broadcast, element_inputs, ftz, numel, table
from suite.ops.loss import R8, LossBackward


def _large(sig: Signature) -> Dict[str, Dist]:
    # float16 inputs: |(x - y) * 2 * g| reaches ~5e5, past float16's 65504; wider inputs: 1e5..1e12,
    # beyond float16's range yet with every intermediate far below float32's maximum.
    if V.narrowest(sig.dtypes.values()) == "float16":
        lo, hi, glo, ghi = 2e3, 3e4, 1.0, 4.0
    else:
        lo, hi, glo, ghi = 1e5, 1e12, 1.0, 1e3
    return {"gradOutput": Binades(glo, ghi), "self": Binades(lo, hi), "target": Binades(lo, hi)}


def _tiny(sig: Signature) -> Dict[str, Dist]:
    a = V.tiny_scale(sig.out_dtype, sig.dtypes.values())
    return {"gradOutput": Binades(a / 4, a), "self": Uniform(-a, a), "target": Uniform(-a, a)}


class MseLossBackward(LossBackward):
    name = "MseLossBackward"
    # The vendor's system tests [cases import]: the kernel MseLossGrad takes (predict, label, dout)
    # (ops-nn @e5c3fa93 loss/mse_loss_grad/op_graph/mse_loss_grad_proto.h).
    vendor = VendorNames(ttk="mse_loss_grad", ttk_inputs=("self", "target", "gradOutput"),
                         ttk_defaults={"reduction": "mean"})
    value_sets = {"uniform": V.uniform_set, "nonpos_targets": V.nonpositive("target"), "large": _large,
                  "tiny": _tiny, "specials": V.specials_set}

    tiling_names = ("tile", "db_after")

    def tiling(self, hw, dts) -> Dict[str, int]:
        """ops-nn MseLossGradV2 host tiling (loss/mse_loss_grad_v2/op_host/mse_loss_grad_v2_tiling.cpp
        @e5c3fa93): a UB tile is ceil(ub / bytes per element), 16 bytes for float32 (four buffers)
        and 24 for float16/bfloat16 (four buffers plus float32 staging); double buffering from
        N > 65536. The 910 (atlas-training) runs an older kernel whose source is not public: the
        same arithmetic is the best estimate of its boundaries."""
        per = 16 if dts["self"] == "float32" else 24
        return {"tile": -(-hw.ub_bytes // per), "db_after": 256 * 256}

    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        if any(s is None for s in shapes.values()):
            return None
        return broadcast(*shapes.values())

    def check(self, sig: Signature) -> Rejection:
        bad = self._nulls(sig)
        if bad:
            return bad
        bad = self._unsupported_dtype(sig, ["self"])
        if bad:
            return bad
        for n in ("gradOutput", "target"):
            if sig.dtypes[n] != sig.dtypes["self"]:
                return INVALID, f"{n} dtype {sig.dtypes[n]} differs from self's {sig.dtypes['self']}"
        bad = self._unsupported_dtype(sig, ["out"]) or self._reduction(sig) or self._rank(sig, with_out=False)
        if bad:
            return bad
        b = self.out_shape(sig.shapes, sig.attrs)
        if b is None:
            return INVALID, "gradOutput, self and target do not broadcast together"
        if tuple(sig.out_shape) != b:
            return INVALID, f"out shape {tuple(sig.out_shape)} is not the broadcast shape {b}"
        return 0, ""

    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        return broadcast(*shapes.values())

    def terms(self, x, attrs, shapes) -> np.ndarray:
        out = x["gradOutput"] * (x["self"] - x["target"]) * 2.0
        n = numel(shapes["self"])
        return out / n if attrs["reduction"] == 1 and n else out

    def reference_terms(self, x, attrs, shapes) -> np.ndarray:
        n = numel(shapes["self"])
        cof = np.float32(2.0) / np.float32(n) if attrs["reduction"] == 1 and n else np.float32(2.0)
        d = ftz(ftz(x["self"] - x["target"]) * cof)   # the kernel's order: d = self - target; d *= cof
        return ftz(d * x["gradOutput"])                # r = d * gradOutput

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """l0op::MseLossGrad writes its result in self's dtype; the op API casts that to out's
        (the page's "How the vendor kernel computes": two roundings for a different out dtype)."""
        return dts.get("self", out_dtype)

    def describe(self, x, attrs, out_shape, index) -> str:
        return element_inputs(x, out_shape, index)

    def torch(self, torch, t, attrs, device):
        """aten's out= overload: its mean divisor is numel(self) as passed, and an out of the
        broadcast shape B avoids the functional form's deprecated resize of an out shaped like self."""
        g, x, y = t["gradOutput"], t["self"], t["target"]
        reduction = self.torch_reduction(attrs)
        out = torch.empty(torch.broadcast_shapes(g.shape, x.shape, y.shape), dtype=x.dtype, device=device)
        return torch.ops.aten.mse_loss_backward.grad_input(g, x, y, reduction, grad_input=out)

    def examples(self) -> Tuple[Example, ...]:
        """The page's phase-1 table, row by row."""
        sig = self.sig
        reject = {
            **self.null_rows(),
            "gradOutput dtype differs from self": (sig(gdt="float16"), INVALID),
            "target dtype differs from self": (sig(tdt="float16"), INVALID),
            "gradOutput and target agree, self differs": (sig(sdt="float16", odt="float32"), INVALID),
            "self bfloat16 on atlas-training": (sig(dt="bfloat16", product="atlas-training"), INVALID),
            "self bfloat16 on atlas-inference": (sig(dt="bfloat16", odt="float32", product="atlas-inference"), INVALID),
            "out bfloat16 on atlas-training": (sig(odt="bfloat16", product="atlas-training"), INVALID),
            "out bfloat16 on atlas-inference": (sig(dt="float16", odt="bfloat16", product="atlas-inference"), INVALID),
            **self.reduction_rows(),
            **self.rank_rows(),
            "shapes do not broadcast": (sig(s=(2, 4), out=(2, 3)), INVALID),
            "gradOutput does not broadcast": (sig(g=(3,), s=(2, 3), t=(2, 2), out=(2, 3)), INVALID),
            "out is self's shape, not B": (sig(s=(2, 1), out=(2, 1)), INVALID),
            "out transposed": (sig(out=(3, 2)), INVALID),
            "out with an extra 1": (sig(out=(1, 2, 3)), INVALID),
            "0-d out of 1-element B": (sig(g=(), s=(), t=(), out=(1,)), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950 (regbase: the three-dtype list)": sig(dt="bfloat16", product="ascend-950"),
            "float16 in, float32 out": sig(dt="float16", odt="float32", product="atlas-training"),
            "float32 in, float16 out": sig(dt="float32", odt="float16", product="atlas-inference"),
            "bfloat16 in, float16 out": sig(dt="bfloat16", odt="float16", product="atlas-a3"),
            "bfloat16 on atlas-a2": sig(dt="bfloat16"),
            "0-d everything": sig(g=(), s=(), t=()),
            "0-d self": sig(g=(2, 3), s=(), t=(2, 3)),
            "empty": sig(g=(0, 3), s=(0, 3), t=(0, 3)),
            "only gradOutput empty": sig(g=(0, 3), s=(3,), t=(1, 3)),
            "8-d": sig(g=R8, s=R8, t=R8),
            "all three broadcast": sig(g=(4, 1, 3), s=(1, 5, 1), t=(5, 3)),
            "every reduction": sig(reduction=2),
            "mean": sig(reduction=1),
        }
        return table(reject, accept)


OP = MseLossBackward()
