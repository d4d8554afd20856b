"""Backends that misbehave as native code does: each is the reference backend, with one fault
planted on the calls with reduction=mean (the other calls must still pass, proving the run went
on). Named on the command line as tests.misbehaving:NAME by tests/test_faults.py."""
from __future__ import annotations

import atexit
import ctypes
import os
import sys
import threading
import time

import numpy as np

from suite.backends.reference import ReferenceBackend
from suite.contract import OpCall


def _mean(call: OpCall) -> bool:
    return call.attrs.get("reduction") == 1


class _OnMean(ReferenceBackend):
    """The reference backend, with `fault` planted on the calls with reduction=mean."""

    def fault(self) -> None:
        raise NotImplementedError

    def run(self, call: OpCall) -> np.ndarray:
        if _mean(call):
            self.fault()
        return super().run(call)


class Segfault(_OnMean):
    name = "segfault"

    def fault(self) -> None:
        ctypes.string_at(0)                      # a real SIGSEGV: reads address 0


class ExitZero(_OnMean):
    name = "exit-0"

    def fault(self) -> None:
        os._exit(0)


class ExitThree(_OnMean):
    name = "exit-3"

    def fault(self) -> None:
        os._exit(3)


class SysExit(_OnMean):
    name = "sys-exit"

    def fault(self) -> None:
        sys.exit(0)


class Hang(_OnMean):
    name = "hang"

    def fault(self) -> None:
        time.sleep(3600)


class ReusedBuffer(ReferenceBackend):
    """Hands out one preallocated buffer per shape: a second result overwrites the first."""
    name = "reused-buffer"

    def __init__(self) -> None:
        super().__init__()
        self._buffers: dict = {}

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        if not _mean(call):
            return out
        buf = self._buffers.setdefault((out.shape, out.dtype.str), np.empty_like(out))
        buf[...] = out
        return buf


class Wrong(ReferenceBackend):
    """Doubles the mean results: a plain numeric failure."""
    name = "wrong"

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        return (out.astype(np.float64) * 2).astype(out.dtype) if _mean(call) else out


class ExitInClose(Wrong):
    """Fails a case, then exits with 0 while closing: the run must still fail."""
    name = "exit-in-close"

    def close(self) -> None:
        os._exit(0)


class ExitAtExit(Wrong):
    """Fails a case, then exits with 0 from an exit handler."""
    name = "exit-at-exit"

    def __init__(self) -> None:
        super().__init__()
        atexit.register(os._exit, 0)


class ExitAfterReturning(_OnMean):
    """Answers the mean calls correctly, then a timer of its own ends the process."""
    name = "exit-after-returning"

    def fault(self) -> None:
        threading.Timer(0.05, os._exit, (0,)).start()


class RaisingInit(ReferenceBackend):
    name = "raising-init"

    def __init__(self) -> None:
        raise RuntimeError("no device 0")


class CrashAlways(ReferenceBackend):
    name = "crash-always"

    def run(self, call: OpCall) -> np.ndarray:
        os._exit(7)
