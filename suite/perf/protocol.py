"""The timing protocol: how a timed case is measured, from a backend's time_launches hook, into
the results.json `timing` record (docs/timing.md, docs/results-schema.md).

Why this shape: one untimed call (first-call costs: allocation, compilation, page faults), a
warm-up of at least WARMUP_LAUNCHES launches and WARMUP_S seconds (clocks ramp, caches and TLBs
settle), then `rounds` rounds of n launches, n chosen from the warm-up so that a round lasts about
ROUND_S, clamped to MIN_LAUNCHES..MAX_LAUNCHES. The statistics are over the round medians: a
round's median shrugs off a few outliers inside it, and the rounds are what a noise-aware gate
compares (too few of them turn noise into regressions). Cold cache by default: each launch is
preceded by a flush (outside the timed region), because a warm last-level cache makes a
memory-bound kernel look faster than its memory.

The protocol also refuses times that cannot be the device's (`_host_tracking`): a backend that
says clock "device" but whose launch seconds add up to the host's wall time around the call (the
host clock around each launch, Python overhead included), or to more than it (the times are not
of this call). Such a case is "not timed", with the rule's numbers, never reported as fast."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from suite.perf.record import Timing, TimingError, TimingRecord

WARMUP_LAUNCHES = 5          # at least this many warm-up launches ...
WARMUP_S = 0.025             # ... and at least this much host wall time
ROUND_S = 0.005              # a round lasts about this long (from the warm-up's estimate)
MIN_LAUNCHES, MAX_LAUNCHES = 30, 1000
ROUNDS = 10
MAX_WARMUP_LAUNCHES = 100_000   # a hook that reports 0 s of wall time cannot keep the warm-up going
# The host-clock rule (docs/timing.md): a "device" clock whose launches sum, in the median round, to at
# least TRACK of the host wall time around that round's call; or, in any round, to more than OVER of
# it plus SLACK_S. The median, not every round: one round in which the host was preempted between
# two launches must not let host timers pass for events.
TRACK = 0.98
OVER, SLACK_S = 1.01, 1e-4
CLOCKS = ("device", "host")
EXEMPT_SOURCES = ("simulated",)  # a simulated device's time is by design unrelated to the host's

# launches, flush -> (what the hook returned, host wall seconds around the hook in the backend's process)
Timer = Callable[[int, bool], Tuple[Timing, float]]


class NotTimed(Exception):
    """The case cannot be timed; `reason` is the record's one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Settings:
    """What `pytest --timing` asks for: --timing-rounds, and --timing-warm (no flush)."""

    rounds: int = ROUNDS
    warm: bool = False


def not_timed(reason: str) -> Dict[str, Any]:
    """The record of a case that was not timed, and why."""
    return {"status": "not timed", "reason": reason}


def checked(t: Any, launches: int) -> Timing:
    """What the hook returned, as a Timing, or NotTimed naming what is wrong with it."""
    clock, source, seconds = (getattr(t, k, None) for k in ("clock", "source", "seconds"))
    if clock not in CLOCKS:
        raise NotTimed(f"time_launches returned clock {clock!r}, not one of {', '.join(CLOCKS)}")
    if type(source) is not str or not source:
        raise NotTimed(f"time_launches returned source {source!r}, not a name")
    try:
        secs = tuple(float(s) for s in seconds)
    except (TypeError, ValueError):
        raise NotTimed(f"time_launches returned seconds that are not numbers: {type(seconds).__name__}") from None
    if len(secs) != launches:
        raise NotTimed(f"time_launches returned {len(secs)} launch times for {launches} launches")
    bad = [s for s in secs if not (math.isfinite(s) and s >= 0)]
    if bad:
        raise NotTimed(f"time_launches returned a launch time of {bad[0]!r} s (finite, 0 or more)")
    return Timing(clock, source, secs)


def launches_for(estimate_s: float) -> int:
    """Launches per round: a round of about ROUND_S at `estimate_s` a launch, clamped."""
    if estimate_s <= 0:
        return MAX_LAUNCHES
    return max(MIN_LAUNCHES, min(MAX_LAUNCHES, math.ceil(ROUND_S / estimate_s)))


def _warm_up(timer: Timer, flush: bool) -> float:
    """Launch until WARMUP_LAUNCHES and WARMUP_S are both reached; the median launch seconds seen."""
    done, wall, seen = 0, 0.0, []
    chunk = WARMUP_LAUNCHES
    while done < WARMUP_LAUNCHES or wall < WARMUP_S:
        t, w = timer(chunk, flush)
        seen.extend(checked(t, chunk).seconds)
        done, wall = done + chunk, wall + max(w, 0.0)
        if done >= MAX_WARMUP_LAUNCHES:
            break
        per = wall / done
        chunk = MAX_LAUNCHES if per <= 0 else max(1, min(MAX_LAUNCHES, math.ceil((WARMUP_S - wall) / per)))
    return statistics.median(seen)


def _host_tracking(clock: str, source: str, sums: Sequence[float], walls: Sequence[float]) -> Optional[str]:
    """Why these "device" times are the host's (None: nothing says so). Each round's launch
    seconds, summed, against the host wall time around that round's hook call (the median round): device events
    leave out the hook's own Python work, the launch gaps and the flush, so their sum falls short
    of the wall; host timers around each launch take almost all of it. And no synchronizing hook
    can have timed more device work than the host waited for."""
    if clock != "device" or source in EXEMPT_SOURCES or not sums:
        return None
    over = [(s, w) for s, w in zip(sums, walls) if s > OVER * w + SLACK_S]
    if over:
        s, w = over[0]
        return (f"clock 'device' ({source}) timed {s:.6g} s of launches in a round the host waited "
                f"{w:.6g} s for: not this call's device time")
    ratios = [s / w if w > 0 else math.inf for s, w in zip(sums, walls)]
    if statistics.median(ratios) >= TRACK:
        return (f"clock 'device' ({source}), but the launch seconds of a round add up to "
                f"{statistics.median(ratios):.1%} of the host's wall time around the call (median of "
                f"{len(ratios)} rounds, {min(ratios):.1%}..{max(ratios):.1%}; at least {TRACK:.0%}: host "
                f"timers around each launch, not device events)")
    return None


class Side:
    """One backend's measurement in progress: its timer, the rounds so far and what the host
    waited for each. Its own object so that two of them (a baseline and a candidate,
    suite/perf/interleave.py) can take turns round by round; `measure` drives one alone."""

    def __init__(self, timer: Timer, flush: bool) -> None:
        self.timer, self.flush = timer, flush
        self.medians: List[float] = []
        self.sums: List[float] = []
        self.walls: List[float] = []
        self.first: Optional[Timing] = None
        self.launches = 0

    def prepare(self) -> float:
        """The untimed call and the warm-up: the estimated seconds a launch."""
        checked(self.timer(1, self.flush)[0], 1)     # the untimed call: only its shape is checked
        return _warm_up(self.timer, self.flush)

    def round(self, n: int) -> None:
        """One round of `n` launches; NotTimed if its times are malformed or change clock."""
        raw, wall = self.timer(n, self.flush)
        t = checked(raw, n)
        if self.first is None:
            self.first = t
        elif (t.clock, t.source) != (self.first.clock, self.first.source):
            raise NotTimed(f"time_launches changed clock from {self.first.clock} ({self.first.source}) to "
                           f"{t.clock} ({t.source}) between rounds")
        self.launches = n
        self.medians.append(statistics.median(t.seconds))
        self.sums.append(math.fsum(t.seconds))
        self.walls.append(wall)

    def record(self, nbytes: int, peak: Tuple[Optional[float], Optional[str]], cache: str) -> Dict[str, Any]:
        """The `timing` record of the rounds taken; NotTimed if they cannot be the clock claimed."""
        first = self.first
        if first is None:
            raise NotTimed("no round was timed")
        why = _host_tracking(first.clock, first.source, self.sums, self.walls)
        if why is not None:
            raise NotTimed(why)
        medians = self.medians
        if statistics.median(medians) <= 0 or min(medians) <= 0:
            raise NotTimed(f"a round's median launch time is {min(medians)!r} s: no GB/s can be computed from it")
        peak_gbps, peak_source = peak if first.clock == "device" else (None, None)
        # Every derived figure in one place (suite/perf/record.py), so this side and the gate agree.
        try:
            rec = TimingRecord.of_rounds(medians, clock=first.clock, source=first.source, cache=cache,
                                         launches=self.launches, nbytes=nbytes,
                                         peak_gbps=peak_gbps, peak_source=peak_source)
        except TimingError as e:
            raise NotTimed(f"the times make no valid record: {e}") from None
        return rec.to_json()


def measure(timer: Timer, settings: Settings, nbytes: int,
            peak: Tuple[Optional[float], Optional[str]]) -> Dict[str, Any]:
    """Time one prepared call (docs/timing.md) and return its `timing` record; NotTimed if the
    backend cannot be timed or its times cannot be the clock it claims. `peak`: the product's
    (peak GB/s or None, its source or None), used only for a device clock."""
    side = Side(timer, not settings.warm)
    n = launches_for(side.prepare())
    for _ in range(settings.rounds):
        side.round(n)
    return side.record(nbytes, peak, "warm" if settings.warm else "cold")
