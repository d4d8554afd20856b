"""Timing a baseline backend and the candidate in the same job, round by round (ABAB), as
benchdnn's CI compares (pytest --timing --timing-baseline; docs/timing.md, "Interleaved").

Why interleave: a device's speed drifts (clocks, temperature, other tenants), and two runs timed
one after the other compare the device at two moments as much as the two kernels; the gate then
flags the drift. Rounds taken in turn see the same drift on both sides, so what is left between
them is the kernels. Both sides are prepared first (the untimed call and the warm-up each, the
baseline's first), then `rounds` rounds each, baseline then candidate, with the same launches a
round: n from the faster side's estimate, so each side's round lasts at least about ROUND_S.

A side that cannot be timed is the other's problem only as far as it must be: a baseline that fails
leaves the candidate to finish its rounds alone (its record is whole; the verdict is UNKNOWN); a
candidate that fails stops both (there is nothing to compare with)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from suite.perf.protocol import NotTimed, Settings, Side, Timer, launches_for, not_timed

__all__ = ["Side", "alternate", "measure_pair"]
NO_CANDIDATE = "the candidate was not timed, so the baseline's rounds were stopped"


def alternate(sides: Sequence[Side], n: int, rounds: int) -> None:
    """`rounds` rounds of `n` launches for each side, in turn: side 0, side 1, side 0, ...
    (NotTimed from a side propagates: the caller knows which it was by where it stands)."""
    for _ in range(rounds):
        for side in sides:
            side.round(n)


def _record(side: Side, nbytes: int, peak: Tuple[Optional[float], Optional[str]], cache: str) -> Dict[str, Any]:
    try:
        return side.record(nbytes, peak, cache)
    except NotTimed as e:
        return not_timed(e.reason)


def measure_pair(base: Timer, cand: Timer, settings: Settings, nbytes: int,
                 peak: Tuple[Optional[float], Optional[str]]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(the baseline's `timing` record, the candidate's), each measured or not timed with its
    reason; the rounds interleaved, baseline first."""
    flush, cache = not settings.warm, "warm" if settings.warm else "cold"
    b, c = Side(base, flush), Side(cand, flush)
    failed: Optional[str] = None                 # why the baseline stopped
    estimates: List[float] = []
    try:
        estimates.append(b.prepare())
    except NotTimed as e:
        failed = e.reason
    try:
        estimates.append(c.prepare())
        n = max(launches_for(e) for e in estimates)
        for _ in range(settings.rounds):
            if failed is None:
                try:
                    b.round(n)
                except NotTimed as e:
                    failed = e.reason
            c.round(n)
    except NotTimed as e:
        return not_timed(failed or NO_CANDIDATE), not_timed(e.reason)
    cand_rec = _record(c, nbytes, peak, cache)
    if "status" in cand_rec:
        return not_timed(failed or NO_CANDIDATE), cand_rec
    return (not_timed(failed) if failed else _record(b, nbytes, peak, cache)), cand_rec
