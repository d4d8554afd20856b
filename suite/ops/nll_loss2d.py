"""aclnnNLLLoss2d: NLLLoss on self [N, C, H, W] and target [N, H, W]: the op API moves the class axis
last and flattens to the 1-D operator's [N*H*W, C] and [N*H*W], calls the same kernel and gives
out back target's shape under none (docs/operators/NLLLoss2d.md). Terms, sums, the mean's weight-sum
divisor, totalWeightOut, value sets and the torch form are NLLLoss's; only shapes and checks differ."""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.ops.base import Example, Rejection, Shape, Signature, numel, table
from suite.ops.class_index import TARGET_DTYPES
from suite.ops.nll_loss import TOTAL, NLLLoss
from suite.ops.records import VendorNames


class NLLLoss2d(NLLLoss):
    name = "NLLLoss2d"
    vendor = VendorNames()                  # ops-nn has no system-test files for it (no tests/st)

    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        """target's shape [N, H, W] under none; otherwise one element, () [NLL2D-API]."""
        return shapes.get("target") if attrs.get("reduction") == 0 else ()

    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        return shapes.get("target")

    def operands(self, x, attrs):
        """self [N, C, H, W] as the op API hands it to the kernel: transposed to [N, H, W, C] and
        flattened to [N*H*W, C] (samples in target's row-major order), then NLLLoss's gather; the
        operands take target's shape."""
        s, t = np.asarray(x["self"]), np.asarray(x["target"])
        flat = np.moveaxis(s, 1, -1).reshape(t.size, s.shape[1]) if s.ndim == 4 else s
        found = super().operands({**x, "self": flat, "target": t.reshape(-1)}, attrs)
        return {k: (v.reshape(t.shape) if k != "totalWeight" else v) for k, v in found.items()}

    def check(self, sig: Signature) -> Rejection:
        """The page's phase-1 table, rows 1 to 13, in the code's order [NLL2D-API]."""
        bad = (self._null_rows(sig) or self._unsupported_dtype(sig, ["self"])         # rows 1, 2
               or self._dtype_rows(sig, 3))                                           # rows 3 to 5
        if bad:
            return bad
        tw_shape = sig.output(TOTAL)[0]
        if sig.dtypes["target"] not in TARGET_DTYPES:                                 # row 6
            return INVALID, f"target's dtype {sig.dtypes['target']} is not INT64, UINT8 or INT32 (row 6)"
        bad = self._reduction(sig)                                                    # row 7
        if bad:
            return bad
        s, t, w = sig.shapes["self"], sig.shapes["target"], sig.shapes["weight"]
        if len(s) != 4:                                                               # row 8
            return INVALID, f"self has rank {len(s)}, not 4 (row 8)"
        if not w or w[0] != s[1]:                                                     # row 9
            return INVALID, f"weight {w}: its first dimension is not C = {s[1]} (row 9)"
        if len(t) != 3:                                                               # row 10
            return INVALID, f"target has rank {len(t)}, not 3 (row 10)"
        if tuple(t) != (s[0], s[2], s[3]):                                            # row 11
            return INVALID, f"target {t} is not [N, H, W] of self {s} (row 11)"
        out = tuple(sig.out_shape)
        if sig.attrs["reduction"] == 0:                                               # row 12
            if out != tuple(t):
                return INVALID, f"out {out} is not target's {tuple(t)} under none (row 12)"
        elif numel(out) != 1:
            return INVALID, f"out {out} does not have exactly one element (row 12)"
        if numel(tw_shape) != 1:                                                      # row 13
            return INVALID, f"totalWeightOut {tuple(tw_shape)} does not have exactly one element (row 13)"
        return 0, ""

    def outside_contract(self, sig: Signature) -> Optional[str]:
        """NLLLoss's, and: a weight of rank other than 1 (only its first dimension is read; row 9),
        and C = 0 with target elements under none (the empty path leaves out as it was)."""
        w, s, t = sig.shapes.get("weight"), sig.shapes.get("self"), sig.shapes.get("target")
        if w is not None and len(w) != 1:
            return f"weight {tuple(w)} of rank {len(w)}: the code reads only its first dimension"
        if s is not None and t is not None and len(s) == 4 and s[1] == 0 and numel(t) > 0 \
                and sig.attrs.get("reduction") == 0:
            return "C = 0 with target elements under none: the op API's empty path leaves out as it was"
        return super().outside_contract(sig)

    def torch(self, torch, t, attrs, device):
        """NLLLoss's (aten nll_loss2d through F.nll_loss); C = 0 with pixels, which PyTorch refuses,
        as the op API's empty path: mean NaN, sum 0, totalWeightOut 0."""
        x = t["self"]
        if x.shape[1] == 0 and t["target"].numel() > 0 and attrs["reduction"] != 0:
            fill = float("nan") if attrs["reduction"] == 1 else 0.0
            return {"out": torch.full((), fill, dtype=x.dtype, device=device),
                    TOTAL: torch.zeros((), dtype=x.dtype, device=device)}
        return super().torch(torch, t, attrs, device)

    def describe(self, x, attrs, out_shape, index) -> str:
        if attrs["reduction"] != 0:
            return super().describe(x, attrs, (), index)
        return super().describe(x, attrs, out_shape, index)

    # -- the page's phase-1 table ---------------------------------------------------------------
    def sig(self, out: Any = "default", dt: str = "float32", odt: Optional[str] = None,
            product: str = "atlas-a2", **given: Any) -> Signature:
        """A page-table row: self [2, 3, 1, 2] unless s= is given, target [N, H, W] (t=), weight
        [C] (w=), out target's shape under none and [] otherwise, totalWeightOut [] (tw=)."""
        s = given.pop("s", (2, 3, 1, 2))
        full = s is not None and len(s) == 4
        given.setdefault("t", (s[0], s[2], s[3]) if full else (2, 1, 2))
        given.setdefault("w", (s[1],) if full else (3,))
        if out == "default":
            out = tuple(given["t"] or ()) if given.get("reduction", 0) == 0 else ()
        return super().sig(out, dt, odt, product, s=s, **given)

    def examples(self) -> tuple[Example, ...]:
        sig = self.sig
        reject = {
            **self.null_rows(),
            "totalWeightOut NULL": (sig(tw=None), NULLPTR),
            "int16 self and weight (row 2, the vendor's case_010)": (sig(dt="int16"), INVALID),
            "self's dtype before weight's (row 2, then 3)": (sig(dt="int8", wdt="float32"), INVALID),
            "bfloat16 on atlas-training (row 2)": (sig(dt="bfloat16", product="atlas-training"), INVALID),
            "weight float16 with float32 self (row 3)": (sig(wdt="float16"), INVALID),
            "int32 out (row 4)": (sig(odt="int32"), INVALID),
            "int32 totalWeightOut (row 5)": (sig(twdt="int32"), INVALID),
            "float32 target (row 6)": (sig(tdt="float32"), INVALID),
            "reduction 3 (row 7)": (sig(reduction=3), INVALID),
            "reduction before the shapes (row 7, then 8)": (sig(reduction=-1, s=(2, 3)), INVALID),
            "2-d self (row 8)": (sig(s=(2, 3), t=(2,), w=(3,)), INVALID),
            "5-d self (row 8)": (sig(s=(2, 3, 1, 2, 1), t=(2, 1, 2), w=(3,)), INVALID),
            "weight of length C + 1 (row 9)": (sig(w=(4,)), INVALID),
            "2-d target (row 10)": (sig(t=(2, 2)), INVALID),
            "target [N, H, W + 1] (row 11)": (sig(t=(2, 1, 3)), INVALID),
            "target [N + 1, H, W] (row 11)": (sig(t=(3, 1, 2)), INVALID),
            "none: out [] (row 12)": (sig(out=()), INVALID),
            "none: out flattened [N*H*W] (row 12)": (sig(out=(4,)), INVALID),
            "mean: out [N, H, W] (row 12)": (sig(reduction=1, out=(2, 1, 2)), INVALID),
            "totalWeightOut of two elements (row 13)": (sig(tw=(2,)), INVALID),
        }
        accept = {
            "none, float32": sig(),
            "mean, 0-d out and totalWeightOut": sig(reduction=1),
            "sum, out [1, 1, 1] (any one element)": sig(reduction=2, out=(1, 1, 1), tw=(1,)),
            "uint8 target": sig(tdt="uint8"),
            "int32 target": sig(tdt="int32"),
            "float16 on atlas-inference": sig(dt="float16", product="atlas-inference"),
            "bfloat16 on atlas-a3": sig(dt="bfloat16", product="atlas-a3"),
            "bfloat16 on ascend-950 (regbase: the three-dtype list)": sig(dt="bfloat16", product="ascend-950"),
            "float32 into float16 outs (the vendor's case_007)": sig(odt="float16", reduction=1),
            "empty H (the vendor's case_017)": sig(s=(3, 2, 0, 2)),
            "empty N under mean": sig(s=(0, 3, 2, 2), reduction=1),
            "C = 0 with target elements under sum": sig(s=(2, 0, 1, 2), reduction=2),
            "ignoreIndex inside [0, C)": sig(ignoreIndex=1, reduction=1),
        }
        outside = {
            "2-d weight [C, 1]": sig(w=(3, 1)),
            "C = 0 with target elements under none": sig(s=(2, 0, 1, 2)),
            "ignoreIndex past INT32": sig(ignoreIndex=1 << 32),
        }
        return table(reject, accept, outside)


OP = NLLLoss2d()
