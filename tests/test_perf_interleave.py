"""The interleaved timing of a baseline and a candidate (suite/perf/interleave.py, docs/timing.md,
"Interleaved"): both prepared, then rounds alternating baseline, candidate, baseline, ... with the
same launches a round; a side that fails leaves the other's record whole; and on a drifting
simulated device, interleaving is what keeps an A/A comparison SAME where one side timed after the
other is flagged."""
from __future__ import annotations

from typing import List, Tuple

import pytest

from suite.perf import gate
from suite.perf.interleave import Side, alternate, measure_pair
from suite.perf.protocol import NotTimed, Settings
from suite.perf.record import Timing, TimingRecord
from suite.perf.simulated import SimulatedBackend
from tests.test_perf_simulated import call_of

UNIT = 2.0 ** -13


class Logged:
    """A timer of UNIT * scale a launch that writes (name, launches) into a shared log; it fails
    (a malformed Timing) from call `fail_at` on."""

    def __init__(self, name: str, log: List[Tuple[str, int]], scale: float = 1.0, fail_at: int = 0) -> None:
        self.name, self.log, self.scale, self.fail_at = name, log, scale, fail_at

    def __call__(self, launches: int, flush: bool) -> Tuple[Timing, float]:
        self.log.append((self.name, launches))
        if self.fail_at and sum(n == self.name for n, _ in self.log) >= self.fail_at:
            return Timing("device", "fake", (UNIT,) * (launches + 1)), 1.0
        secs = (UNIT * self.scale,) * launches
        return Timing("device", "fake", secs), 2 * sum(secs)


def test_rounds_alternate_baseline_candidate_with_the_same_launches() -> None:
    log: List[Tuple[str, int]] = []
    base, cand = measure_pair(Logged("B", log), Logged("C", log, scale=2.0), Settings(rounds=6), 4096,
                              (None, None))
    # Each side's preparation (the untimed call, the warm-up: 5 launches, then what fills 25 ms),
    # the baseline's first; then six rounds each, B C B C ..., n from the faster side's estimate.
    prep_b = [("B", 1), ("B", 5), ("B", 98)]
    prep_c = [("C", 1), ("C", 5), ("C", 47)]
    assert log[:6] == prep_b + prep_c
    assert log[6:] == [(s, 41) for _ in range(6) for s in ("B", "C")]
    assert base["rounds"] == [UNIT] * 6 and cand["rounds"] == [2 * UNIT] * 6
    assert base["launches"] == cand["launches"] == 41


def test_a_baseline_failing_in_a_round_leaves_the_candidate_whole() -> None:
    log: List[Tuple[str, int]] = []
    base, cand = measure_pair(Logged("B", log, fail_at=6), Logged("C", log), Settings(rounds=5), 4096, (None, None))
    assert base["status"] == "not timed"
    assert "time_launches returned 42 launch times for 41 launches" in base["reason"]
    assert cand["rounds"] == [UNIT] * 5 and [s for s, n in log[6:]].count("B") == 3   # it stopped there


def test_a_candidate_failing_is_not_timed_and_stops_both() -> None:
    log: List[Tuple[str, int]] = []
    base, cand = measure_pair(Logged("B", log), Logged("C", log, fail_at=2), Settings(rounds=5), 4096, (None, None))
    assert cand["status"] == "not timed" and "launch times" in cand["reason"]
    assert base["status"] == "not timed" and "the candidate was not timed" in base["reason"]


def test_a_timer_raising_not_timed_is_that_sides_reason() -> None:
    def broken(launches: int, flush: bool):
        raise NotTimed("the baseline's process failed while timing: exit 3")
    log: List[Tuple[str, int]] = []
    base, cand = measure_pair(broken, Logged("C", log), Settings(rounds=5), 4096, (None, None))
    assert base == {"status": "not timed", "reason": "the baseline's process failed while timing: exit 3"}
    assert cand["rounds"] == [UNIT] * 5


def _drifting(seed: int, slower: float = 1.0):
    a = SimulatedBackend(seed=2 * seed, drift=0.3, drift_launches=4000)
    b = SimulatedBackend(seed=2 * seed + 1, drift=0.3, drift_launches=4000, slowdown=slower)
    b.device.ramp = a.device.ramp              # one device: its drift counts both backends' launches
    return a, b


def _verdict(a, b, interleaved: bool, call) -> gate.Verdict:
    """A and B's rounds of `call` (10 of 100 launches): interleaved round by round, or A's then, after
    2,000 launches of the rest of the job (A's other cases, B's earlier ones), B's."""
    def timer(backend):
        return lambda n, flush: (backend.time_launches(call, n, flush=flush), 0.0)
    sides = [Side(timer(a), True), Side(timer(b), True)]
    if interleaved:
        alternate(sides, 100, 10)
    else:
        alternate(sides[:1], 100, 10)
        a.time_launches(call, 2000, flush=True)
        alternate(sides[1:], 100, 10)
    recs = [TimingRecord.from_json(s.record(1, (None, None), "cold")) for s in sides]
    return gate.compare(*recs)


@pytest.mark.parametrize("seed", range(3))
def test_on_a_drifting_device_only_interleaving_keeps_a_a_same(seed: int) -> None:
    """30 % slower over 4,000 launches: A's rounds, the rest of the job, then B's flags B as a
    regression; A and B interleaved round by round are SAME, and B 20 % slower is still flagged."""
    call = call_of(12_000_000)
    assert _verdict(*_drifting(seed), False, call).kind == gate.REGRESSION
    assert _verdict(*_drifting(seed), True, call).kind == gate.SAME
    assert _verdict(*_drifting(seed, slower=1.2), True, call).kind == gate.REGRESSION
