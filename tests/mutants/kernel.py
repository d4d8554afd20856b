"""A correct float32 kernel for both operators, cut into the steps real kernels get wrong.

Each mutant in `gallery.py` overrides exactly one step with one defect; `Float32Kernel` itself is
the control: it must pass every case the mutants are judged on, so a mutant's failures are its
defect's and nothing else's.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from suite import ops
from suite.contract import PRODUCTS, AclnnError, OpCall
from suite.ops.base import Shape, Signature, broadcast, numel, reduced_axes, to_out

INPUTS = ("gradOutput", "self", "target")


class Float32Kernel:
    """Validates as aclnn does, widens to float32, computes in the vendor's order, rounds once."""

    name = "float32-kernel"
    description = "correct: float32 inside, one round to the out dtype"
    capabilities = {"status"}
    products = PRODUCTS

    def run(self, call: OpCall) -> np.ndarray:
        self.validate(call)
        x = {n: self.widen(self.load(call.inputs[n])) for n in INPUTS}
        if call.op == "MseLossBackward":
            r = self.mse(call, x["gradOutput"], x["self"], x["target"])
        else:
            r = self.kl(call, x["gradOutput"], x["self"], x["target"])
        return self.finish(self.round_out(r, call), call)

    # -- phase 1 -------------------------------------------------------------------------------
    def signature(self, call: OpCall) -> Signature:
        return Signature.of_call(call)

    def validate(self, call: OpCall) -> None:
        status, why = ops.get(call.op).check(self.signature(call))
        if status:
            raise AclnnError(status, why)

    # -- memory and precision ------------------------------------------------------------------
    def load(self, a: np.ndarray) -> np.ndarray:
        """The tensor's logical values (numpy honours its strides)."""
        return np.asarray(a)

    def widen(self, a: np.ndarray) -> np.ndarray:
        return a.astype(np.float32)

    def round_out(self, r32: np.ndarray, call: OpCall) -> np.ndarray:
        return to_out(r32, call.out_dtype)

    def finish(self, out: np.ndarray, call: OpCall) -> np.ndarray:
        """What happens after the result is in the out dtype (writing it back to memory)."""
        return out

    # -- MseLossBackward -----------------------------------------------------------------------
    def mse_cof(self, reduction: int, self_shape: Shape, b_shape: Shape) -> np.float32:
        n = numel(self_shape)
        return np.float32(2.0) / np.float32(n) if reduction == 1 and n else np.float32(2.0)

    def mse_diff(self, s: np.ndarray, t: np.ndarray) -> np.ndarray:
        return s - t

    def mse(self, call: OpCall, g: np.ndarray, s: np.ndarray, t: np.ndarray) -> np.ndarray:
        b = broadcast(g.shape, s.shape, t.shape)
        cof = self.mse_cof(call.attrs["reduction"], s.shape, b)
        with np.errstate(all="ignore"):
            r = self.mse_diff(s, t) * cof * g
        return np.broadcast_to(r, call.out_shape)

    # -- KlDivBackward -------------------------------------------------------------------------
    def kl_base(self, t: np.ndarray, log_target: bool) -> np.ndarray:
        return np.exp(t) if log_target else t

    def kl_terms(self, base: np.ndarray, g: np.ndarray) -> np.ndarray:
        return -base * g

    def kl_scale(self, reduction: int, self_shape: Shape, b: Shape) -> Optional[np.float32]:
        """The factor on every term (None: no scaling)."""
        n = numel(b)
        if reduction == 1 and n:
            return np.float32(1.0 / n)
        if reduction == 3 and n:
            return np.float32(1.0 / b[0])
        return None

    def kl_sum_back(self, terms: np.ndarray, self_shape: Shape) -> np.ndarray:
        """Autograd's broadcast reduction: sum the terms back to self's shape, in float32."""
        axes = reduced_axes(self_shape, terms.shape)
        return np.sum(terms, axis=axes, dtype=np.float32).reshape(self_shape)

    def kl(self, call: OpCall, g: np.ndarray, s: np.ndarray, t: np.ndarray) -> np.ndarray:
        b = broadcast(s.shape, t.shape)
        with np.errstate(all="ignore"):
            terms = np.broadcast_to(self.kl_terms(self.kl_base(t, call.attrs["logTarget"]), g), b)
            scale = self.kl_scale(call.attrs["reduction"], s.shape, b)
            if scale is not None:
                terms = terms * scale
            return self.kl_sum_back(np.asarray(terms, dtype=np.float32), s.shape)
