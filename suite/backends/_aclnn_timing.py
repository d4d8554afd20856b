"""The aclnn backend's timing hook: n launches of one marshalled call timed by aclrtEvents
(docs/timing.md, where each CANN call used here is cited).

Why this shape. Phase 1 (aclnnXGetWorkspaceSize) runs once, before any event, and its executor is
made repeatable (aclSetAclOpExecutorRepeatable) so phase 2 can launch it n times; where the runtime
refuses (or lacks the call) each launch plans again, still before its flush and its start event, so
the host's planning is never inside a timed region. The workspace and the flush buffer are
allocated before the loop. Per launch, on the launch stream: the flush (aclrtMemsetAsync of twice
the L2 that aclGetDeviceCapability reports), then the start event, phase 2, the end event. One
aclrtSynchronizeStream after the loop, then aclrtEventElapsedTime for each pair. Events are made
with ACL_EVENT_TIME_LINE (timestamps; not limited in number as aclrtCreateEvent's are) before the
loop and destroyed after it, with everything else made here, on every path out.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Mapping, Optional, Sequence, Tuple

ACL_EVENT_TIME_LINE = 0x00000008
ACL_DEVICE_INFO_L2_SIZE = 2
# The flush when the runtime does not report its L2: 384 MiB, twice 192 MiB, the torch backend's
# floor; a figure not verified for any Ascend part (docs/timing.md).
FLUSH_FALLBACK = 384 << 20
NEEDED = ("aclrtCreateEventWithFlag", "aclrtRecordEvent", "aclrtEventElapsedTime", "aclrtDestroyEvent",
          "aclrtMemsetAsync")


def missing(fn: Mapping[str, Any]) -> List[str]:
    """The event and memset calls this runtime lacks (none: it can time)."""
    return [name for name in NEEDED if name not in fn]


class LaunchFailed(Exception):
    """Phase 2 or the synchronize failed: a device fault, which the backend recovers from."""

    def __init__(self, func: str, code: int) -> None:
        super().__init__(f"{func} failed with {code}")
        self.func, self.code = func, code


class EventTimer:
    """One time_launches call of `backend` on the marshalled call `m` (aclnn.Marshalled). Each step
    is a method, so tests can plant the mistakes event timing really makes in a subclass
    (tests/aclnn_timing_faults.py)."""

    source = "aclrtEvent"

    def __init__(self, backend: Any, m: Any) -> None:
        self.b, self.m, self.fn, self.stream = backend, m, backend._fn, backend._stream
        self.executor = ctypes.c_void_p()
        self.repeatable = False
        self.planned = False          # an executor made by phase 1 that phase 2 has not taken yet
        self.workspace: Optional[int] = None
        self.workspace_size = 0
        self.flush_buf: Optional[Tuple[int, int]] = None
        self.queued = False           # work on the stream since the last synchronize

    def run(self, launches: int, flush: bool) -> Any:
        from suite.perf.record import Timing  # (suite.perf imports suite.backends)
        events: List[int] = []
        try:
            if flush:
                self.flush_buf = self._flush_buffer()
            starts = [self._event(events) for _ in range(launches)]
            ends = [self._event(events) for _ in range(launches)]
            self._plan()
            self.repeatable = self._make_repeatable()
            for i in range(launches):
                self._launch(i, starts[i], ends[i])
            self._synchronize()
            return Timing("device", self.source, self._seconds(starts, ends))
        finally:
            self._release(events)

    # ---- one launch -------------------------------------------------------------------------------
    def _launch(self, i: int, start: int, end: int) -> None:
        self._plan_launch(i)
        self._flush(i)
        self._record(start)
        self._phase2()
        self._record(end)

    def _plan_launch(self, i: int) -> None:
        """Phase 1 again for a launch after the first, where the executor cannot be reused."""
        if i and not self.repeatable:
            self._plan()

    def _flush(self, i: int) -> None:
        if self.flush_buf is not None:
            ptr, size = self.flush_buf
            self._check("aclrtMemsetAsync", self.fn["aclrtMemsetAsync"](ptr, size, i & 0x7F, size, self.stream))
            self.queued = True

    def _record(self, event: int) -> None:
        self._check("aclrtRecordEvent", self.fn["aclrtRecordEvent"](event, self.stream))
        self.queued = True

    def _phase2(self) -> None:
        self.planned = False  # phase 2 owns a non-repeatable executor from here, whatever it returns
        self.queued = True
        rc = self.m.phase2(self.workspace, self.workspace_size, self.executor, self.stream)
        if rc:
            raise LaunchFailed("phase 2", rc)

    def _synchronize(self) -> None:
        self.queued = False
        rc = self.fn["aclrtSynchronizeStream"](self.stream)
        if rc:
            raise LaunchFailed("aclrtSynchronizeStream", rc)

    def _seconds(self, starts: Sequence[int], ends: Sequence[int]) -> Tuple[float, ...]:
        out = []
        ms = ctypes.c_float()
        for s, e in zip(starts, ends):
            self._check("aclrtEventElapsedTime", self.fn["aclrtEventElapsedTime"](ctypes.byref(ms), s, e))
            out.append(ms.value / 1e3)
        return tuple(out)

    # ---- set-up and release -----------------------------------------------------------------------
    def _plan(self) -> None:
        """Phase 1: an executor and the workspace it needs (allocated once, the first time)."""
        from suite.contract import AclnnError
        size = ctypes.c_uint64(0)
        self.executor = ctypes.c_void_p()
        status = self.m.phase1(*self.m.args, ctypes.byref(size), ctypes.byref(self.executor))
        if status:
            raise AclnnError(status)
        self.planned = True
        if self.workspace is None and size.value:
            self.workspace = self.b._malloc(size.value, self.m.buffers)  # freed with the call's buffers
            self.workspace_size = size.value
        elif size.value > self.workspace_size:
            raise RuntimeError(f"phase 1 asked for {size.value} bytes of workspace after {self.workspace_size}")

    def _make_repeatable(self) -> bool:
        fn = self.fn.get("aclSetAclOpExecutorRepeatable")
        return fn is not None and fn(self.executor) == 0

    def _flush_buffer(self) -> Tuple[int, int]:
        """Twice the L2 the runtime reports (FLUSH_FALLBACK where it reports none)."""
        fn, l2 = self.fn.get("aclGetDeviceCapability"), ctypes.c_int64(0)
        ok = fn is not None and fn(self.b.device, ACL_DEVICE_INFO_L2_SIZE, ctypes.byref(l2)) == 0 and l2.value > 0
        size = 2 * l2.value if ok else FLUSH_FALLBACK
        return self.b._malloc(size, self.m.buffers), size

    def _event(self, events: List[int]) -> int:
        ev = ctypes.c_void_p()
        self._check("aclrtCreateEventWithFlag", self.fn["aclrtCreateEventWithFlag"](ctypes.byref(ev), ACL_EVENT_TIME_LINE))
        events.append(ev.value)
        return ev.value

    def _destroy_events(self, events: Sequence[int]) -> None:
        for ev in events:
            self.fn["aclrtDestroyEvent"](ev)

    def _release(self, events: Sequence[int]) -> None:
        """On every path out: the stream drained (nothing queued may outlive its memory), then the
        executor (a repeatable one, or one phase 2 never took) and every event."""
        if self.queued:
            self.fn["aclrtSynchronizeStream"](self.stream)  # its error is the fault being raised
        destroy = self.fn.get("aclDestroyAclOpExecutor")
        if (self.repeatable or self.planned) and self.executor.value and destroy is not None:
            destroy(self.executor)
        self._destroy_events(events)

    @staticmethod
    def _check(func: str, rc: int) -> None:
        if rc:
            raise RuntimeError(f"{func} failed with aclError {rc}")
