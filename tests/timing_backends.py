"""Backends for tests/test_plugin_timing.py (named by `package.module:attr` on --backend): each
times its launches in a known way, or breaks one rule of the timing hook."""
from __future__ import annotations

import time

import numpy as np

from suite.backends.reference import ReferenceBackend
from suite.contract import OpCall
from suite.perf.record import Timing

UNIT = 2.0 ** -13                     # the simulated device's seconds a launch (binary-exact)


class Simulated(ReferenceBackend):
    """Correct numbers; a simulated device clock of exactly UNIT a launch."""

    name = "simulated-device"

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> Timing:
        return Timing("device", "simulated", (UNIT,) * launches)


class HostCalledDevice(ReferenceBackend):
    """Times each launch with the host clock around run(), and says the clock is the device's."""

    name = "host-called-device"

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> Timing:
        secs = []
        for _ in range(launches):
            t0 = time.perf_counter_ns()
            self.run(call)
            secs.append((time.perf_counter_ns() - t0) / 1e9)
        return Timing("device", "fake-event", tuple(secs))


class WrongSimulated(Simulated):
    """Simulated timing, but every result 1 % too large: its numbers fail, so it is never timed."""

    name = "wrong-simulated"

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        return (out.astype(np.float32) * np.float32(1.01)).astype(out.dtype)


class NoHook:
    """The reference's numbers, and no time_launches: the contract as first published."""

    name = "no-hook"
    capabilities = {"status"}

    def __init__(self) -> None:
        self._ref = ReferenceBackend()

    def run(self, call: OpCall) -> np.ndarray:
        return self._ref.run(call)


class Crashes(Simulated):
    """Its process dies inside time_launches."""

    name = "crashes-timing"

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> Timing:
        import os
        os._exit(3)


class CountsCalls(Simulated):
    """Says in its source how many distinct calls its process has been asked to time."""

    name = "counts-calls"

    def __init__(self) -> None:
        self.seen = []

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> Timing:
        if not any(c is call for c in self.seen):
            self.seen.append(call)
        return Timing("device", f"seen {len(self.seen)}", (UNIT,) * launches)
