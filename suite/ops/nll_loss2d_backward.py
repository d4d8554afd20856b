"""aclnnNLLLoss2dBackward: NLLLossBackward on self [N, C, H, W], target and (under none) gradOutput
[N, H, W]: the op API transposes self to [N*H*W, C], calls the same kernel NLLLossGrad and transposes
the gradient back (docs/operators/NLLLoss2dBackward.md). out[n, c, h, w] = -w[c] * g (/ totalWeight
under mean) where c = target[n, h, w] is not ignoreIndex, +0 elsewhere: NLLLossBackward's terms with
the class axis 1; value sets, reference and torch form are its; only shapes and checks differ."""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.ops.base import Example, Rejection, Signature, numel, table
from suite.ops.class_index import TARGET_DTYPES
from suite.ops.nll_loss_backward import NLLLossBackward
from suite.ops.operands import class_coordinate
from suite.ops.records import VendorNames


class NLLLoss2dBackward(NLLLossBackward):
    name = "NLLLoss2dBackward"
    # ATK files name the call itself (loss/nll_loss_grad/tests/st/aclnnNLLLoss2dBackward); no TTK kernel of its own.
    vendor = VendorNames()
    c_params = NLLLossBackward.c_params       # totalWeight after the two attributes, as the 1-D header [NLL2DB-H]

    def operands(self, x, attrs):
        """Against terms on self's [N, C, H, W]: target (and gradOutput under none) as [N, 1, H, W],
        weight and the class coordinate `cls` as [1, C, 1, 1], totalWeight as its one value."""
        c = np.shape(x["self"])[1]
        g = np.asarray(x["gradOutput"])
        return {"gradOutput": g[:, None] if g.ndim == 3 else g.reshape(()),
                "target": np.asarray(x["target"])[:, None],
                "weight": np.asarray(x["weight"]).reshape(1, c, 1, 1),
                "totalWeight": np.asarray(x["totalWeight"]).reshape(()),
                "cls": class_coordinate(c).reshape(1, c, 1, 1)}

    def check(self, sig: Signature) -> Rejection:
        """The page's phase-1 table, rows 1 to 14, in the code's order (the reduction last) [NLL2DB-API]."""
        bad = self._nulls(sig) or self._unsupported_dtype(sig, ["self"])              # rows 1, 2
        if bad:
            return bad
        x = sig.dtypes["self"]
        for row, n in ((3, "gradOutput"), (4, "weight")):
            if sig.dtypes[n] != x:
                return INVALID, f"{n}'s dtype {sig.dtypes[n]} differs from self's {x} (row {row})"
        if sig.out_dtype != x:                                                        # row 5
            return INVALID, f"out's dtype {sig.out_dtype} differs from self's {x} (row 5)"
        if sig.dtypes["totalWeight"] != x:                                            # row 6
            return INVALID, f"totalWeight's dtype {sig.dtypes['totalWeight']} differs from self's {x} (row 6)"
        if sig.dtypes["target"] not in TARGET_DTYPES:                                 # row 7
            return INVALID, f"target's dtype {sig.dtypes['target']} is not INT64, UINT8 or INT32 (row 7)"
        s, t, w, g = (tuple(sig.shapes[n]) for n in ("self", "target", "weight", "gradOutput"))
        if sig.attrs["reduction"] == 0:                                               # row 8
            if g != t:
                return INVALID, f"gradOutput {g} is not target's {t} under none (row 8)"
        elif len(g) > 1 or numel(g) != 1:
            return INVALID, f"gradOutput {g} is not one element of rank 0 or 1 (row 8)"
        if len(s) != 4 or len(t) != 3:                                               # rows 9, 10
            return INVALID, f"self {s} is not 4-D or target {t} not 3-D (rows 9, 10)"
        if t != (s[0], s[2], s[3]):                                                   # row 11
            return INVALID, f"target {t} is not [N, H, W] of self {s} (row 11)"
        if numel(w) != s[1]:                                                          # row 12
            return INVALID, f"weight {w} does not have C = {s[1]} elements (row 12)"
        if tuple(sig.out_shape) != s:                                                 # row 13
            return INVALID, f"out {tuple(sig.out_shape)} is not self's {s} (row 13)"
        if numel(sig.shapes["totalWeight"]) != 1:                                     # row 14
            return INVALID, f"totalWeight {sig.shapes['totalWeight']} does not have exactly one element (row 14)"
        return self._reduction(sig) or (0, "")                                        # row 15

    def outside_contract(self, sig: Signature) -> Optional[str]:
        """NLLLossBackward's (an ignoreIndex past INT32, a BFLOAT16 out unlisted), and a weight of rank
        other than 1 (row 12 counts its elements only)."""
        w = sig.shapes.get("weight")
        if w is not None and len(w) != 1:
            return f"weight {tuple(w)} of rank {len(w)}: row 12 counts only its elements"
        return super().outside_contract(sig)

    def torch(self, torch, t, attrs, device):
        """aten's nll_loss2d_backward, the op API's parameters in the same order; INT32 and UINT8
        targets cast exactly to INT64 (aten's only); totalWeight as given; self made contiguous (its
        values are never read; aten's CPU kernel wants a contiguous gradient of its layout)."""
        g = t["gradOutput"] if attrs["reduction"] == 0 else t["gradOutput"].reshape(())
        return torch.ops.aten.nll_loss2d_backward(g.contiguous(), t["self"].contiguous(), t["target"].to(torch.int64), t["weight"],
                                                  self.torch_reduction(attrs), int(attrs["ignoreIndex"]),
                                                  t["totalWeight"].reshape(()))

    # -- the page's phase-1 table ---------------------------------------------------------------
    def sig(self, out: Any = "default", dt: str = "float32", odt: Optional[str] = None,
            product: str = "atlas-a2", **given: Any) -> Signature:
        """A page-table row: self [2, 3, 1, 2] unless s= is given, target [N, H, W] (t=), gradOutput
        target's shape under none and [] otherwise (g=), weight [C] (w=), totalWeight [] (tw=)."""
        s = given.pop("s", (2, 3, 1, 2))
        full = s is not None and len(s) == 4
        given.setdefault("t", (s[0], s[2], s[3]) if full else (2, 1, 2))
        given.setdefault("w", (s[1],) if full else (3,))
        given.setdefault("g", given["t"] if given.get("reduction", 0) == 0 else ())
        return super().sig(out, dt, odt, product, s=s, **given)

    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        reject = {
            **self.null_rows(),
            "totalWeight NULL": (sig(tw=None), NULLPTR),
            "int16 self (row 2)": (sig(dt="int16"), INVALID),
            "bfloat16 on atlas-training (row 2)": (sig(dt="bfloat16", product="atlas-training"), INVALID),
            "gradOutput float16 (row 3)": (sig(gdt="float16"), INVALID),
            "weight float16 (row 4)": (sig(wdt="float16"), INVALID),
            "float16 out of float32 self (row 5: equal dtypes, not a cast)": (sig(odt="float16"), INVALID),
            "totalWeight float16 (row 6)": (sig(twdt="float16"), INVALID),
            "float32 target (row 7)": (sig(tdt="float32"), INVALID),
            "none: gradOutput [N*H*W] (row 8)": (sig(g=(4,)), INVALID),
            "mean: gradOutput [1, 1] (row 8)": (sig(reduction=1, g=(1, 1)), INVALID),
            "reduction 3 with gradOutput [N, H, W]: row 8 first": (sig(reduction=3), INVALID),
            "2-d self (row 9)": (sig(s=(2, 3), t=(2, 1, 2), w=(3,), out=(2, 3)), INVALID),
            "2-d target (row 10)": (sig(t=(2, 2), g=(2, 2)), INVALID),
            "target [N, H, W + 1] (row 11)": (sig(t=(2, 1, 3), g=(2, 1, 3)), INVALID),
            "weight of C + 1 elements (row 12)": (sig(w=(4,)), INVALID),
            "out [N, H, W, C] (row 13)": (sig(out=(2, 1, 2, 3)), INVALID),
            "totalWeight of two elements (row 14)": (sig(tw=(2,)), INVALID),
            "reduction 3 (row 15, last)": (sig(reduction=3, g=()), INVALID),
        }
        accept = {
            "none, float32": sig(),
            "mean, gradOutput []": sig(reduction=1),
            "sum, gradOutput [1], totalWeight [1]": sig(reduction=2, g=(1,), tw=(1,)),
            "uint8 target": sig(tdt="uint8"),
            "int32 target": sig(tdt="int32"),
            "float16 on atlas-inference": sig(dt="float16", product="atlas-inference"),
            "bfloat16 on atlas-a3": sig(dt="bfloat16", product="atlas-a3"),
            "bfloat16 on ascend-950": sig(dt="bfloat16", product="ascend-950"),
            "empty H": sig(s=(2, 3, 0, 2)),
            "ignoreIndex inside [0, C)": sig(ignoreIndex=1, reduction=1),
        }
        outside = {
            "2-d weight [C, 1]": sig(w=(3, 1)),
            "ignoreIndex past INT32": sig(ignoreIndex=1 << 32),
        }
        return table(reject, accept, outside)


OP = NLLLoss2dBackward()
