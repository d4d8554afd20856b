"""The aclnn backend with one planted fault in its event timing (suite/backends/_aclnn_timing.py),
each a mistake event timing code really makes: the tests (tests/test_backends_aclnn_timing.py)
must catch every one, through the emulator's trace and device clock or through the suite's
host-clock rule. Named on --backend as tests.aclnn_timing_faults:<Class>."""
from __future__ import annotations

import time

from suite.backends import _aclnn_timing as timing
from suite.backends.aclnn import AclnnBackend


class _EndBeforeLaunch(timing.EventTimer):
    """The end event recorded before the launch: it times nothing."""

    def _launch(self, i, start, end):
        self._plan_launch(i)
        self._flush(i)
        self._record(start)
        self._record(end)
        self._phase2()


class _SyncInLoop(timing.EventTimer):
    """A synchronize after every launch: the device idles between launches, the host waits."""

    def _launch(self, i, start, end):
        super()._launch(i, start, end)
        self._synchronize()


class _FlushInside(timing.EventTimer):
    """The flush recorded between the start event and the launch: its time is counted."""

    def _launch(self, i, start, end):
        self._plan_launch(i)
        self._record(start)
        self._flush(i)
        self._phase2()
        self._record(end)


class _DefaultStream(timing.EventTimer):
    """The events recorded on the default stream (NULL), not on the stream the kernel runs on."""

    def _record(self, event):
        self._check("aclrtRecordEvent", self.fn["aclrtRecordEvent"](event, None))


class _NoSynchronize(timing.EventTimer):
    """The events read without synchronizing after the loop: the device may not have reached them."""

    def _synchronize(self):
        pass


class _LeakedEvent(timing.EventTimer):
    """One event of each call never destroyed."""

    def _destroy_events(self, events):
        super()._destroy_events(events[1:])


class _HostTimed(timing.EventTimer):
    """The host's clock, read when the hook starts and after each launch and its synchronize (each
    launch's seconds the difference), reported as clock "device" (aclrtEvent)."""

    def _launch(self, i, start, end):
        super()._launch(i, start, end)
        self._synchronize()
        self.marks.append(time.perf_counter_ns())

    def _seconds(self, starts, ends):
        return tuple((b - a) / 1e9 for a, b in zip(self.marks, self.marks[1:]))

    def run(self, launches, flush):
        self.marks = [time.perf_counter_ns()]
        return super().run(launches, flush)


class EndBeforeLaunch(AclnnBackend):
    timer = _EndBeforeLaunch


class SyncInLoop(AclnnBackend):
    timer = _SyncInLoop


class FlushInside(AclnnBackend):
    timer = _FlushInside


class DefaultStream(AclnnBackend):
    timer = _DefaultStream


class NoSynchronize(AclnnBackend):
    timer = _NoSynchronize


class LeakedEvent(AclnnBackend):
    timer = _LeakedEvent


class HostPerLaunch(AclnnBackend):
    timer = _HostTimed


class HostTimed(AclnnBackend):
    """The whole hook timed with the host's clock and divided by the launches (how
    torch.utils.benchmark-style timing goes wrong on a device), reported as device events: the
    suite's host-clock rule (suite/perf/protocol.py) must refuse it."""

    def time_launches(self, call, launches, *, flush):
        t0 = time.perf_counter_ns()
        t = super().time_launches(call, launches, flush=flush)
        per = (time.perf_counter_ns() - t0) / 1e9 / launches
        return type(t)("device", "aclrtEvent", (per,) * launches)


FAULTS = {"end event before the launch": EndBeforeLaunch, "synchronize inside the loop": SyncInLoop,
          "flush inside the timed region": FlushInside, "events on the default stream": DefaultStream,
          "events read before the device reached them": NoSynchronize, "an event leaked": LeakedEvent,
          "host clock per launch said to be the device's": HostPerLaunch,
          "host clock over the call said to be the device's": HostTimed}
