"""aclnnKlDivBackward: g = -(target or exp(target)) * gradOutput on B = broadcast(self, target),
scaled by the reduction, then summed back to self's shape (docs/operators/KlDivBackward.md)."""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from suite.values import sets as V
from suite.contract import ACLNN_ERR_PARAM_INVALID
from suite.values.draw import Binades, Dist, Uniform
from suite.ops.base import (table, Attr, Example, Mutant, Operator, Rejection, Shape, Signature, Variant, broadcast,
                            element_inputs, ftz, numel, reduced_axes)


def _large(sig: Signature) -> Dict[str, Dist]:
    # Past float16's range in the result (and, for wider inputs, in the inputs themselves), while
    # every float32 intermediate stays far below float32's maximum.
    d = V.uniform_set(sig)
    half = V.narrowest(sig.dtypes.values()) == "float16"
    if sig.attrs.get("logTarget"):
        d["target"] = Uniform(6.0, 15.0) if half else Uniform(20.0, 60.0)
    else:
        d["target"] = Binades(2e3, 3e4) if half else Binades(1e5, 1e12)
    d["gradOutput"] = Binades(1.0, 4.0) if half else Binades(1.0, 1e3)
    return d


def _tiny(sig: Signature) -> Dict[str, Dist]:
    d = V.uniform_set(sig)
    if sig.attrs.get("logTarget"):
        ln_tiny = V.ln_tiny(sig.out_dtype)
        d["target"] = Uniform(ln_tiny - 4.0, ln_tiny + 0.5)
        d["gradOutput"] = Binades(0.05, 1.0)
    else:
        a = V.tiny_scale(sig.out_dtype, sig.dtypes.values())
        d["target"] = Binades(a / 4, a)
        d["gradOutput"] = Binades(a / 4, a)
    return d


class KlDivBackward(Operator):
    name = "KlDivBackward"
    reductions = {"none": 0, "mean": 1, "sum": 2, "batchmean": 3}
    attributes = (Attr("logTarget", bool, (False, True), False,
                       lambda v: "logtarget" if v else "plaintarget"),)
    c_params = Operator.c_params + (("logTarget", "bool", False),)
    value_sets = {"uniform": V.uniform_set, "nonpos_targets": V.nonpositive("target"), "large": _large,
                  "tiny": _tiny, "specials": V.specials_set}

    tiling_names = ("tile", "tile_sgrad")
    reads = ("gradOutput", "target")          # self gives the output's shape, never a value

    def tiling(self, hw, dts) -> Dict[str, int]:
        """ops-nn's Ascend C KlDivLossGrad tiling for 910B (experimental/loss/kl_div_loss_grad @e5c3fa93,
        the only public one for these chips): the UB's 32-byte blocks split into 6 (float32) or 12
        (16-bit, with float32 staging) double-buffered tiles, 4 or 8 when gradOutput is a scalar;
        cores get whole blocks, the first (blocks mod cores) one block more. The same arithmetic
        estimates the built-in kernel's boundaries on every product."""
        wide = dts["self"] == "float32" and dts["target"] == "float32"
        block_elems = hw.block_bytes // (4 if wide else 2)
        blocks = hw.ub_bytes // hw.block_bytes
        return {"tile": blocks // (6 if wide else 12) * block_elems,
                "tile_sgrad": blocks // (4 if wide else 8) * block_elems}

    def out_shape(self, shapes: Mapping[str, Optional[Shape]]) -> Optional[Shape]:
        return shapes.get("self")

    @staticmethod
    def _b(shapes) -> Optional[Shape]:
        return broadcast(shapes["self"], shapes["target"])

    def check(self, sig: Signature) -> Rejection:
        bad = self._nulls(sig) or self._unsupported_dtype(sig, [*self.inputs, "out"])
        if bad:
            return bad
        bad = self._rank(sig, with_out=True)
        if bad:
            return bad
        b = self._b(sig.shapes)
        if b is None:
            return ACLNN_ERR_PARAM_INVALID, "self and target do not broadcast"
        if broadcast(sig.shapes["gradOutput"], b) != b:
            return ACLNN_ERR_PARAM_INVALID, f"gradOutput {sig.shapes['gradOutput']} does not broadcast to {b}"
        if tuple(sig.out_shape) != tuple(sig.shapes["self"]):
            return ACLNN_ERR_PARAM_INVALID, f"out shape {tuple(sig.out_shape)} is not self's shape {sig.shapes['self']}"
        return 0, ""

    def outside_contract(self, sig: Signature) -> Optional[str]:
        red = sig.attrs.get("reduction")
        if red not in (0, 1, 2, 3):
            return "reduction outside 0-3 is undocumented"
        if any(s is None for s in sig.shapes.values()):
            return None
        b = self._b(sig.shapes)
        if b is None:
            return None
        if red == 3 and len(b) == 0:
            return "batchmean of a 0-d broadcast shape has no first dimension"
        if numel(b) == 0 and numel(sig.shapes["self"]) != 0:
            return "an empty broadcast shape with a non-empty self is undocumented"
        return None

    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        return self._b(shapes)

    @staticmethod
    def _all_float16(dts: Mapping[str, str]) -> bool:
        return all(dts.get(n) == "float16" for n in ("gradOutput", "self", "target"))

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """All-FLOAT16 inputs stay FLOAT16 through KlDivLossGrad and the sum back to self's shape;
        any other combination is computed in FLOAT; the op API then casts to out's dtype (the
        page's "How the vendor kernel computes")."""
        return "float16" if self._all_float16(dts) else "float32"

    def term_dtype(self, dts: Mapping[str, str]) -> str:
        """KlDivLossGrad's output, which ReduceSum reads: FLOAT16 for all-FLOAT16 inputs."""
        return "float16" if self._all_float16(dts) else "float32"

    def _divisor(self, attrs, shapes) -> Optional[int]:
        """mean: numel(B); batchmean: B[0]; otherwise none."""
        b = self._b(shapes)
        red, n = attrs["reduction"], numel(b)
        return n if red == 1 and n else b[0] if red == 3 and n else None

    def terms(self, x, attrs, shapes) -> np.ndarray:
        t = -(np.exp(x["target"]) if attrs["logTarget"] else x["target"]) * x["gradOutput"]
        d = self._divisor(attrs, shapes)
        return t if d is None else t / d                       # float64: the exact division

    def reference_terms(self, x, attrs, shapes) -> np.ndarray:
        t = ftz(-(ftz(np.exp(x["target"])) if attrs["logTarget"] else x["target"]) * x["gradOutput"])
        d = self._divisor(attrs, shapes)
        return t if d is None else ftz(t * np.float32(1.0 / d))    # the kernel's float32 coefficient

    def describe(self, x, attrs, out_shape, index) -> str:
        b = self._b({"self": x["self"].shape, "target": x["target"].shape})
        if tuple(b) == tuple(out_shape):
            return element_inputs(x, out_shape, index)
        axes = reduced_axes(tuple(out_shape), b)
        return f"a sum of {numel(b) // max(numel(out_shape), 1)} terms over axes {axes} of the broadcast shape {b}"

    def mutants(self):
        """Planted defects of this kernel (tests/mutants runs them with the generic ones)."""
        return (
            Mutant("KlSignFlip", "KL: the gradient is +target*grad instead of -target*grad",
                   _SignFlip(), where=lambda c: True),
            Mutant("KlMeanDivisorNumelSelf", "KL mean divides by numel(self) instead of numel(broadcast shape)",
                   _MeanDivisorNumelSelf(),
                   where=lambda c: c.expect == 0 and c.reduction == 1
                   and numel(self._case_b(c)) != numel(c.shapes["self"])),
            Mutant("KlBatchmeanSelfDim0", "KL batchmean divides by self.shape[0] (PyTorch's) instead of B[0]",
                   _BatchmeanSelfDim0(),
                   where=lambda c: c.expect == 0 and c.reduction == 3
                   and (c.shapes["self"] or (1,))[0] != self._case_b(c)[0]),
            Mutant("KlMaskNonPositiveTargets",
                   "KL masks target <= 0 to a zero gradient (old PyTorch/vendor kernel) (issue 2)",
                   _MaskNonPositiveTargets(), where=lambda c: not c.attrs["logTarget"]),
            Mutant("KlLogTargetIgnored", "KL: logTarget ignored (uses target where exp(target) is due)",
                   _LogTargetIgnored(), where=lambda c: c.attrs["logTarget"]),
            # shows only at scale (no small case has a batch past 32767)
            Mutant("BatchCountInt16", "KL batchmean holds B[0] in int16: past 32767 it wraps negative",
                   _BatchCountInt16(),
                   where=lambda c: c.expect == 0 and c.reduction == 3 and self._case_b(c)[0] > 32767),
        )

    def variants(self):
        return (Variant("KlFloat32OtherOrder", "float32, KL (-grad*cof)*target", _OtherOrder()),)

    def _case_b(self, case) -> Shape:
        """B of a case whose shapes are valid (a numbers case)."""
        return self._b(dict(case.shapes))


    def examples(self) -> Tuple[Example, ...]:
        return _examples()


    def torch(self, torch, t, attrs, device):
        """Autograd through kl_div(reduction='none'); the reduction's scale is applied to the
        incoming gradient explicitly, because torch's batchmean divides by self.size(0) where the
        contract divides by B[0]. Autograd sums the broadcast dimensions back to self's shape."""
        g, x, y = t["gradOutput"], t["self"], t["target"]
        reduction = int(attrs["reduction"])
        if reduction not in self.reductions.values():
            raise ValueError(f"torch backend: {self.name} reduction {reduction} not in "
                             f"{tuple(self.reductions.values())}")
        shape = torch.broadcast_shapes(x.shape, y.shape)
        if torch.broadcast_shapes(g.shape, shape) != shape:
            raise ValueError(f"torch backend: gradOutput {tuple(g.shape)} does not broadcast to {tuple(shape)}")
        incoming = g.expand(shape)
        if reduction == 1:
            incoming = incoming / shape.numel()
        elif reduction == 3:
            if len(shape) == 0:
                raise ValueError("torch backend: batchmean on a 0-d broadcast shape is outside the contract")
            incoming = incoming / shape[0]
        leaf = x.detach().requires_grad_(True)
        with torch.enable_grad():
            loss = torch.nn.functional.kl_div(leaf, y, reduction="none", log_target=bool(attrs["logTarget"]))
            (result,) = torch.autograd.grad(loss, leaf, incoming)
        return result


# -- the page's phase-1 table, row by row (Operator.examples) -----------------------------------
NULLPTR, INVALID = 161001, 161002
R9, R8 = (1, 1, 1, 1, 1, 1, 1, 2, 2), (1, 2, 1, 2, 1, 1, 2, 1)


def _sig(g=(2, 3), s=(2, 3), t=(2, 3), out="B", dt="float32", gdt=None, sdt=None, tdt=None, odt=None,
         reduction=0, product="atlas-a2", log_target=False) -> Signature:
    """A call's metadata; out="B" is the shape the contract wants (self's)."""
    shapes = {"gradOutput": g, "self": s, "target": t}
    dts = {"gradOutput": gdt or dt, "self": sdt or dt, "target": tdt or dt}
    if out == "B":
        out = s
    return Signature(shapes, dts, out, odt or sdt or dt, {"reduction": reduction, "logTarget": log_target},
                     product)


def _examples() -> Tuple[Example, ...]:
    reject = {
        "gradOutput NULL": (_sig(g=None), NULLPTR),
        "self NULL": (_sig(s=None, out=(2, 3)), NULLPTR),
        "target NULL": (_sig(t=None), NULLPTR),
        "out NULL": (_sig(out=None), NULLPTR),
        "gradOutput bfloat16 on atlas-training": (_sig(gdt="bfloat16", product="atlas-training"), INVALID),
        "self bfloat16 on atlas-training": (_sig(sdt="bfloat16", odt="float32", product="atlas-training"), INVALID),
        "target bfloat16 on atlas-inference": (_sig(tdt="bfloat16", product="atlas-inference"), INVALID),
        "out bfloat16 on atlas-inference": (_sig(odt="bfloat16", product="atlas-inference"), INVALID),
        "gradOutput 9-d": (_sig(g=R9, s=(2, 2), t=(2, 2)), INVALID),
        "self 9-d": (_sig(g=(2, 2), s=R9, t=(2, 2)), INVALID),
        "target 9-d": (_sig(g=(2, 2), s=(2, 2), t=R9), INVALID),
        "out 9-d": (_sig(g=(2, 2), s=(2, 2), t=(2, 2), out=R9), INVALID),
        "self and target do not broadcast": (_sig(s=(2, 4)), INVALID),
        "gradOutput does not broadcast to B": (_sig(g=(3, 3), s=(2, 3), t=(2, 3)), INVALID),
        "gradOutput broadcasts with B but is larger": (_sig(g=(2, 3), s=(3,), t=(3,)), INVALID),
        "out is B, not self's shape": (_sig(s=(2, 1), out=(2, 3)), INVALID),
        "out transposed": (_sig(out=(3, 2)), INVALID),
        "0-d out for 1-d self": (_sig(g=(4,), s=(4,), t=(4,), out=()), INVALID),
    }
    accept = {
        "mixed input dtypes": _sig(gdt="float16", sdt="float32", tdt="float16", odt="float32"),
        "mixed with bfloat16 on atlas-a2": _sig(gdt="bfloat16", sdt="float32", tdt="float16"),
        "out float16 from float32 self": _sig(odt="float16", product="atlas-training"),
        "out float32 from float16 self": _sig(dt="float16", odt="float32", product="atlas-inference"),
        "0-d": _sig(g=(), s=(), t=()),
        "0-d self, 2-d target": _sig(g=(), s=(), t=(3, 4)),
        "empty self": _sig(g=(0, 3), s=(0, 3), t=(0, 3)),
        "8-d": _sig(g=R8, s=R8, t=R8),
        "self fewer dims than target": _sig(g=(2, 3, 4), s=(4,), t=(2, 3, 4), reduction=3),
        "logTarget": _sig(log_target=True, reduction=1),
        # phase 1 does not look at reduction: values outside 0-3 are outside the contract, not rejected
        "reduction 7": _sig(reduction=7),
    }
    outside = {  # accepted by phase 1, yet undocumented: the suite makes no case of them
        "reduction 7": _sig(reduction=7),
        "reduction 4": _sig(reduction=4),
        "batchmean of a 0-d broadcast shape": _sig(g=(), s=(), t=(), reduction=3),
        "empty B with a non-empty self": _sig(g=(0, 3), s=(1, 3), t=(0, 3)),
    }
    return table(reject, accept, outside)



# -- the kernels of the mutants and variants: each overrides one method ---------------------------
class _SignFlip(KlDivBackward):
    def reference_terms(self, x, attrs, shapes):
        return -super().reference_terms(x, attrs, shapes)


class _MeanDivisorNumelSelf(KlDivBackward):
    def _divisor(self, attrs, shapes):
        n = numel(shapes["self"])
        return n if attrs["reduction"] == 1 and n else super()._divisor(attrs, shapes)


class _BatchmeanSelfDim0(KlDivBackward):
    def _divisor(self, attrs, shapes):
        if attrs["reduction"] == 3 and numel(self._b(shapes)):
            return (shapes["self"] or (1,))[0]
        return super()._divisor(attrs, shapes)


class _MaskNonPositiveTargets(KlDivBackward):
    def reference_terms(self, x, attrs, shapes):
        if not attrs["logTarget"]:
            x = {**x, "target": np.where(x["target"] > 0, x["target"], np.float32(0.0))}
        return super().reference_terms(x, attrs, shapes)


class _LogTargetIgnored(KlDivBackward):
    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms(x, {**attrs, "logTarget": False}, shapes)


class _BatchCountInt16(KlDivBackward):
    def _divisor(self, attrs, shapes):
        b = self._b(shapes)
        if attrs["reduction"] == 3 and numel(b):
            return int(np.array(b[0]).astype(np.int64).astype(np.int16))
        return super()._divisor(attrs, shapes)


class _OtherOrder(KlDivBackward):
    """((-grad)*cof)*target: the coefficient on the gradient first."""

    def reference_terms(self, x, attrs, shapes):
        d = self._divisor(attrs, shapes)
        g = -x["gradOutput"] if d is None else (-x["gradOutput"]) * np.float32(1.0 / d)
        return g * (np.exp(x["target"]) if attrs["logTarget"] else x["target"])


OP = KlDivBackward()
