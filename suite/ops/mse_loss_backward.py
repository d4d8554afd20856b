"""aclnnMseLossBackward: out = gradOutput * (self - target) * 2 [/ numel(self) for mean], on the
broadcast shape of all three inputs (docs/operators/MseLossBackward.md)."""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from suite.common import blocks as B
from suite.values import sets as V
from suite.contract import ACLNN_ERR_PARAM_INVALID
from suite.values.draw import Binades, Dist, Uniform
from suite.ops.base import (table, Example, Mutant, Operator, Rejection, Shape, Signature, Variant, broadcast,
                            element_inputs, ftz, numel)


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


class MseLossBackward(Operator):
    name = "MseLossBackward"
    reductions = {"none": 0, "mean": 1, "sum": 2}
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

    def out_shape(self, shapes: Mapping[str, Optional[Shape]]) -> Optional[Shape]:
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
                return (ACLNN_ERR_PARAM_INVALID,
                        f"{n} dtype {sig.dtypes[n]} differs from self's {sig.dtypes['self']}")
        bad = self._unsupported_dtype(sig, ["out"])
        if bad:
            return bad
        red = sig.attrs.get("reduction")
        if red not in (0, 1, 2):
            return ACLNN_ERR_PARAM_INVALID, f"reduction {red} is not 0, 1 or 2"
        bad = self._rank(sig, with_out=False)
        if bad:
            return bad
        b = self.out_shape(sig.shapes)
        if b is None:
            return ACLNN_ERR_PARAM_INVALID, "gradOutput, self and target do not broadcast together"
        if tuple(sig.out_shape) != b:
            return ACLNN_ERR_PARAM_INVALID, f"out shape {tuple(sig.out_shape)} is not the broadcast shape {b}"
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

    def examples(self) -> Tuple[Example, ...]:
        return _examples()

    def mutants(self):
        """Planted defects of this kernel (tests/mutants runs them with the generic ones)."""
        return (
            Mutant("MseMissingFactor2", "MSE: the factor 2 of d/dx (x-y)^2 is missing",
                   _MissingFactor2(), where=lambda c: True),
            Mutant("MseSignFlip", "MSE: computes target - self instead of self - target",
                   _SignFlip(), where=lambda c: True),
            Mutant("MseMeanDivisorNumelB",
                   "MSE mean divides by numel(broadcast shape) instead of numel(self) (issue 2)",
                   _MeanDivisorNumelB(),
                   where=lambda c: c.expect == 0 and c.reduction == 1
                   and numel(c.out_shape) != numel(c.shapes["self"])),
            Mutant("MseSumAsMean", "MSE: reduction sum treated as mean (divides by numel(self))",
                   _SumAsMean(), where=lambda c: c.expect == 0 and c.reduction == 2
                   and numel(c.shapes["self"]) > 1),
            # shows only at scale (no small case has more than 65504 elements)
            Mutant("MeanCountInFloat16", "MSE mean on float16 inputs holds N in float16 for the "
                   "coefficient 2/N: past 65504 it is inf and every result 0", _MeanCountInFloat16(),
                   where=lambda c: c.expect == 0 and c.reduction == 1
                   and c.dtypes["self"] == "float16" and numel(c.shapes["self"]) > 65504),
        )

    def variants(self):
        return (Variant("MseFloat32OtherOrder", "float32, MSE (grad*2)*(self-target)/N",
                        _OtherOrder()),)

    def torch(self, torch, t, attrs, device):
        """aten's out= overload: its mean divisor is numel(self) as passed, and an out of the
        broadcast shape B avoids the functional form's deprecated resize of an out shaped like self."""
        g, x, y = t["gradOutput"], t["self"], t["target"]
        reduction = int(attrs["reduction"])
        if reduction not in self.reductions.values():
            raise ValueError(f"torch backend: {self.name} reduction {reduction} not in "
                             f"{tuple(self.reductions.values())}")
        out = torch.empty(torch.broadcast_shapes(g.shape, x.shape, y.shape), dtype=x.dtype, device=device)
        return torch.ops.aten.mse_loss_backward.grad_input(g, x, y, reduction, grad_input=out)


# -- the page's phase-1 table, row by row (Operator.examples) -----------------------------------
NULLPTR, INVALID = 161001, 161002
R9, R8 = (1, 1, 1, 1, 1, 1, 1, 2, 2), (1, 2, 1, 2, 1, 1, 2, 1)


def _sig(g=(2, 3), s=(2, 3), t=(2, 3), out="B", dt="float32", gdt=None, sdt=None, tdt=None, odt=None,
         reduction=0, product="atlas-a2") -> Signature:
    """A call's metadata; out="B" is the shape the contract wants (the broadcast shape)."""
    shapes = {"gradOutput": g, "self": s, "target": t}
    dts = {"gradOutput": gdt or dt, "self": sdt or dt, "target": tdt or dt}
    if out == "B":
        out = (2, 3) if None in (g, s, t) else broadcast(g, s, t)
    return Signature(shapes, dts, out, odt or sdt or dt, {"reduction": reduction}, product)


def _examples() -> Tuple[Example, ...]:
    reject = {
        "gradOutput NULL": (_sig(g=None), NULLPTR),
        "self NULL": (_sig(s=None, out=(2, 3)), NULLPTR),
        "target NULL": (_sig(t=None), NULLPTR),
        "out NULL": (_sig(out=None), NULLPTR),
        "gradOutput dtype differs from self": (_sig(gdt="float16"), INVALID),
        "target dtype differs from self": (_sig(tdt="float16"), INVALID),
        "gradOutput and target agree, self differs": (_sig(sdt="float16", odt="float32"), INVALID),
        "self bfloat16 on atlas-training": (_sig(dt="bfloat16", product="atlas-training"), INVALID),
        "self bfloat16 on atlas-inference": (_sig(dt="bfloat16", odt="float32", product="atlas-inference"), INVALID),
        "out bfloat16 on atlas-training": (_sig(odt="bfloat16", product="atlas-training"), INVALID),
        "out bfloat16 on atlas-inference": (_sig(dt="float16", odt="bfloat16", product="atlas-inference"), INVALID),
        "reduction 3": (_sig(reduction=3), INVALID),
        "reduction -1": (_sig(reduction=-1), INVALID),
        "gradOutput 9-d": (_sig(g=R9, s=(2, 2), t=(2, 2)), INVALID),
        "self 9-d": (_sig(g=(2, 2), s=R9, t=(2, 2)), INVALID),
        "target 9-d": (_sig(g=(2, 2), s=(2, 2), t=R9), INVALID),
        "shapes do not broadcast": (_sig(s=(2, 4), out=(2, 3)), INVALID),
        "gradOutput does not broadcast": (_sig(g=(3,), s=(2, 3), t=(2, 2), out=(2, 3)), INVALID),
        "out is self's shape, not B": (_sig(s=(2, 1), out=(2, 1)), INVALID),
        "out transposed": (_sig(out=(3, 2)), INVALID),
        "out with an extra 1": (_sig(out=(1, 2, 3)), INVALID),
        "0-d out of 1-element B": (_sig(g=(), s=(), t=(), out=(1,)), INVALID),
    }
    accept = {
        "float16 in, float32 out": _sig(dt="float16", odt="float32", product="atlas-training"),
        "float32 in, float16 out": _sig(dt="float32", odt="float16", product="atlas-inference"),
        "bfloat16 in, float16 out": _sig(dt="bfloat16", odt="float16", product="atlas-a3"),
        "bfloat16 on atlas-a2": _sig(dt="bfloat16"),
        "0-d everything": _sig(g=(), s=(), t=()),
        "0-d self": _sig(g=(2, 3), s=(), t=(2, 3)),
        "empty": _sig(g=(0, 3), s=(0, 3), t=(0, 3)),
        "only gradOutput empty": _sig(g=(0, 3), s=(3,), t=(1, 3)),
        "8-d": _sig(g=R8, s=R8, t=R8),
        "all three broadcast": _sig(g=(4, 1, 3), s=(1, 5, 1), t=(5, 3)),
        "every reduction": _sig(reduction=2),
        "mean": _sig(reduction=1),
    }
    return table(reject, accept)

# -- the kernels of the mutants and variants: each overrides one method ---------------------------
class _MissingFactor2(MseLossBackward):
    def reference_terms(self, x, attrs, shapes):
        n = numel(shapes["self"])
        cof = np.float32(1.0) / np.float32(n) if attrs["reduction"] == 1 and n else np.float32(1.0)
        return (x["self"] - x["target"]) * cof * x["gradOutput"]


class _SignFlip(MseLossBackward):
    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms({**x, "self": x["target"], "target": x["self"]}, attrs, shapes)


class _MeanDivisorNumelB(MseLossBackward):
    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms(x, attrs, {**shapes, "self": broadcast(*shapes.values())})


class _SumAsMean(MseLossBackward):
    def reference_terms(self, x, attrs, shapes):
        red = 1 if attrs["reduction"] in (1, 2) else attrs["reduction"]
        return super().reference_terms(x, {**attrs, "reduction": red}, shapes)


class _CountInFloat16(MseLossBackward):
    def reference_terms(self, x, attrs, shapes):
        n = numel(shapes["self"])
        if attrs["reduction"] != 1 or not n:
            return super().reference_terms(x, attrs, shapes)
        with np.errstate(over="ignore"):
            cof = np.float32(2.0) / np.float32(np.float16(n))
        return (x["self"] - x["target"]) * cof * x["gradOutput"]


class _MeanCountInFloat16(MseLossBackward):
    """N is held in float16 only when the inputs are float16 (reference_terms sees float32)."""

    def reference(self, call, block=B.BLOCK):
        half = call.inputs["self"].dtype == np.float16
        return (_CountInFloat16() if half else OP).reference(call, block)


class _OtherOrder(MseLossBackward):
    """((grad*2)*(self-target))/N, the division in float32."""

    def reference_terms(self, x, attrs, shapes):
        n = numel(shapes["self"])
        r = (x["gradOutput"] * np.float32(2.0)) * (x["self"] - x["target"])
        return r / np.float32(n) if attrs["reduction"] == 1 and n else r


OP = MseLossBackward()
