"""aclnnKlDiv: the pointwise KL loss target * (log(target) - self), or exp(target) * (target - self)
with logTarget, on B = broadcast(self, target), returned as it is (none), summed (sum), summed and
divided by numel(B) (mean) or by B[0] (batchmean, a 0-d input read as [1]); out is B for none and
any one-element shape for the other reductions (docs/operators/KlDiv.md). A zero target gives 0
(the kernels replace it by 1 before the log), a negative one NaN."""
from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.common import dtypes
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID
from suite.ops.records import VendorNames
from suite.ops.base import Attr, Example, Rejection, Shape, Signature, broadcast, ftz, numel, table
from suite.ops.loss import R8, LossForward, promote
from suite.values import sets as V
from suite.values.draw import Binades, Dist, Sprinkle, Uniform

# A reduction of at most this many elements runs on one core (the experimental A2 tiling, the only
# public one for these chips: docs/operators/KlDiv.md, "Tiling facts for the scale sets").
ONE_CORE = 8192


def _log_target(sig: Signature) -> bool:
    return bool(sig.attrs.get("logTarget"))


def _uniform(sig: Signature) -> Dict[str, Dist]:
    """self U[-5, 5); a plain target U[0, 5) (a negative one makes the term NaN, and every sum with
    it: that is `negative_targets`' job), a log-space target U[-5, 5). An integer operand (only in
    a rejection case: none is accepted) draws integers, as the shared uniform set does."""
    d = V.uniform_set(sig)
    if not _log_target(sig) and sig.dtypes.get("target") not in dtypes.EXACT:
        d["target"] = Uniform(0.0, 5.0)
    return d


def _zero_targets(sig: Signature) -> Dict[str, Dist]:
    """A quarter of the targets exact zeros of either sign: 0 * (log 1 - self) = 0 without
    logTarget (not 0 * log 0 = NaN), exp(0) * (0 - self) with it."""
    d = _uniform(sig)
    d["target"] = Sprinkle(d["target"], (0.0, -0.0), 0.25)
    return d


def _negative_targets(sig: Signature) -> Dict[str, Dist]:
    """Targets <= 0, a quarter exact zeros: NaN for every negative one without logTarget."""
    return V.nonpositive("target")(sig)


def _probabilities(sig: Signature) -> Dict[str, Dist]:
    """What the loss is for: self log-probabilities in [-20, 0), the target probabilities in [0, 1)
    or, with logTarget, log-probabilities in [-20, 0); terms of both signs that nearly cancel."""
    return {"self": Uniform(-20.0, 0.0), "target": Uniform(-20.0, 0.0) if _log_target(sig) else Uniform(0.0, 1.0)}


def _large(sig: Signature) -> Dict[str, Dist]:
    # Results past float16's range (and for wider inputs, targets themselves past it), while every
    # float32 intermediate stays far below float32's maximum: t * log t of 1e12 is 2.8e13; exp(60)
    # is 1.1e26.
    half = V.narrowest(sig.dtypes.values()) == "float16"
    d = _uniform(sig)
    if _log_target(sig):
        d["target"] = Uniform(6.0, 15.0) if half else Uniform(20.0, 60.0)
    else:
        d["target"] = Binades(2e3, 3e4, signed=False) if half else Binades(1e5, 1e12, signed=False)
    return d


def _tiny(sig: Signature) -> Dict[str, Dist]:
    """Tiny positive targets (t * log t -> 0), or with logTarget exp(t) in out's subnormal range."""
    d = {"self": Uniform(-1.0, 1.0)}
    if _log_target(sig):
        ln_tiny = V.ln_tiny(sig.out_dtype)
        d["target"] = Uniform(ln_tiny - 4.0, ln_tiny + 0.5)
    else:
        a = V.tiny_scale(sig.out_dtype, sig.dtypes.values())
        d["target"] = Binades(a / 4, a, signed=False)
    return d


class KlDiv(LossForward):
    """The loss family's helpers (NULL rows, reduction rows, page-table signatures) serve this
    forward too: the C signature is self, target, int64 reduction, bool logTarget, out [KL-H]."""

    name = "KlDiv"
    # The vendor's system tests [cases import]: ATK spells log_target; the kernel KLDivV2 takes
    # (x, target) (ops-math @c4193324 math/kl_div_v2/op_graph/kl_div_v2_proto.h).
    vendor = VendorNames(atk_names={"log_target": "logTarget"}, ttk="kl_div_v2", ttk_inputs=("self", "target"),
                         ttk_attrs={"log_target": "logTarget"},
                         ttk_defaults={"reduction": "mean", "log_target": False})
    reductions = {"none": 0, "mean": 1, "sum": 2, "batchmean": 3}
    attributes = (Attr("logTarget", bool, (False, True), False, lambda v: "logtarget" if v else "plaintarget"),)
    value_sets = {"uniform": _uniform, "zero_targets": _zero_targets, "negative_targets": _negative_targets,
                  "probabilities": _probabilities, "large": _large, "tiny": _tiny, "specials": V.specials_set}
    # The experimental A2 tiling (elements): `tile` a core's tile, a reduction of at most `one_core`
    # elements on one core.
    tiling_names = ("tile", "one_core")
    # The TBE KLDivV2's reduce_sum schedule over cores is not public; the list of APIs says
    # deterministic for A2/A3 only: on atlas-training and atlas-inference the reductions are judged
    # within the standard on a second run, not held to identical bits (the page's "Determinism").
    nondeterministic = {"atlas-training": {"reduction": (1, 2, 3)},
                        "atlas-inference": {"reduction": (1, 2, 3)}}

    def tiling(self, hw, dts) -> Dict[str, int]:
        """ops-math's experimental A2 KLDivV2 tiling (experimental/math/kl_div_v2/op_host/
        kl_div_v2_tiling.cpp @c4193324): the UB's 32-byte blocks halved (double buffering) and
        divided by 6 (FLOAT) or 8 (16-bit) make a tile, 4088 or 6128 elements on A2/A3; at most 8192
        elements run on one core. The kernel's dtype is P. The TBE kernel's tiling is not public:
        the same arithmetic is the best estimate on every product."""
        wide = promote(dts.get(n) for n in self.inputs) == "float32"
        per_block = hw.block_bytes // (4 if wide else 2)
        blocks = hw.ub_bytes // hw.block_bytes
        return {"tile": blocks // 2 // (6 if wide else 8) * per_block, "one_core": ONE_CORE}

    divisor_text = {1: " / numel(B)", 3: " / B[0]"}

    # -- contract -------------------------------------------------------------------------------
    # out_shape: B for none (and for a reduction outside 0..3, rejected anyway); () for mean, sum
    # and batchmean, whose out may be any one-element shape ([1], [1, 1]: `canonical_out` reshapes).
    def check(self, sig: Signature) -> Rejection:
        """The page's rejection table in the code's order: NULL (self, target, out), each dtype in
        the product's list (self, target, out), P and CanCast(P, out), rank (self, then target),
        reduction; an empty input is accepted here; then broadcast, none's out = B, one element."""
        bad = self._nulls(sig) or self._unsupported_dtype(sig, ["self", "target", "out"])
        if bad:
            return bad
        p = promote(sig.dtypes[n] for n in self.inputs)
        if p is None or p not in self.product_dtypes[sig.product]:
            return INVALID, f"self {sig.dtypes['self']} and target {sig.dtypes['target']} promote to {p or 'no dtype'}"
        bad = self._rank(sig, with_out=False) or self._reduction(sig)
        if bad:
            return bad
        if any(numel(sig.shapes[n]) == 0 for n in self.inputs):
            return 0, ""                    # decided before any shape check [KL-API]
        return self._shape_checks(sig, rank=False)

    def _reduced_out(self, out: Shape) -> Optional[str]:
        return None if numel(out) == 1 else f"has {numel(out)} elements (mean, sum, batchmean: one)"

    def outside_contract(self, sig: Signature) -> Optional[str]:
        """Empty inputs pass phase 1 before any shape check; the page leaves undocumented what
        happens to an out of the wrong shape then, to inputs that do not broadcast, and to a
        batchmean of a 0-d self with an empty target (dimension 0 of a 0-d shape)."""
        if any(sig.shapes.get(n) is None for n in self.inputs) or sig.out_shape is None:
            return None
        if not any(numel(sig.shapes[n]) == 0 for n in self.inputs):
            return None
        red = sig.attrs.get("reduction")
        if red not in self.reductions.values():
            return None
        b = broadcast(sig.shapes["self"], sig.shapes["target"])
        if b is None:
            return "empty inputs that do not broadcast are accepted, with no documented result"
        if red == 0 and tuple(sig.out_shape) != b:
            return "an empty none call with an out that is not B is accepted, with no documented result"
        if red != 0 and numel(sig.out_shape) != 1:
            return "an empty reduction into an out of more than one element: ViewCopy of the fill is undocumented"
        if red == 3 and len(sig.shapes["self"]) == 0:
            return "batchmean of a 0-d self with an empty target reads dimension 0 of a 0-d shape"
        return None

    # result_dtype: KLDivV2 writes P = promote(self, target) (FLOAT inside, rounded to P); the op
    # API casts that to out's dtype: two roundings where they differ (the page's "How the vendor
    # kernel computes").

    # -- numbers ----------------------------------------------------------------------------------
    def divisor(self, attrs: Mapping[str, Any], shapes: Mapping[str, Shape]) -> Optional[int]:
        """mean: numel(B); batchmean: B[0], a 0-d B read as [1] (two 0-d inputs divide by 1);
        none and sum: no division. An empty B divides by nothing (the fill decides)."""
        b = broadcast(shapes["self"], shapes["target"])
        red, n = attrs["reduction"], numel(b)
        if not n:
            return None
        return n if red == 1 else (b or (1,))[0] if red == 3 else None

    # mean of nothing: the op API fills out with NaN (0/0); sum: 0 [KL-API] (`empty_fill`).
    def empty_fill_of(self, attrs: Mapping[str, Any], shapes: Mapping[str, Shape]) -> Optional[float]:
        """batchmean of nothing: NaN when self's own first dimension is 0 (0/0), else 0 (0 over a
        nonzero count): the code reads self's shape here, not B's [KL-950-TILING] [KL-API]."""
        if attrs["reduction"] == 3:
            s = shapes["self"]
            return math.nan if s and s[0] == 0 else None
        return self.empty_fill(attrs)

    def loss(self, x, attrs) -> np.ndarray:
        s, t = x["self"], x["target"]
        if attrs["logTarget"]:
            return np.exp(t) * (t - s)
        return t * (np.log(np.where(t == 0, 1.0, t)) - s)        # 0 * log 0 taken as 0, log(t < 0) NaN

    def reference_loss(self, x, attrs) -> np.ndarray:
        """The TBE KLDivV2 in FLOAT: a zero target replaced by 1 before vlog (vcmp, vsel), then
        t * (log t - x); with logTarget exp(t) * (t - x); for mean and batchmean each term times the
        coefficient (float)(1.0 / N) before reduce_sum (vmuls)."""
        s, t = x["self"], x["target"]
        if attrs["logTarget"]:
            return ftz(ftz(np.exp(t)) * ftz(t - s))
        lg = ftz(np.log(np.where(t == 0, np.float32(1.0), t)))
        return ftz(t * ftz(lg - s))

    def term(self, attrs) -> str:
        return "exp(target) * (target - self)" if attrs["logTarget"] else "target * (log(target) - self)"

    def torch(self, torch, t, attrs, device):
        """torch.nn.functional.kl_div(reduction='none', log_target=logTarget) on the inputs broadcast
        to B (xlogy(t, t) - t * x: 0 for a zero target, NaN for a negative one, as the kernel; a
        target of +inf is given the kernel's t * (log t - x), where PyTorch's inf - inf is NaN), then
        the reduction here: PyTorch's 'batchmean' divides by self.size(0) before broadcasting (and a
        0-d self by nothing) where the contract divides by B[0], and its 'mean' warns; an empty
        batchmean is NaN only when self's first dimension is 0."""
        x, y = torch.broadcast_tensors(t["self"], t["target"])
        reduction = self.torch_reduction(attrs)
        loss = torch.nn.functional.kl_div(x, y, reduction="none", log_target=bool(attrs["logTarget"]))
        if not attrs["logTarget"]:
            # PyTorch's xlogy(t, t) - t * x is inf - inf = NaN for t = +inf and x >= 0; the kernel's
            # t * (log t - x) is +inf there (NaN only for x = +inf or NaN).
            loss = torch.where(torch.isposinf(y), y * (torch.log(y) - x), loss)
        if reduction == 0:
            return loss
        total = loss.sum()
        if reduction == 2:
            return total
        if reduction == 1:
            return total / loss.numel() if loss.numel() else torch.full((), math.nan, dtype=loss.dtype, device=device)
        if loss.numel() == 0:
            first = tuple(t["self"].shape)[:1]
            return torch.full((), math.nan if first == (0,) else 0.0, dtype=loss.dtype, device=device)
        return total / (tuple(loss.shape) or (1,))[0]

    # -- the page's phase-1 table -------------------------------------------------------------
    def examples(self) -> Tuple[Example, ...]:
        sig = self.sig
        reject = {
            **self.null_rows(),
            "self bfloat16 on atlas-training (row 2)": (sig(sdt="bfloat16", product="atlas-training"), INVALID),
            "self int32 (row 2)": (sig(sdt="int32"), INVALID),
            "target bfloat16 on atlas-inference (row 3)": (sig(tdt="bfloat16", product="atlas-inference"), INVALID),
            "target uint8 (row 3)": (sig(tdt="uint8"), INVALID),
            "out bfloat16 on atlas-training (row 4)": (sig(odt="bfloat16", product="atlas-training"), INVALID),
            "out int32 (row 4)": (sig(odt="int32"), INVALID),
            **self.rank_rows(),
            **self.reduction_rows(),
            "shapes do not broadcast (row 8)": (sig(s=(2, 4), out=(2, 4)), INVALID),
            "none: out is self's shape, not B (row 9)": (sig(s=(2, 1), out=(2, 1)), INVALID),
            "none of two 0-d inputs: out [1] (row 9)": (sig(s=(), t=(), out=(1,)), INVALID),
            "mean: out of B (row 10)": (sig(reduction=1), INVALID),
            "batchmean: out [2] (row 10)": (sig(reduction=3, out=(2,)), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950 (a regbase chip: the three-dtype list)": sig(dt="bfloat16", product="ascend-950"),
            "float16 with float32 promotes (atlas-training)": sig(sdt="float16", odt="float32", product="atlas-training"),
            "float32 in, float16 out": sig(odt="float16", product="atlas-inference"),
            "bfloat16 on atlas-a2": sig(dt="bfloat16"),
            "bfloat16 with float16, out float32 (atlas-a3)": sig(sdt="bfloat16", tdt="float16", odt="float32",
                                                                product="atlas-a3"),
            "0-d everything": sig(s=(), t=(), out=()),
            "0-d self, none": sig(s=(), t=(2, 3)),
            "mean, 0-d out": sig(reduction=1, out=()),
            "sum, out [1]": sig(reduction=2, out=(1,)),
            "batchmean, out [1, 1]": sig(reduction=3, out=(1, 1)),
            "batchmean of two 0-d inputs": sig(s=(), t=(), reduction=3, out=()),
            "logTarget": sig(logTarget=True, reduction=1, out=()),
            "empty none": sig(s=(0, 3), t=(0, 3)),
            "empty batchmean": sig(s=(0, 3), t=(3,), reduction=3, out=()),
            "empty inputs that do not broadcast": sig(s=(0, 3), t=(2,), out=(0, 3)),
            "empty none, out not B": sig(s=(0, 3), t=(0, 3), out=(5,)),
            "8-d": sig(s=R8, t=R8),
        }
        outside = {
            "empty inputs that do not broadcast": sig(s=(0, 3), t=(2,), out=(0, 3)),
            "empty none, out not B": sig(s=(0, 3), t=(0, 3), out=(5,)),
            "empty mean into an out of 3 elements": sig(s=(0, 3), t=(0, 3), reduction=1, out=(3,)),
            "batchmean of a 0-d self with an empty target": sig(s=(), t=(0,), reduction=3, out=()),
        }
        return table(reject, accept, outside)


OP = KlDiv()
