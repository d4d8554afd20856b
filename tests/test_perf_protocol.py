"""The timing protocol (suite/perf/protocol.py, docs/timing.md) against fake backends whose launch
seconds are known: exact figures, the launch counts it asks for, cold and warm, and the rule that
refuses a "device" clock that is the host's."""
from __future__ import annotations

import time
from typing import List, Tuple

import numpy as np
import pytest

from suite.contract import OpCall, Unsupported
from suite.perf import protocol
from suite.run.calls import time_hook
from suite.perf.protocol import NotTimed, Settings, measure
from suite.perf.record import Timing

UNIT = 2.0 ** -13            # a launch of 122 us: binary-exact, so every figure below is exact


class Scripted:
    """A timer with a known device: UNIT a launch, twice its seconds of host wall time a call;
    round r (the calls with the round's launch count, after the warm-up) has median UNIT*(1+r/8),
    with one 100x outlier that a median must ignore."""

    def __init__(self, clock: str = "device", source: str = "fake-event", round_n: int = 41) -> None:
        self.clock, self.source, self.round_n = clock, source, round_n
        self.calls: List[Tuple[int, bool]] = []
        self.round = 0

    def __call__(self, launches: int, flush: bool) -> Tuple[Timing, float]:
        self.calls.append((launches, flush))
        if len(self.calls) > 3 and launches == self.round_n:
            m = UNIT * (1 + self.round / 8)
            self.round += 1
            secs = (m,) * (launches - 1) + (100 * m,)
        else:
            secs = (UNIT,) * launches
        return Timing(self.clock, self.source, secs), 2 * sum(secs)


def _medians() -> List[float]:
    return [UNIT * (1 + r / 8) for r in range(10)]


def test_exact_figures_of_a_known_device() -> None:
    timer = Scripted()
    rec = measure(timer, Settings(), nbytes=65536, peak=(100.0, "a cited sheet"))
    # One untimed call, the warm-up (5 launches, then what fills 25 ms at 2*UNIT of wall each:
    # ceil((0.025 - 5*2*UNIT) / (2*UNIT)) = 98), then 10 rounds of ceil(0.005 / UNIT) = 41.
    assert [n for n, _ in timer.calls] == [1, 5, 98] + [41] * 10
    assert all(flush for _, flush in timer.calls)            # cold by default
    median = UNIT * (1 + 4.5 / 8)
    assert rec == {"clock": "device", "source": "fake-event", "cache": "cold", "rounds": _medians(),
                   "launches": 41, "median_s": median, "min_s": UNIT, "iqr_s": 4.5 * UNIT / 8,
                   "bytes": 65536, "gbps": 65536 / median / 1e9, "peak_gbps": 100.0,
                   "peak_source": "a cited sheet", "peak_fraction": 65536 / median / 1e9 / 100.0,
                   "cache_resident": False}


def test_above_peak_is_cache_resident_and_warm_is_labelled() -> None:
    timer = Scripted()
    rec = measure(timer, Settings(rounds=5, warm=True), nbytes=65536, peak=(0.1, "s"))
    assert not any(flush for _, flush in timer.calls)
    assert rec["cache"] == "warm" and len(rec["rounds"]) == 5
    assert rec["peak_fraction"] > 1 and rec["cache_resident"] is True


def test_unverified_peak_and_host_clock() -> None:
    rec = measure(Scripted(), Settings(), 65536, (None, "unverified"))
    # No cited peak: peak, source and fraction null (suite/perf/record.py; the tables say unverified).
    assert (rec["peak_gbps"], rec["peak_source"], rec["peak_fraction"], rec["cache_resident"]) == (
        None, None, None, False)
    rec = measure(Scripted(clock="host", source="perf_counter_ns"), Settings(), 65536, (100.0, "s"))
    # A host clock times the host, not the product's memory: no % of its peak.
    assert rec["clock"] == "host" and rec["peak_gbps"] is None and rec["peak_fraction"] is None


@pytest.mark.parametrize("estimate, n", [(1.0, 30), (1e-3, 30), (1e-5, 500), (1e-7, 1000), (0.0, 1000)])
def test_launches_per_round_are_clamped(estimate: float, n: int) -> None:
    assert protocol.launches_for(estimate) == n


@pytest.mark.parametrize("timing, why", [
    (Timing("gpu", "x", (1.0,)), "clock 'gpu'"),
    (Timing("device", "", (1.0,)), "source ''"),
    (Timing("device", "x", (1.0, 1.0)), "2 launch times for 1 launches"),
    (Timing("device", "x", (float("nan"),)), "launch time of nan"),
    (Timing("device", "x", (-1.0,)), "launch time of -1.0"),
])
def test_a_malformed_timing_is_not_timed(timing: Timing, why: str) -> None:
    with pytest.raises(NotTimed) as e:
        measure(lambda n, f: (timing, 1.0), Settings(), 1, (None, None))
    assert why in e.value.reason


# -- a backend that claims a device clock but times the host --------------------------------
CALL = OpCall("MseLossBackward", {}, {"reduction": 0}, (4,), np.dtype(np.float32), "atlas-a2")
WORK = np.ones(2_000_000, dtype=np.float32)   # ~0.5 ms a launch: the Python between a liar's timers stays far under the 2 % the rule leaves, even on a loaded machine


class ModelDevice:
    """A fake device: each launch is host work (a numpy sum) whose device time, by the model, is
    DEVICE_S. The honest backend returns the model's seconds; the liar times the host around each
    launch (perf_counter_ns, Python overhead included) and calls it the device's."""

    DEVICE_S = 2e-6
    name = "model-device"

    def __init__(self, lie: bool) -> None:
        self.lie = lie

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> Timing:
        secs = []
        for _ in range(launches):
            t0 = time.perf_counter_ns()
            WORK.sum()
            secs.append((time.perf_counter_ns() - t0) / 1e9 if self.lie else self.DEVICE_S)
        return Timing("device", "fake-event", tuple(secs))


def _in_process(backend) -> protocol.Timer:
    def timer(n: int, flush: bool) -> Tuple[Timing, float]:
        r = time_hook(backend, CALL, n, flush)
        if "not_timed" in r:
            raise NotTimed(r["not_timed"])
        return Timing(r["clock"], r["source"], tuple(r["seconds"])), r["wall_s"]
    return timer


def test_host_timers_called_device_are_caught() -> None:
    with pytest.raises(NotTimed) as e:
        measure(_in_process(ModelDevice(lie=True)), Settings(rounds=3), 16, (None, "unverified"))
    assert "not device events" in e.value.reason and "host's wall time" in e.value.reason


def test_the_honest_model_device_is_timed() -> None:
    rec = measure(_in_process(ModelDevice(lie=False)), Settings(rounds=3), 16, (None, "unverified"))
    assert rec["clock"] == "device" and rec["median_s"] == ModelDevice.DEVICE_S


def test_more_device_time_than_the_host_waited_is_caught() -> None:
    class Fabricated(ModelDevice):
        DEVICE_S = 1.0              # a second a launch, returned in microseconds
    with pytest.raises(NotTimed) as e:
        measure(_in_process(Fabricated(lie=False)), Settings(rounds=3), 16, (None, None))
    assert "not this call's device time" in e.value.reason


def test_a_simulated_source_is_exempt() -> None:
    def timer(n: int, flush: bool) -> Tuple[Timing, float]:
        return Timing("device", "simulated", (1.0,) * n), 1e-6
    assert measure(timer, Settings(rounds=5), 1, (None, None))["median_s"] == 1.0


def test_the_hook_missing_unsupported_or_raising() -> None:
    class Plain:
        name = "plain"
        def run(self, call):
            return None
    assert "has no time_launches" in time_hook(Plain(), CALL, 1, True)["not_timed"]

    class CpuOnly(Plain):
        def time_launches(self, call, launches, *, flush):
            raise Unsupported("no device clock on a CPU build")
    assert time_hook(CpuOnly(), CALL, 1, True)["not_timed"] == (
        "the backend cannot time this call: no device clock on a CPU build")

    class Broken(Plain):
        def time_launches(self, call, launches, *, flush):
            raise ZeroDivisionError("x")
    assert time_hook(Broken(), CALL, 1, True)["not_timed"] == "time_launches raised ZeroDivisionError: x"

    class Wrong(Plain):
        def time_launches(self, call, launches, *, flush):
            return 3.0
    assert "not a Timing" in time_hook(Wrong(), CALL, 1, True)["not_timed"]


# -- the wire: a timing round's reply from the backend's process ----------------------------
from suite.run import protocol as wire                     # noqa: E402
from suite.run.wire import ProtocolError                   # noqa: E402

GOOD = {"clock": "device", "source": "e", "seconds": [1.0, 2.0], "wall_s": 3.0}


@pytest.mark.parametrize("reply, why", [
    (("timed", 7, GOOD), None),
    (("timed", 7, {"not_timed": "no hook"}), None),
    (("done", 7, GOOD), "not ('timed', 7, answer)"),
    (("timed", 6, GOOD), "not to this one (7)"),
    (("timed", 7, {**GOOD, "extra": 1}), "timing fields"),
    (("timed", 7, {**GOOD, "seconds": [1.0]}), "as the seconds of 2 launches"),
    (("timed", 7, {**GOOD, "seconds": [1, 2]}), "as the seconds of 2 launches"),
    (("timed", 7, {**GOOD, "wall_s": "3"}), "timing fields"),
    (("timed", 7, {"not_timed": 3}), "a not-timed reason 3"),
])
def test_a_timing_reply_is_checked_field_by_field(reply, why) -> None:
    """A malformed reply is a protocol violation (the process is killed: suite/run/host.py)."""
    if why is None:
        assert wire.timed(reply, 7, 2) == reply[2]
    else:
        with pytest.raises(ProtocolError) as e:
            wire.timed(reply, 7, 2)
        assert why in str(e.value)


def test_the_aclnn_backend_without_cann_says_why_it_does_not_time(tmp_path) -> None:
    from suite.backends.aclnn import AclnnBackend
    r = time_hook(AclnnBackend(lib_dir=str(tmp_path)), CALL, 1, True)
    assert r["not_timed"].startswith("the backend cannot time this call: CANN library libascendcl.so not found; "
                                     f"looked in {tmp_path} (lib_dir)"), r


def test_the_torch_backend_on_cpu_has_no_device_clock() -> None:
    pytest.importorskip("torch")
    from suite.backends.torch_backend import TorchBackend
    r = time_hook(TorchBackend(), CALL, 1, True)
    assert r["not_timed"].startswith("the backend cannot time this call: torch backend on device=cpu has no device clock")


def test_the_backends_process_keeps_the_timed_call_between_rounds() -> None:
    """A timing round sends the case's arrays only when the request is new (suite/run/host.py,
    Hosted.time): the rounds of one case time one call, built once in the backend's process."""
    from suite.run.host import Hosted
    x = np.ones(4, dtype=np.float32)
    req = {"op": "MseLossBackward", "inputs": {"gradOutput": x, "self": x, "target": x}, "layout": "contiguous",
           "attrs": {"reduction": 0}, "out_shape": (4,), "out_dtype": "float32", "product": "atlas-a2"}
    h = Hosted("tests.timing_backends:CountsCalls", {})
    h.start()
    try:
        sources = [h.time(r, 2, True)["source"] for r in (req, req, req, dict(req), req)]
    finally:
        assert h.close() is None
    assert sources == ["seen 1", "seen 1", "seen 1", "seen 2", "seen 3"]
