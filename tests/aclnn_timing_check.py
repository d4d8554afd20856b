"""Reading the host emulator's timing stand-ins (tests/emulator/src/events.c) and judging one
`time_launches` call of the aclnn backend against the event protocol (docs/timing.md).

Why a checker of its own: the timing hook's figures mean something only if the launches were
timed the way the contract says (one pair of events per launch, recorded on the launch stream
around the launch, the flush before the start event, no synchronize inside the loop, every event
destroyed). The emulator records every stream operation in the host's order (its trace) and keeps
a deterministic device clock, so each rule can be checked, and `violations` says which ones a
backend broke, in words a failing test can show.
"""
from __future__ import annotations

import ctypes
import os
import re
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

from suite.perf import traffic

# The emulated device's figures (events.c reads the same variables, with these defaults).
DEFAULTS = {"ACLNN_EMU_GBPS": 1600.0, "ACLNN_EMU_LAUNCH_NS": 3000.0, "ACLNN_EMU_L2_BYTES": 1 << 20,
            "ACLNN_EMU_L2_SPEEDUP": 4.0, "ACLNN_EMU_MEMSET_NS": 1000.0}
_TOKEN = re.compile(r"^(P|Y|K@(\d+)|M(\d+)@(\d+)|R(\d+)@(\d+)|D(\d+))$")


def figure(name: str) -> float:
    """One of the emulated device's figures, as events.c reads it (the variable, else its default)."""
    raw = os.environ.get(name)
    return float(raw) if raw else float(DEFAULTS[name])


def kernel_seconds(call: Any, *, warm: bool = False) -> float:
    """What the emulated device takes for one launch of `call`: its launch overhead plus the bytes
    it moves (suite/perf/traffic.py's count) at the emulated bandwidth; L2_SPEEDUP times faster
    where the call's data is still in the emulated L2 (warm)."""
    gbps = figure("ACLNN_EMU_GBPS") * (figure("ACLNN_EMU_L2_SPEEDUP") if warm else 1.0)
    return (figure("ACLNN_EMU_LAUNCH_NS") + traffic.bytes_moved(call) / gbps) / 1e9


def _handle(backend: Any):
    return backend.libraries.runtime.handle


def reset(backend: Any) -> None:
    """Forget the trace so far (the next call's tokens start from here)."""
    _handle(backend).aclemuTraceReset()


def trace(backend: Any) -> List[str]:
    """The stream operations since the last reset, in the host's order: P (a phase 1 ready), K@s (a
    kernel launched on stream s), M<bytes>@s (a memset of that many bytes), R<e>@s (event e
    recorded), Y (any synchronize), D<e> (event e destroyed); stream 0 is the default stream."""
    fn = _handle(backend).aclemuTrace
    fn.restype = ctypes.c_size_t
    n = fn(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    fn(buf, n + 1)
    tokens = buf.value.decode().split()
    bad = [t for t in tokens if not _TOKEN.match(t)]
    assert not bad, f"the emulator's trace has tokens this reader does not know: {bad[:5]}"
    return tokens


def stream_id(backend: Any) -> int:
    """The emulator's number of the backend's launch stream (its trace names streams by number)."""
    fn = _handle(backend).aclemu_stream_id
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p]
    return fn(backend._stream)


def live_events(backend: Any) -> int:
    fn = _handle(backend).aclemuLiveEvents
    fn.restype = ctypes.c_int64
    return fn()


@dataclass(frozen=True)
class Launch:
    """One launch as the trace shows it: the tokens from one start event to its end event."""
    flush: Optional[int]   # bytes of the memset just before the start event (None: no flush)
    start: int
    end: int
    inside: tuple          # the tokens between the start and the end event


def launches(tokens: Sequence[str]) -> List[Launch]:
    """The trace cut into launches: a record, the tokens to the next record, that record."""
    out, i = [], 0
    while i < len(tokens):
        m = re.match(r"R(\d+)@", tokens[i])
        if not m:
            i += 1
            continue
        j = next((k for k in range(i + 1, len(tokens)) if tokens[k].startswith("R")), None)
        if j is None:
            break
        prev = tokens[i - 1] if i else ""
        flush = int(re.match(r"M(\d+)@", prev).group(1)) if prev.startswith("M") else None
        out.append(Launch(flush, int(m.group(1)), int(re.match(r"R(\d+)@", tokens[j]).group(1)),
                          tuple(tokens[i + 1:j])))
        i = j + 1
    return out


def violations(backend: Any, call: Any, n: int, flush: bool, t: Any, *, tokens: Sequence[str],
               events_after: int) -> List[str]:
    """Every way one time_launches(call, n, flush=flush) call, which returned `t` and left the
    trace `tokens` and `events_after` live events, departs from the event protocol; empty if none."""
    found: List[str] = []
    stream = stream_id(backend)
    if (getattr(t, "clock", None), getattr(t, "source", None)) != ("device", "aclrtEvent"):
        found.append(f"clock {getattr(t, 'clock', None)!r} ({getattr(t, 'source', None)!r}), "
                     "not device (aclrtEvent)")
    ls = launches(tokens)
    if len(ls) != n:
        found.append(f"{len(ls)} event pairs for {n} launches")
    records = [x for x in tokens if x.startswith("R")]
    if any(not r.endswith(f"@{stream}") for r in records):
        found.append(f"an event recorded off the launch stream {stream}: {sorted(set(records))[:3]}")
    ids = [x for launch in ls for x in (launch.start, launch.end)]
    if len(set(ids)) != len(ids):
        found.append("an event recorded twice in one call (one pair per launch)")
    for k, launch in enumerate(ls):
        if launch.inside != (f"K@{stream}",):
            found.append(f"launch {k}: between its events {list(launch.inside)}, not the one kernel")
            break
    want = 2 * figure("ACLNN_EMU_L2_BYTES")
    for k, launch in enumerate(ls):
        if flush and (launch.flush is None or launch.flush < want):
            found.append(f"launch {k}: no flush of at least {int(want)} bytes just before its start event")
            break
        if not flush and launch.flush is not None:
            found.append(f"launch {k}: flushed though flush=False")
            break
    last = max((i for i, x in enumerate(tokens) if x.startswith("R")), default=-1)
    first = min((i for i, x in enumerate(tokens) if x.startswith("R")), default=0)
    inside = [i for i, x in enumerate(tokens) if x == "Y" and first < i < last]
    if inside:
        found.append(f"{len(inside)} synchronize(s) inside the loop")
    if not any(x == "Y" for x in tokens[last + 1:]):
        found.append("no synchronize after the loop")
    if events_after:
        found.append(f"{events_after} event(s) left alive")
    secs = tuple(getattr(t, "seconds", ()))
    cold, warm = kernel_seconds(call), kernel_seconds(call, warm=True)
    expected = [cold if flush else warm] * len(secs)
    if not flush and secs:
        expected[0] = secs[0] if abs(secs[0] - cold) <= 1e-6 * cold else warm   # the first may be cold
    off = [(k, s) for k, (s, e) in enumerate(zip(secs, expected)) if abs(s - e) > 1e-6 * e]
    if off:
        k, s = off[0]
        found.append(f"launch {k} timed {s!r} s; the emulated device took {expected[k]!r} s "
                     f"({len(off)} of {len(secs)} launches off)")
    return found
