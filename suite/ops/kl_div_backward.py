"""aclnnKlDivBackward: g = -(target or exp(target)) * gradOutput on B = broadcast(self, target),
scaled by the reduction, then summed back to self's shape (docs/operators/KlDivBackward.md)."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.values import sets as V
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.values.draw import Binades, Dist, Uniform
from suite.ops.records import VendorNames
from suite.ops.base import (LOSS_DTYPES, Attr, Example, Rejection, Shape, Signature, broadcast, element_inputs,
                            ftz, numel, reduced_axes, table)
from suite.ops.loss import R8, LossBackward


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


class KlDivBackward(LossBackward):
    name = "KlDivBackward"
    # The vendor's system tests [cases import]: ATK spells grad_output, input, log_target; the
    # kernel KlDivLossGrad takes (grad, input, target)
    # (ops-nn @e5c3fa93 loss/kl_div_loss_grad/op_graph/kl_div_loss_grad_proto.h).
    vendor = VendorNames(atk_names={"grad_output": "gradOutput", "input": "self", "log_target": "logTarget"},
                         ttk="kl_div_loss_grad", ttk_inputs=("gradOutput", "self", "target"),
                         ttk_attrs={"log_target": "logTarget"},
                         ttk_defaults={"reduction": "mean", "log_target": False})
    reductions = {"none": 0, "mean": 1, "sum": 2, "batchmean": 3}
    attributes = (Attr("logTarget", bool, (False, True), False,
                       lambda v: "logtarget" if v else "plaintarget"),)
    value_sets = {"uniform": V.uniform_set, "nonpos_targets": V.nonpositive("target"), "large": _large,
                  "tiny": _tiny, "specials": V.specials_set}

    # The family's lists, and on Atlas 200I/500 A2 none: the op API's GetSupportDtypeList returns an
    # empty list for any chip but ASCEND910B, ASCEND910_93, a regbase one, ASCEND910 and ASCEND310P,
    # so every call with its four tensors given is 161002 there ([KL-API]; the page's
    # "Products").
    product_dtypes = {**LOSS_DTYPES, "atlas-200i-500-a2": frozenset()}
    tiling_names = ("tile", "tile_sgrad")
    reads = ("gradOutput", "target")          # self gives the output's shape, never a value
    grad_of = "self"                          # the gradient's input (the torch mapping's leaf)
    row_out = "self"

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

    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        return shapes.get("self")

    @staticmethod
    def _b(shapes) -> Optional[Shape]:
        return broadcast(shapes["self"], shapes["target"])

    def check(self, sig: Signature) -> Rejection:
        bad = self._nulls(sig) or self._unsupported_dtype(sig, [*self.inputs, "out"])
        if bad:
            return bad
        return self._shape_checks(sig)

    def _shape_checks(self, sig: Signature) -> Rejection:
        """The shape rows, in the code's order: ranks, self with target, gradOutput to B, and out
        of the shape of the input the gradient is of (`grad_of`)."""
        bad = self._rank(sig, with_out=True)
        if bad:
            return bad
        b = self._b(sig.shapes)
        if b is None:
            return INVALID, "self and target do not broadcast"
        if broadcast(sig.shapes["gradOutput"], b) != b:
            return INVALID, f"gradOutput {sig.shapes['gradOutput']} does not broadcast to {b}"
        g = self.grad_of
        if tuple(sig.out_shape) != tuple(sig.shapes[g]):
            return INVALID, f"out shape {tuple(sig.out_shape)} is not {g}'s shape {sig.shapes[g]}"
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

    def torch(self, torch, t, attrs, device):
        """Autograd through kl_div(reduction='none'); the reduction's scale is applied to the
        incoming gradient explicitly, because torch's batchmean divides by self.size(0) where the
        contract divides by B[0]. Autograd sums the broadcast dimensions back to the shape of
        `grad_of`, the input the gradient is taken with respect to."""
        g, x, y = t["gradOutput"], t["self"], t["target"]
        reduction = self.torch_reduction(attrs)
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
        xs = {"self": x, "target": y}
        leaf = xs[self.grad_of] = xs[self.grad_of].detach().requires_grad_(True)
        with torch.enable_grad():
            loss = torch.nn.functional.kl_div(xs["self"], xs["target"], reduction="none",
                                              log_target=bool(attrs["logTarget"]))
            (result,) = torch.autograd.grad(loss, leaf, incoming)
        return result

    def examples(self) -> Tuple[Example, ...]:
        """The page's phase-1 table, row by row."""
        sig = self.sig
        reject = {
            **self.null_rows(),
            "gradOutput bfloat16 on atlas-training": (sig(gdt="bfloat16", product="atlas-training"), INVALID),
            "self bfloat16 on atlas-training": (sig(sdt="bfloat16", odt="float32", product="atlas-training"), INVALID),
            "target bfloat16 on atlas-inference": (sig(tdt="bfloat16", product="atlas-inference"), INVALID),
            "out bfloat16 on atlas-inference": (sig(odt="bfloat16", product="atlas-inference"), INVALID),
            # Atlas 200I/500 A2: GetSupportDtypeList gives no dtype at all, so every call is 161002
            "gradOutput NULL on atlas-200i-500-a2 (NULL first)": (sig(g=None, product="atlas-200i-500-a2"), NULLPTR),
            "float32 on atlas-200i-500-a2 (no dtype listed)": (sig(product="atlas-200i-500-a2"), INVALID),
            "float16 on atlas-200i-500-a2": (sig(dt="float16", product="atlas-200i-500-a2"), INVALID),
            "empty self on atlas-200i-500-a2 (the list before the empty-tensor path)":
                (sig(g=(0, 3), s=(0, 3), t=(0, 3), product="atlas-200i-500-a2"), INVALID),
            **self.rank_rows(("gradOutput", "self", "target", "out")),
            "self and target do not broadcast": (sig(s=(2, 4)), INVALID),
            "gradOutput does not broadcast to B": (sig(g=(3, 3), s=(2, 3), t=(2, 3)), INVALID),
            "gradOutput broadcasts with B but is larger": (sig(g=(2, 3), s=(3,), t=(3,)), INVALID),
            "out is B, not self's shape": (sig(s=(2, 1), out=(2, 3)), INVALID),
            "out transposed": (sig(out=(3, 2)), INVALID),
            "0-d out for 1-d self": (sig(g=(4,), s=(4,), t=(4,), out=()), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950 (a regbase chip: the three-dtype list)": sig(dt="bfloat16", product="ascend-950"),
            "mixed input dtypes": sig(gdt="float16", sdt="float32", tdt="float16", odt="float32"),
            "mixed with bfloat16 on atlas-a2": sig(gdt="bfloat16", sdt="float32", tdt="float16"),
            "out float16 from float32 self": sig(odt="float16", product="atlas-training"),
            "out float32 from float16 self": sig(dt="float16", odt="float32", product="atlas-inference"),
            "0-d": sig(g=(), s=(), t=()),
            "0-d self, 2-d target": sig(g=(), s=(), t=(3, 4)),
            "empty self": sig(g=(0, 3), s=(0, 3), t=(0, 3)),
            "8-d": sig(g=R8, s=R8, t=R8),
            "self fewer dims than target": sig(g=(2, 3, 4), s=(4,), t=(2, 3, 4), reduction=3),
            "logTarget": sig(logTarget=True, reduction=1),
            # phase 1 does not look at reduction: values outside 0-3 are outside the contract, not rejected
            "reduction 7": sig(reduction=7),
        }
        outside = {  # accepted by phase 1, yet undocumented: the suite makes no case of them
            "reduction 7": sig(reduction=7),
            "reduction 4": sig(reduction=4),
            "batchmean of a 0-d broadcast shape": sig(g=(), s=(), t=(), reduction=3),
            "empty B with a non-empty self": sig(g=(0, 3), s=(1, 3), t=(0, 3)),
        }
        return table(reject, accept, outside)


OP = KlDivBackward()
