"""Backends for tests/test_accuracy_baseline.py (named by `package.module:attr` on --backend and
--accuracy-baseline): the reference's result off by a chosen relative error, one that raises, one
whose process dies, and one that hangs."""
from __future__ import annotations

import ctypes
import os

import numpy as np

from suite.backends.reference import ReferenceBackend
from suite.contract import OpCall


class Off(ReferenceBackend):
    """The reference's result times (1 + rel), rounded once to out's dtype: a relative error of
    `rel` on every element (two backends of the same `rel` return the same bits)."""

    name = "off"

    def __init__(self, rel: str = "0") -> None:
        self.rel = float(rel)

    def run(self, call: OpCall):
        out = super().run(call)
        off = lambda a: np.array(a.astype(np.float64) * (1.0 + self.rel), dtype=a.dtype)   # noqa: E731 (0-d too)
        return {n: off(a) for n, a in out.items()} if isinstance(out, dict) else off(out)


class Raises(ReferenceBackend):
    name = "raises"

    def run(self, call: OpCall) -> np.ndarray:
        raise RuntimeError("the baseline's own bug")


class Segfault(ReferenceBackend):
    name = "segfault"

    def run(self, call: OpCall) -> np.ndarray:
        ctypes.string_at(0)                      # a real SIGSEGV: reads address 0


class Hangs(ReferenceBackend):
    """Never returns from a call: its process overruns the deadline and is killed."""

    name = "hangs"

    def run(self, call: OpCall) -> np.ndarray:
        import time
        time.sleep(600)
