"""A made-up operator with two outputs, registered only in the tests (as aclnnNLLLoss has out and
totalWeightOut): TwoOutTestOp(x, y, reduction, out, total) writes out = x * y on the broadcast
shape and, unless reduction is none, total = the float32 sum of x * y, one element, always
float32 (the call leaves it untouched under none, as the forward class-index loss leaves its
weight sum). And the backends the tests hold it with: the reference, and ones that get one
output or the reply wrong.
A backend made from this module registers the operator in its own process too."""
from __future__ import annotations

from typing import Dict

import numpy as np

from suite import ops
from suite.backends.reference import ReferenceBackend
from suite.contract import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR
from suite.ops.base import Golden, Operator, Signature, broadcast, element_inputs
from suite.values import sets as V

NAME = "TwoOutTestOp"


class TwoOut(Operator):
    name = NAME
    inputs = ("x", "y")
    primary = "x"
    reductions = {"none": 0, "sum": 2}
    outputs = ("out", "total")
    c_params = (("x", "tensor", None), ("y", "tensor", None), ("reduction", "int64", 0))
    value_sets = {"uniform": V.uniform_set}

    def out_shape(self, shapes, attrs):
        if shapes.get("x") is None or shapes.get("y") is None:
            return None
        return broadcast(shapes["x"], shapes["y"])

    def output_shape(self, name, shapes, attrs):
        return () if name == "total" else super().output_shape(name, shapes, attrs)

    def output_dtype(self, name, dts, out_dtype, attrs):
        return "float32" if name == "total" else super().output_dtype(name, dts, out_dtype, attrs)

    def writes(self, name, attrs):
        return name != "total" or attrs["reduction"] != 0

    def b_shape(self, shapes):
        return broadcast(*shapes.values())

    def check(self, sig: Signature):
        bad = self._nulls(sig) or self._unsupported_dtype(sig, ["x", "y", "out"])
        if bad:
            return bad
        total_shape, total_dtype = sig.output("total")
        if total_shape is None:
            return ACLNN_ERR_PARAM_NULLPTR, "total is NULL"
        if sig.attrs["reduction"] not in (0, 2):
            return ACLNN_ERR_PARAM_INVALID, f"reduction {sig.attrs['reduction']} is not 0 or 2"
        b = broadcast(sig.shapes["x"], sig.shapes["y"])
        if b is None:
            return ACLNN_ERR_PARAM_INVALID, "x and y do not broadcast"
        if tuple(sig.out_shape) != b:
            return ACLNN_ERR_PARAM_INVALID, f"out shape {tuple(sig.out_shape)} is not {b}"
        if tuple(total_shape) != ():
            return ACLNN_ERR_PARAM_INVALID, f"total shape {tuple(total_shape)} is not ()"
        if total_dtype != "float32":
            return ACLNN_ERR_PARAM_INVALID, f"total dtype {total_dtype} is not float32"
        return 0, ""

    def terms(self, x, attrs, shapes):
        return x["x"] * x["y"]

    def reference_terms(self, x, attrs, shapes):
        return x["x"] * x["y"]

    def goldens(self, x, attrs, block=1 << 16) -> Dict[str, Golden]:
        found = {"out": self.golden(x, attrs, block)}
        if self.writes("total", attrs):
            t = (np.asarray(x["x"], dtype=np.float64) * np.asarray(x["y"], dtype=np.float64)).reshape(-1)
            found["total"] = Golden(out=np.array(t.sum()), scale=np.array(np.abs(t).sum()),
                                    nterms=max(t.size, 1), path=np.array(np.abs(np.cumsum(t)).sum()))
        return found

    def reference(self, call, block=1 << 16, flush=False) -> Dict[str, np.ndarray]:
        found = {"out": super().reference(call, block, flush)}
        if self.writes("total", call.attrs):
            t = (np.asarray(call.inputs["x"], dtype=np.float32) * np.asarray(call.inputs["y"], dtype=np.float32))
            found["total"] = np.array(np.sum(t, dtype=np.float32), dtype=np.float32)
        return found

    def describe(self, x, attrs, out_shape, index):
        return element_inputs(x, out_shape, index)

    def torch(self, torch, t, attrs, device):
        p = torch.broadcast_tensors(t["x"], t["y"])
        p = p[0] * p[1]
        return {"out": p, "total": p.sum().to(torch.float32)} if self.writes("total", attrs) else (p,)


OP = TwoOut()

CASES = """
op: TwoOutTestOp
matrices:
  - products: [atlas-a2]
    dtypes: [float32, float16]
    shapes:
      - [2x3, 2x3]
      - [4, scalar]
    determinism: true
cases:
  - {product: atlas-a2, dtypes: float32, reduction: sum, shapes: [2x3, 2x3], outputs: {total: {shape: [2]}}}
  - {product: atlas-a2, dtypes: float32, reduction: sum, shapes: [2x3, 2x3], outputs: {total: {dtype: float16}}}
  - {product: atlas-a2, dtypes: float32, reduction: sum, shapes: [2x3, 2x3], outputs: {total: {shape: null}}}
"""


def register() -> None:
    """Make the operator known in this process (the suite's, or a backend's own)."""
    ops.OPERATORS[NAME] = OP


class Reference(ReferenceBackend):
    """The reference backend, in a process that knows the made-up operator."""

    name = "reference-two-out"

    def __init__(self) -> None:
        register()


class Torch:
    """The torch backend, in a process that knows the made-up operator."""

    def __new__(cls):
        from suite.backends.torch_backend import TorchBackend
        register()
        return TorchBackend()


class WrongTotal(Reference):
    """total off by a lot (out right)."""

    def run(self, call):
        got = dict(super().run(call))
        if "total" in got:
            got["total"] = np.array(got["total"] * 2 + 1, dtype=np.float32)
        return got


class OneArray(Reference):
    """Today's contract, read literally: only out comes back."""

    def run(self, call):
        return super().run(call)["out"]


class Missing(Reference):
    def run(self, call):
        return {"out": super().run(call)["out"]}


class Extra(Reference):
    def run(self, call):
        return {**super().run(call), "spare": np.zeros((), np.float32)}


class WrongShape(Reference):
    def run(self, call):
        got = dict(super().run(call))
        got["total"] = np.zeros((1,), np.float32)
        return got


class Garbage(Reference):
    """Whatever in total where the call does not write it: NaN, or not even an array."""

    def run(self, call):
        got = dict(super().run(call))
        if call.attrs["reduction"] == 0:
            got["total"] = "not written" if call.out_shape and call.out_shape[0] == 4 else np.array(np.nan, np.float32)
        return got


class SharedTotal(Reference):
    """total is a view of out's first element (a float32 out): two outputs in one buffer."""

    def run(self, call):
        got = dict(super().run(call))
        if "total" in got and got["out"].dtype == np.float32 and got["out"].size:
            got["total"] = got["out"].reshape(-1)[:1].reshape(())
        return got


class DriftingTotal(Reference):
    """total's last bit flips from the second call on (out identical every time)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def run(self, call):
        self.calls += 1
        got = dict(super().run(call))
        if "total" in got and self.calls >= 2:
            got["total"] = np.array(got["total"]).view(np.uint32) ^ np.uint32(1)
            got["total"] = np.asarray(got["total"], dtype=np.uint32).view(np.float32).reshape(())
        return got
