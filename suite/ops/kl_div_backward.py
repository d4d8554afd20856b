"""aclnnKlDivBackward: g = -(target or exp(target)) * gradOutput on B = broadcast(self, target),
scaled by the reduction, then summed back to self's shape (spec/KlDivBackward.md)."""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from suite import dtypes
from suite import values as V
from suite.contract import ACLNN_ERR_PARAM_INVALID, OpCall
from suite.ops.base import (Golden, Operator, Rejection, Shape, Signature, broadcast,
                            element_inputs, numel, reduced_axes, to_out)


def _large(sig: Signature, rng) -> dict:
    # Past float16's range in the result (and, for wider inputs, in the inputs themselves), while
    # every float32 intermediate stays far below float32's maximum.
    d = V.uniform_set(sig, rng)
    half = V.narrowest(sig.dtypes.values()) == "float16"
    tshape, gshape = sig.shapes["target"], sig.shapes["gradOutput"]
    if sig.attrs.get("logTarget"):
        d["target"] = V.uniform(rng, tshape, 6.0, 15.0) if half else V.uniform(rng, tshape, 20.0, 60.0)
    else:
        d["target"] = V.magnitudes(rng, tshape, 2e3, 3e4) if half else V.magnitudes(rng, tshape, 1e5, 1e12)
    d["gradOutput"] = V.magnitudes(rng, gshape, 1.0, 4.0) if half else V.magnitudes(rng, gshape, 1.0, 1e3)
    return d


def _tiny(sig: Signature, rng) -> dict:
    d = V.uniform_set(sig, rng)
    tshape, gshape = sig.shapes["target"], sig.shapes["gradOutput"]
    if sig.attrs.get("logTarget"):
        ln_tiny = float(np.log(dtypes.finfo(dtypes.dtype_of(sig.out_dtype)).tiny))
        d["target"] = V.uniform(rng, tshape, ln_tiny - 4.0, ln_tiny + 0.5)
        d["gradOutput"] = V.magnitudes(rng, gshape, 0.05, 1.0)
    else:
        a = V.tiny_scale(sig.out_dtype, sig.dtypes.values())
        d["target"] = V.magnitudes(rng, tshape, a / 4, a)
        d["gradOutput"] = V.magnitudes(rng, gshape, a / 4, a)
    return d


class KlDivBackward(Operator):
    name = "KlDivBackward"
    reductions = {"none": 0, "mean": 1, "sum": 2, "batchmean": 3}
    extra_attrs = {"logTarget": (False, True)}
    value_sets = {"uniform": V.uniform_set, "nonpos_targets": V.nonpos_targets_set, "large": _large,
                  "tiny": _tiny, "specials": V.specials_set}

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

    def golden(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object]) -> Golden:
        s_shape = x["self"].shape
        b = self._b({"self": s_shape, "target": x["target"].shape})
        with np.errstate(all="ignore"):
            base = np.exp(x["target"]) if attrs["logTarget"] else x["target"]
            terms = np.broadcast_to(-base * x["gradOutput"], b)
            red, n = attrs["reduction"], numel(b)
            if red == 1 and n:
                terms = terms / n
            elif red == 3 and n:
                terms = terms / b[0]
            axes = reduced_axes(s_shape, b)
            out = np.sum(terms, axis=axes).reshape(s_shape)
            scale = np.sum(np.abs(terms), axis=axes).reshape(s_shape)
        nterms = numel(b) // numel(s_shape) if numel(s_shape) else 1
        return Golden(out=np.asarray(out, np.float64), scale=np.asarray(scale, np.float64), nterms=nterms)

    def reference(self, call: OpCall) -> np.ndarray:
        g, s, t = (np.asarray(call.inputs[n], dtype=np.float32) for n in self.inputs)
        b = self._b({"self": s.shape, "target": t.shape})
        with np.errstate(all="ignore"):
            base = np.exp(t) if call.attrs["logTarget"] else t
            terms = np.broadcast_to(-base * g, b)
            red, n = call.attrs["reduction"], numel(b)
            if red == 1 and n:
                terms = terms * np.float32(1.0 / n)
            elif red == 3 and n:
                terms = terms * np.float32(1.0 / b[0])
            axes = reduced_axes(s.shape, b)
            r = np.sum(terms, axis=axes, dtype=np.float32).reshape(s.shape)
        return to_out(r, call.out_dtype)

    def describe(self, x, attrs, out_shape, index) -> str:
        b = self._b({"self": x["self"].shape, "target": x["target"].shape})
        if tuple(b) == tuple(out_shape):
            return element_inputs(x, out_shape, index)
        axes = reduced_axes(tuple(out_shape), b)
        return f"a sum of {numel(b) // max(numel(out_shape), 1)} terms over axes {axes} of the broadcast shape {b}"


OP = KlDivBackward()
