"""aclnnSmoothL1Loss: with d = self - target on B = broadcast(self, target) and beta the C float
received, 0.5 d^2 / beta where |d| < beta and |d| - 0.5 beta elsewhere, returned as it is (none),
summed (sum) or summed and divided by numel(B) (mean); out is B for none and one element otherwise
(docs/operators/SmoothL1Loss.md). The backward's beta (its attribute, its band set) is reused."""
from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID
from suite.ops.base import MAX_RANK, Attr, Example, Rejection, Signature, ftz, numel, table
from suite.ops.loss import R8, LossForward, promote
from suite.ops.promotion import can_cast
from suite.ops.records import VendorNames
from suite.ops.smooth_l1_loss_backward import _token, band_lattice, beta32
from suite.values import sets as V
from suite.values.draw import Binades, Choice, Dist, Sprinkle, Uniform


def _band(sig: Signature) -> Dict[str, Dist]:
    """|self - target| == beta exactly, one ulp inside and outside (the backward's lattice)."""
    beta = beta32(sig.attrs)
    return {"self": Choice(band_lattice(beta, sig.dtypes["self"])[0]),
            "target": Choice(band_lattice(beta, sig.dtypes["target"])[1])}


def _large(sig: Signature) -> Dict[str, Dist]:
    # |d| - 0.5 beta past float16's 65504 (16-bit inputs: |d| to 6e4 each side); wider: 1e5..1e12,
    # far below 2.6e19, where the TBE kernel's unselected d * 0.5 * d overflows (the page's hazards).
    if V.narrowest(sig.dtypes.values()) == "float16":
        return {"self": Binades(2e3, 6e4), "target": Binades(2e3, 6e4)}
    return {"self": Binades(1e5, 1e12), "target": Uniform(-1.0, 1.0)}


def _specials(sig: Signature) -> Dict[str, Dist]:
    """NaN and +-0 in either input; no infinity (the TBE kernel's inf * 0 makes it NaN, the 950's
    select gives inf: the page's "Not established")."""
    return {n: Sprinkle(Uniform(-5.0, 5.0), (math.nan, 0.0, -0.0), 0.2) for n in ("self", "target")}


class SmoothL1Loss(LossForward):
    """The forward family's contract with the C signature self, target, int64 reduction, float
    beta, out [SL1-H]; out's shape checked under none only, beta after the shapes [SL1-API]."""

    name = "SmoothL1Loss"
    # The vendor's system tests [cases import]: the kernel SmoothL1LossV2 takes (predict, label),
    # beta as sigma, a string reduction default mean (ops-nn @e5c3fa93
    # loss/smooth_l1_loss_v2/op_host/smooth_l1_loss_v2_def.cpp).
    vendor = VendorNames(ttk="smooth_l1_loss_v2", ttk_inputs=("self", "target"), ttk_attrs={"sigma": "beta"},
                         ttk_defaults={"reduction": "mean", "sigma": 1.0})
    attributes = (Attr("beta", float, (1.0, 0.1, 0.0), 1.0, _token),)
    value_sets = {"uniform": V.uniform_set, "band": _band, "large": _large, "specials": _specials}
    # The TBE reduce_sum schedule is not public; the API list's determinism columns are A2/A3 and
    # the 950 (the page's "Determinism").
    nondeterministic = {p: {"reduction": (1, 2)} for p in ("atlas-training", "atlas-inference")}
    term_text = "smooth_l1(self - target)"
    aten = "smooth_l1_loss"

    # -- contract -------------------------------------------------------------------------------
    def check(self, sig: Signature) -> Rejection:
        """CheckParams of [SL1-API] in its order (the page's rows 2 to 8)."""
        bad = self._nulls(sig) or self._unsupported_dtype(sig, ["self", "target"])
        if bad:
            return bad
        p = promote(sig.dtypes[n] for n in self.inputs)
        if not can_cast(p, sig.out_dtype):
            return INVALID, f"the promoted dtype {p} cannot be cast to out's {sig.out_dtype}"
        bad = self._reduction(sig) or self._shape_checks(sig)
        if bad[0]:
            return bad
        beta = beta32(sig.attrs)
        return (0, "") if beta >= 0 else (INVALID, f"beta {beta!r} is not >= 0")

    def _reduced_out(self, out) -> Optional[str]:
        return None                               # mean and sum: out's shape is not checked

    def outside_contract(self, sig: Signature) -> Optional[str]:
        """Accepted by phase 1, not covered: out of another size than one element under mean or
        sum, out's dtype outside the product's list (only CanCast(P, out) is checked), beta 0 on a
        TBE family."""
        if sig.out_shape is None or any(sig.shapes.get(n) is None for n in self.inputs) or self.check(sig)[0]:
            return None
        out = tuple(sig.out_shape)
        if sig.attrs["reduction"] != 0 and (numel(out) != 1 or len(out) > MAX_RANK):
            return f"out {out} under mean or sum: the op API checks no shape, copying the 0-d result into it is undocumented"
        if sig.out_dtype not in self.product_dtypes[sig.product]:
            return f"out {sig.out_dtype} is not in {sig.product}'s list (the op API checks only CanCast(P, out))"
        if beta32(sig.attrs) == 0 and sig.product != "ascend-950":
            return "beta 0 on a TBE family: the kernel's 1 / sigma is a division by zero, its result not established"
        return None

    # -- numbers ----------------------------------------------------------------------------------
    def loss(self, x, attrs) -> np.ndarray:
        b, a = beta32(attrs), np.abs(x["self"] - x["target"])
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a < b, 0.5 * a * a / b, a - 0.5 * b)

    def reference_loss(self, x, attrs) -> np.ndarray:
        """Both kernels in FLOAT [TBE-SL1] [SL1-DAG]: d = x - y; m1 = (d * 0.5) * d * (1 / beta);
        m2 = |d| - 0.5 beta; |d| < beta selects m1."""
        b = np.float32(beta32(attrs))
        d = ftz(x["self"] - x["target"])
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            m1 = ftz(ftz(ftz(d * np.float32(0.5)) * d) * (np.float32(1) / b))
        return np.where(np.abs(d) < b, m1, ftz(np.abs(d) - np.float32(0.5) * b))

    # -- the page's phase-1 table -------------------------------------------------------------
    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        reject = {
            **self.null_rows(),
            "NULL before a bad dtype and beta -1 (row 2)": (sig(s=None, dt="bfloat16", product="atlas-training",
                                                               beta=-1.0), 161001),
            "self bfloat16 on atlas-training (row 3)": (sig(sdt="bfloat16", odt="float32", product="atlas-training"),
                                                        INVALID),
            "target bfloat16 on atlas-inference (row 3)": (sig(tdt="bfloat16", product="atlas-inference"), INVALID),
            "self int32 (row 3)": (sig(sdt="int32"), INVALID),
            "float32 into an int32 out (row 4)": (sig(odt="int32"), INVALID),
            "float16 into a bool out (row 4)": (sig(dt="float16", odt="bool"), INVALID),
            **self.reduction_rows(),
            "reduction before shapes (row 5)": (sig(reduction=3, s=(2, 4), out=(2, 4)), INVALID),
            **self.rank_rows(),
            "shapes do not broadcast (row 7)": (sig(s=(2, 4), out=(2, 4)), INVALID),
            "none: out is self's shape, not B (row 7)": (sig(s=(2, 1), out=(2, 1)), INVALID),
            "none: out 0-d (row 7)": (sig(out=()), INVALID),
            "beta -1 (row 8)": (sig(beta=-1.0), INVALID),
            "beta -inf (row 8)": (sig(beta=-math.inf), INVALID),
            "beta NaN (row 8)": (sig(beta=math.nan, reduction=1, out=()), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950": sig(dt="bfloat16", product="ascend-950"),
            "float16 with float32 promotes, out float16 (atlas-training)": sig(sdt="float16", odt="float16",
                                                                               product="atlas-training"),
            "bfloat16 with float16, out float32 (atlas-a3)": sig(sdt="bfloat16", tdt="float16", odt="float32",
                                                                product="atlas-a3"),
            "mean, out 0-d": sig(reduction=1, out=()),
            "sum, out [1]": sig(reduction=2, out=(1,)),
            "sum of a broadcast, out [1, 1]": sig(s=(2, 1), t=(3,), reduction=2, out=(1, 1)),
            "beta 0 on ascend-950": sig(beta=0.0, product="ascend-950"),
            "beta -0.0 on ascend-950": sig(beta=-0.0, product="ascend-950"),
            "beta +inf": sig(beta=math.inf),
            "0-d everything": sig(s=(), t=(), out=()),
            "empty mean": sig(s=(0, 3), t=(0, 3), reduction=1, out=()),
            "8-d": sig(s=R8, t=R8),
        }
        outside = {
            "mean into out [2, 3]": sig(reduction=1, out=(2, 3)),
            "out bfloat16 on atlas-training": sig(odt="bfloat16", product="atlas-training"),
            "beta 0 on atlas-a2": sig(beta=0.0),
        }
        return table(reject, accept, outside)


OP = SmoothL1Loss()
