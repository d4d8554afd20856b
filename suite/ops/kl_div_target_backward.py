"""aclnnKlDivTargetBackward: the KL loss's gradient with respect to target, gradOutput * (log(target)
- self + 1), or gradOutput * exp(target) * (target - self + 1) with logTarget, on B = broadcast(self,
target), scaled by the reduction and summed back to target's shape (docs/operators/KlDivTargetBackward.md).
KlDivBackward's reductions, logTarget, divisors and descriptions are this operator's too."""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.ops.base import LOSS_DTYPES, Example, Rejection, Shape, Signature, ftz, numel, table
from suite.ops.kl_div import _negative_targets, _uniform
from suite.ops.kl_div_backward import KlDivBackward
from suite.ops.loss import R8
from suite.ops.records import VendorNames
from suite.values import sets as V
from suite.values.draw import Binades, Dist, Sprinkle, Uniform

SERVED, UNLISTED = ("atlas-a2", "atlas-a3", "ascend-950"), ("atlas-training", "atlas-inference", "atlas-200i-500-a2")


def _large(sig: Signature) -> Dict[str, Dist]:
    # Results past float16's range: exp(target) past it with logTarget, a large self without (a large
    # target too: log(target) and (g * target) / target); every float32 intermediate finite.
    half = V.narrowest(sig.dtypes.values()) == "float16"
    d = _uniform(sig)
    if sig.attrs.get("logTarget"):
        d["target"] = Uniform(6.0, 15.0) if half else Uniform(20.0, 60.0)
    else:
        d["self"] = Binades(2e3, 3e4) if half else Binades(1e5, 1e12)
        d["target"] = Binades(1.0, 3e4, signed=False) if half else Binades(1.0, 1e12, signed=False)
    return d


def _tiny(sig: Signature) -> Dict[str, Dist]:
    # logTarget: exp(target) in out's subnormal range; without: gradOutput * target there, which a
    # flushing core zeroes, losing the (g * target) / target term (the page's "Numeric hazards").
    d = _uniform(sig)
    if sig.attrs.get("logTarget"):
        d["target"] = Uniform(V.ln_tiny(sig.out_dtype) - 4.0, V.ln_tiny(sig.out_dtype) + 0.5)
    else:
        a = V.tiny_scale(sig.out_dtype, sig.dtypes.values())
        d["target"], d["gradOutput"] = Binades(a / 4, a, signed=False), Binades(a / 4, a)
    return d


def _specials(sig: Signature) -> Dict[str, Dist]:
    """NaN, +-inf and +-0 sprinkled into every input, a plain target's other values positive (a
    negative one is NaN whatever gradOutput is: `nonpos_targets`)."""
    return {n: Sprinkle(v, V.SPECIALS, 0.2) for n, v in _uniform(sig).items()}


class KlDivTargetBackward(KlDivBackward):
    name = "KlDivTargetBackward"
    # No system-test files in ops-nn for it; the kernel KlDivTargetLossGrad takes (grad, input, target)
    # [KLT-DEF].
    vendor = VendorNames(ttk="kl_div_target_loss_grad", ttk_inputs=("gradOutput", "self", "target"),
                         ttk_attrs={"log_target": "logTarget"}, ttk_defaults={"reduction": "mean", "log_target": False})
    value_sets = {"uniform": _uniform, "nonpos_targets": _negative_targets, "large": _large, "tiny": _tiny,
                  "specials": _specials}
    # GetSupportDtypeList: the three-dtype list on ASCEND910B, ASCEND910_93 and regbase chips, an
    # empty one (every call 161002 after the NULL checks) on the others [KLT-API].
    product_dtypes = {**{p: frozenset() for p in UNLISTED}, **{p: LOSS_DTYPES[p] for p in SERVED}}
    tiling_names: Tuple[str, ...] = ()        # l0 ops and library templates: no boundary of its own
    reads = None                              # self's values are read
    grad_of = "target"

    def tiling(self, hw, dts) -> Dict[str, int]:
        return {}                             # not KlDivLossGrad's: no tile for the scale mutants' model

    def out_shape(self, shapes, attrs) -> Optional[Shape]:
        return shapes.get("target")

    def _row_out(self, shapes):
        return (2, 3) if shapes["target"] is None else shapes["target"]

    def check(self, sig: Signature) -> Rejection:
        """The page's rejection table in the code's order (CanCast(self, out) assumed to pass)."""
        bad = self._nulls(sig) or self._unsupported_dtype(sig, [*self.inputs, "out"])
        if bad:
            return bad
        if sig.out_dtype != sig.dtypes["target"]:
            return INVALID, f"out dtype {sig.out_dtype} is not target's {sig.dtypes['target']}"
        return self._shape_checks(sig)

    def outside_contract(self, sig: Signature) -> Optional[str]:
        red, s = sig.attrs.get("reduction"), sig.shapes.get("self")
        if red not in (0, 1, 2, 3):
            return "reduction outside 0-3 is undocumented (the code computes it as none)"
        b = None if any(v is None for v in sig.shapes.values()) else self._b(sig.shapes)
        if b is None:
            return None
        if red == 3 and len(b) == 0:
            return "batchmean of a 0-d broadcast shape has no first dimension"
        if numel(s) == 0 and numel(sig.shapes["target"]) != 0:
            return "an empty self with a non-empty target: the op API returns before writing out"
        if sig.product == "ascend-950" and red in (1, 3) and \
                (numel(s) if red == 1 else (s or (1,))[0]) != self._divisor(sig.attrs, sig.shapes):
            return "on the 950 mean and batchmean divide by self's count, on A2/A3 by B's"
        return None

    def term_dtype(self, dts: Mapping[str, str]) -> str:
        """The 950's KlDivTargetLossGrad writes its terms in the inputs' dtype when all three share it
        (ReduceSum then reads that); A2/A3 keep FLOAT, which the wider window admits."""
        same = {dts.get(n) for n in self.inputs}
        return same.pop() if len(same) == 1 else "float32"

    def result_dtype(self, dts, out_dtype) -> str:
        return dts.get("target") or out_dtype      # out's dtype is target's: FLOAT, then one cast

    def terms(self, x, attrs, shapes) -> np.ndarray:
        """The code's form in float64: the formula wherever target is finite and positive."""
        g, s, t = x["gradOutput"], x["self"], x["target"]
        d = self._divisor(attrs, shapes)
        g = g if d is None else g / d
        if attrs["logTarget"]:
            e = np.exp(t)
            return g * (t - s) * e + g * e
        return g * np.log(t) - g * s + g * t / t

    def reference_terms(self, x, attrs, shapes) -> np.ndarray:
        """ComputeGradForKlDiv's l0 ops in FLOAT, in its order, each result flushed [KLT-API]."""
        g, s, t = x["gradOutput"], x["self"], x["target"]
        d = self._divisor(attrs, shapes)
        g = g if d is None else ftz(g / np.float32(d))
        if attrs["logTarget"]:
            e = ftz(np.exp(t))
            return ftz(ftz(ftz(g * ftz(t - s)) * e) + ftz(g * e))
        return ftz(ftz(ftz(g * ftz(np.log(t))) - ftz(g * s)) + ftz(ftz(g * t) / t))

    def examples(self) -> Tuple[Example, ...]:
        """The page's phase-1 table, row by row; `case_*` rows are the vendor's unit tests [KLT-UT]."""
        sig = self.sig
        reject = {
            **self.null_rows(),
            **{f"float32 on {p} (no dtype listed)": (sig(product=p), INVALID) for p in UNLISTED},
            "NULL first on atlas-training": (sig(g=None, product="atlas-training"), NULLPTR),
            "empty self on atlas-200i-500-a2": (sig(s=(0, 3), t=(0, 3), product="atlas-200i-500-a2"), INVALID),
            "case_checkdtype: gradOutput INT32": (sig(gdt="int32"), INVALID),
            "out float32 for a float16 target": (sig(tdt="float16"), INVALID),
            "out float16 for a float32 target (self float16)": (sig(sdt="float16", odt="float16"), INVALID),
            **self.rank_rows(("gradOutput", "self", "target", "out")),
            "case_nine_dims: 9-d gradOutput, empty self": (sig(g=(1,) * 7 + (2, 2), s=(0, 2), t=(0, 2)), INVALID),
            "case_checkshape_target_not_broadcast": (sig(s=(2, 4)), INVALID),
            "gradOutput does not broadcast to B": (sig(g=(3, 3)), INVALID),
            "gradOutput broadcasts with B but is larger": (sig(g=(2, 3), s=(3,), t=(3,)), INVALID),
            "out is B, not target's shape": (sig(t=(2, 1), out=(2, 3)), INVALID),
            "out is self's shape": (sig(s=(2, 3), t=(3,), out=(2, 3)), INVALID),
        }
        accept = {
            "case_dtype_promte: mixed inputs, out target's": sig(gdt="float16", tdt="float16", odt="float16"),
            "bfloat16 on ascend-950": sig(dt="bfloat16", product="ascend-950"),
            "bfloat16 on atlas-a3": sig(dt="bfloat16", product="atlas-a3"),
            "case_broadcast_1: target summed back": sig(g=(3, 1), s=(3, 5), t=(3, 1)),
            "case_broadcast_3: self widens B": sig(g=(3, 1, 1), s=(6, 3, 1, 7), t=(3, 5, 1)),
            "0-d": sig(g=(), s=(), t=()),
            "case_empty_tensor": sig(g=(3, 1, 0, 5), s=(3, 1, 0, 5), t=(3, 1, 0, 5)),
            "8-d": sig(g=R8, s=R8, t=R8),
        }
        outside = {
            "case_fp_reduction_exceed: reduction 6 (computed as none)": sig(reduction=6),
            "reduction -1": sig(reduction=-1),
            "batchmean of a 0-d broadcast shape": sig(g=(), s=(), t=(), reduction=3),
            "empty self, non-empty target": sig(g=(0, 3), s=(0, 3), t=(1, 3)),
            "mean on ascend-950 with self broadcast": sig(s=(3,), reduction=1, product="ascend-950"),
        }
        return table(reject, accept, outside)


OP = KlDivTargetBackward()
