"""Deliberately faulty backends for tests/test_plugin.py: each breaks one thing the suite must
notice and report (named by `package.module:attr` on the --backend option)."""
from __future__ import annotations

import os

import numpy as np

from suite.backends.reference import ReferenceBackend
from suite.contract import OpCall


class WrongKL(ReferenceBackend):
    """KlDivBackward 1% too large everywhere (MSE is left correct)."""

    name = "wrong-kl"

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        if call.op == "KlDivBackward":
            out = (out.astype(np.float32) * np.float32(1.01)).astype(out.dtype)
        return out


class OneUlpOff(ReferenceBackend):
    """The first element of every float16 result one ulp up: inside cann, outside strict."""

    name = "one-ulp-off"

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        if out.dtype == np.float16 and out.size:
            out = out.copy()
            flat = out.reshape(-1)
            flat[0] = np.nextafter(flat[0], np.float16(np.inf))
        return out


class NoStatus(ReferenceBackend):
    """Cannot report aclnn's parameter validation."""

    name = "no-status"
    capabilities: set = set()


class Nondeterministic(ReferenceBackend):
    name = "nondeterministic"
    deterministic = False


class DriftsLater(ReferenceBackend):
    """Correct for its first $DRIFT_AFTER calls; from then on the last bit of out's first element is
    flipped on every call: bit-identical back to back, not over the session (a result that drifts
    with time or with what ran before)."""
    name = "drifts-later"

    def __init__(self, **opts) -> None:
        super().__init__(**opts)
        self.after, self.calls = int(os.environ["DRIFT_AFTER"]), 0

    def run(self, call):
        self.calls += 1
        out = np.array(super().run(call))
        if self.calls > self.after and out.size:
            out.reshape(-1).view(f"u{out.dtype.itemsize}")[0] ^= 1
        return out


class WrongShape(ReferenceBackend):
    """Returns float32 whatever out's dtype is, and flattens the result."""

    name = "wrong-shape"

    def run(self, call: OpCall) -> np.ndarray:
        return super().run(call).astype(np.float32).reshape(-1)


class Crashes(ReferenceBackend):
    name = "crashes"

    def run(self, call: OpCall) -> np.ndarray:
        raise RuntimeError("device lost")


def _tiling(n: int) -> int:
    raise ValueError(f"no tiling for {n} elements")


class CrashesInAHelper(ReferenceBackend):
    """Raises two frames down from run (its failure shows both, and none of the suite's)."""

    name = "crashes-in-a-helper"

    def run(self, call: OpCall) -> np.ndarray:
        return np.zeros(_tiling(call.inputs["self"].size))
