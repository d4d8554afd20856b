"""aclnnMseLossBackward: out = gradOutput * (self - target) * 2 [/ numel(self) for mean], on the
broadcast shape of all three inputs (spec/MseLossBackward.md)."""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from suite import values as V
from suite.contract import ACLNN_ERR_PARAM_INVALID, OpCall
from suite.ops.base import (Golden, Operator, Rejection, Shape, Signature, broadcast,
                            element_inputs, numel, to_out)


def _large(sig: Signature, rng) -> dict:
    # float16 inputs: |(x - y) * 2 * g| reaches ~5e5, past float16's 65504; wider inputs: 1e5..1e12,
    # beyond float16's range yet with every intermediate far below float32's maximum.
    if V.narrowest(sig.dtypes.values()) == "float16":
        lo, hi, glo, ghi = 2e3, 3e4, 1.0, 4.0
    else:
        lo, hi, glo, ghi = 1e5, 1e12, 1.0, 1e3
    return {"gradOutput": V.magnitudes(rng, sig.shapes["gradOutput"], glo, ghi),
            "self": V.magnitudes(rng, sig.shapes["self"], lo, hi),
            "target": V.magnitudes(rng, sig.shapes["target"], lo, hi)}


def _tiny(sig: Signature, rng) -> dict:
    a = V.tiny_scale(sig.out_dtype, sig.dtypes.values())
    return {"gradOutput": V.magnitudes(rng, sig.shapes["gradOutput"], a / 4, a),
            "self": V.uniform(rng, sig.shapes["self"], -a, a),
            "target": V.uniform(rng, sig.shapes["target"], -a, a)}


class MseLossBackward(Operator):
    name = "MseLossBackward"
    reductions = {"none": 0, "mean": 1, "sum": 2}
    value_sets = {"uniform": V.uniform_set, "nonpos_targets": V.nonpos_targets_set, "large": _large,
                  "tiny": _tiny, "specials": V.specials_set}

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

    def golden(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object]) -> Golden:
        with np.errstate(all="ignore"):
            out = x["gradOutput"] * (x["self"] - x["target"]) * 2.0
            if attrs["reduction"] == 1 and x["self"].size:
                out = out / x["self"].size
        out = np.asarray(out, dtype=np.float64)
        return Golden(out=out, scale=np.abs(out), nterms=1)

    def reference(self, call: OpCall) -> np.ndarray:
        g, s, t = (np.asarray(call.inputs[n], dtype=np.float32) for n in self.inputs)
        n = numel(s.shape)
        cof = np.float32(2.0) / np.float32(n) if call.attrs["reduction"] == 1 and n else np.float32(2.0)
        with np.errstate(all="ignore"):
            d = (s - t) * cof                 # the kernel's order: d = self - target; d *= cof
            r = d * g                         # r = d * gradOutput
        return to_out(np.broadcast_to(r, call.out_shape), call.out_dtype)

    def describe(self, x, attrs, out_shape, index) -> str:
        return element_inputs(x, out_shape, index)


OP = MseLossBackward()
