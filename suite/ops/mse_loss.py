"""aclnnMseLoss: (self - target)^2 on B = broadcast(self, target), returned as it is (none), summed
(sum) or summed and divided by numel(B) (mean); out is B for none and 0-d for mean and sum
(docs/operators/MseLoss.md). The first forward loss: its out shape depends on the reduction, and
its mean and sum are one element summing the whole input."""
from __future__ import annotations

import math
from typing import Dict, Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID
from suite.ops.records import VendorNames
from suite.ops.base import Example, Rejection, Signature, ftz, table
from suite.ops.loss import R8, LossForward
from suite.values import sets as V
from suite.values.draw import Binades, Dist, Uniform


def _large(sig: Signature) -> Dict[str, Dist]:
    # |d| past 255.9 makes d^2 overflow float16 (65504); wider inputs: d^2 of 1e5..1e12 is past
    # float16's and bfloat16's comfort and still far below float32's maximum (d < 1.8e19).
    if V.narrowest(sig.dtypes.values()) == "float16":
        return {"self": Uniform(200.0, 300.0), "target": Uniform(-60.0, 60.0)}
    return {"self": Binades(1e5, 1e12), "target": Uniform(-1.0, 1.0)}


def _tiny(sig: Signature) -> Dict[str, Dist]:
    # d^2 in out's subnormal range: d about sqrt of it.
    a = math.sqrt(V.tiny_scale(sig.out_dtype, sig.dtypes.values()))
    return {"self": Uniform(-a, a), "target": Uniform(-a, a)}


def _close(sig: Signature) -> Dict[str, Dist]:
    # self = target in many elements (exact zero terms), nearly equal in the rest: cancellation in d.
    return {"self": Uniform(0.5, 0.5 + 2.0 ** -6), "target": Uniform(0.5, 0.5 + 2.0 ** -6)}


class MseLoss(LossForward):
    """The loss family's helpers (NULL rows, reduction rows, page-table signatures) serve the
    forward too: the C signature is self, target, int64 reduction, out [MSE-H]."""

    name = "MseLoss"
    # The vendor's system tests [cases import]: the kernel MseLoss takes (predict, label)
    # (ops-nn @e5c3fa93 loss/mse_loss/op_graph/mse_loss_proto.h).
    vendor = VendorNames(ttk="mse_loss", ttk_inputs=("self", "target"), ttk_defaults={"reduction": "mean"})
    aten = "mse_loss"    # on the inputs broadcast to B: its mean divides by numel(B), an empty mean is NaN
    value_sets = {"uniform": V.uniform_set, "large": _large, "tiny": _tiny, "close": _close,
                  "specials": V.specials_set}
    # A 48-core A2's reduction tiling (elements): one core below `one_core`, all cores from
    # `all_cores`, `tile` elements a tile single-buffered, double buffering from `db_from`.
    tiling_names = ("one_core", "all_cores", "tile", "db_from")
    # atlas-training runs the TBE MseLoss, whose reduce_sum schedule over cores (partial sums or
    # atomics) is not public: its mean and sum are not held to identical bits (the page's
    # "Determinism" and "Differences between this page and the suite", item 5).
    nondeterministic = {"atlas-training": {"reduction": (1, 2)}}
    term_text = "(self - target)^2"        # the term, as a failure message names it

    def tiling(self, hw, dts) -> Dict[str, int]:
        """MSELossV2's host tiling (loss/mse_loss_v2/op_host/arch22/mse_loss_v2_tiling.cpp
        @e5c3fa93), for the product's largest core count: blocks = N / e (e = 8 float32, 16
        16-bit); a core takes at least 128 blocks, so one core runs N < 128 e and all of them from
        128 e (cores - 1) + 1 blocks; the sum/mean tile is (UB blocks - cores - 1) / 2 (float32) or
        / 6 (16-bit) blocks; double buffering from two tiles per core. The atlas-training TBE
        kernel's tiling is not public: the same arithmetic is the best estimate there."""
        e = hw.block_bytes // (4 if dts["self"] == "float32" and dts["target"] == "float32" else 2)
        cores = max(hw.cores)
        ub_blocks = hw.ub_bytes // hw.block_bytes
        tile = (ub_blocks - cores - 1) // (2 if e == 8 else 6) * e
        return {"one_core": 128 * e, "all_cores": (128 * (cores - 1) + 1) * e, "tile": tile,
                "db_from": 2 * tile * cores}

    # -- contract -------------------------------------------------------------------------------
    def check(self, sig: Signature) -> Rejection:
        """The rejection table of the page, in the code's order (rows 2 to 10; row 1, a NULL
        workspaceSize or executor, is not a call the suite can make): out () only for mean and sum,
        the only one-element out they accept ([MSE-API] CheckShape)."""
        return (self._nulls(sig) or self._promoted(sig) or self._unsupported_dtype(sig, ["self", "target", "out"])
                or self._reduction(sig) or self._shape_checks(sig))

    # -- numbers ----------------------------------------------------------------------------------
    # mean of an empty B: the op API fills out with NaN (0/0); sum: 0 [MSE-API] (`empty_fill`).
    def loss(self, x, attrs) -> np.ndarray:
        d = x["self"] - x["target"]
        return d * d

    def reference_loss(self, x, attrs) -> np.ndarray:
        """MSELossV2 in FLOAT: d = x - y, s = d * d, and for mean s * float(1.0 / N). The kernel
        applies the scale to each tile's 8-lane partial sum; here it is applied per term, which
        differs by rounding only."""
        d = ftz(x["self"] - x["target"])
        return ftz(d * d)

    # -- the page's phase-1 table -------------------------------------------------------------
    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        reject = {
            **self.null_rows(),
            "bfloat16 on atlas-training (row 3)": (sig(dt="bfloat16", product="atlas-training"), INVALID),
            "bfloat16 on atlas-inference (row 3)": (sig(dt="bfloat16", odt="float32", product="atlas-inference"),
                                                    INVALID),
            "out bfloat16 on atlas-training (row 6)": (sig(odt="bfloat16", product="atlas-training"), INVALID),
            **self.reduction_rows(),
            "self 9-d (row 8)": (sig(s=(1, 1, 1, 1, 1, 1, 1, 2, 3), out=(1, 1, 1, 1, 1, 1, 1, 2, 3)), INVALID),
            "target 9-d (row 8)": (sig(t=(1, 1, 1, 1, 1, 1, 1, 2, 3), out=(1, 1, 1, 1, 1, 1, 1, 2, 3)), INVALID),
            "shapes do not broadcast (row 9)": (sig(s=(2, 4), out=(2, 4)), INVALID),
            "none: out is self's shape, not B (row 10)": (sig(s=(2, 1), out=(2, 1)), INVALID),
            "mean: out [1] (row 10)": (sig(reduction=1, out=(1,)), INVALID),
            "sum: out [] of a none call's shape (row 10)": (sig(reduction=2, out=(2, 3)), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950 (regbase: the three-dtype list)": sig(dt="bfloat16", product="ascend-950"),
            "float16 with float32 promotes (atlas-training)": sig(sdt="float16", odt="float32",
                                                                  product="atlas-training"),
            "float32 in, float16 out": sig(odt="float16", product="atlas-inference"),
            "bfloat16 on atlas-a2": sig(dt="bfloat16"),
            "bfloat16 with float16, out bfloat16 (atlas-a3)": sig(sdt="bfloat16", tdt="float16", odt="bfloat16",
                                                                 product="atlas-a3"),
            "0-d everything": sig(s=(), t=(), out=()),
            "0-d self": sig(s=(), t=(2, 3)),
            "mean, 0-d out": sig(reduction=1, out=()),
            "sum of a broadcast, 0-d out": sig(s=(2, 1), t=(3,), reduction=2, out=()),
            "empty mean": sig(s=(0, 3), t=(0, 3), reduction=1, out=()),
            "empty none": sig(s=(0, 3), t=(3,)),
            "8-d": sig(s=R8, t=R8),
        }
        return table(reject, accept)


OP = MseLoss()
