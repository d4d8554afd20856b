"""The simulated device and backend (suite/perf/simdevice.py, simulated.py): its time follows its
figures (bytes over bandwidth plus overhead, the slowdown, the cache), a seed reproduces it
exactly, its host clock is unrelated to its device clock, the lying variant says "device" over
host times, and its numbers pass the conformance suite (they are the reference backend's)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from suite.contract import OpCall
from suite.perf.record import Timing
from suite.perf.simdevice import DeviceModel, SimulatedDevice
from suite.perf.simulated import HostClockBackend, SimulatedBackend, data_key
from suite.perf.traffic import bytes_moved
from suite.run.backend import BackendError, make_backend

from tests.reportkit import run_suite

QUIET = dict(noise_sigma=0.0, outlier_rate=0.0, round_sigma=0.0)


def call_of(nbytes: int) -> OpCall:
    """A call moving `nbytes` (two float32 inputs and the output, a third each), as broadcast views
    so a gigabyte costs no memory."""
    n = nbytes // 12
    a = np.broadcast_to(np.zeros((), np.float32), (n,))
    return OpCall("Any", {"x": a, "y": np.broadcast_to(np.ones((), np.float32), (n,))}, {}, (n,),
                  np.dtype(np.float32), "atlas-a2")


def test_bytes_moved_counts_inputs_and_outputs_at_their_dtypes() -> None:
    c = OpCall("Any", {"x": np.zeros((4, 3), np.float16), "w": None, "i": np.zeros(5, np.int64)}, {},
               (2, 3), np.dtype(np.float32), "atlas-a2")
    assert bytes_moved(c) == 24 + 40 + 24
    several = OpCall("Any", {"x": np.zeros(4, np.float32)}, {}, (4,), np.dtype(np.float32), "atlas-a2",
                     outputs={"out": ((4,), np.dtype(np.float32)), "total": ((), np.dtype(np.float32))})
    assert bytes_moved(several) == 16 + 16 + 4


def test_quiet_device_time_is_bytes_over_bandwidth_plus_overhead() -> None:
    b = SimulatedBackend(**QUIET)
    t = b.time_launches(call_of(12_000_000), 3, flush=True)
    assert t.clock == "device" and t.source == "simulated" and isinstance(t, Timing)
    assert t.seconds == pytest.approx((12_000_000 / 1000e9 + 2e-6,) * 3, rel=1e-12)


def test_slowdown_scales_the_kernel() -> None:
    fast = SimulatedBackend(**QUIET).time_launches(call_of(12_000_000), 2, flush=True).seconds
    slow = SimulatedBackend(slowdown="1.2", **QUIET).time_launches(call_of(12_000_000), 2, flush=True).seconds
    assert slow == pytest.approx(tuple(1.2 * s for s in fast), rel=1e-12)


def test_a_seed_reproduces_exactly_and_another_differs() -> None:
    def times(seed: int):
        b = SimulatedBackend(seed=seed)
        return [b.time_launches(call_of(1 << 30), 50, flush=True).seconds for _ in range(3)]
    assert times(7) == times(7)
    assert times(7) != times(8)


def test_noise_is_lognormal_with_a_few_2x_outliers() -> None:
    dev = SimulatedDevice(DeviceModel(round_sigma=0.0, overhead_s=0.0), seed=1)
    s = np.array(dev.launches(10**9, "d", 20_000, flush=True)[0]) / (10**9 / 1000e9)
    outliers = np.mean(s > 1.5)
    assert 0.005 < outliers < 0.015                           # outlier_rate 0.01
    assert np.median(s) == pytest.approx(1.0, abs=0.005)
    assert np.std(np.log(s[s < 1.5])) == pytest.approx(0.03, rel=0.05)


def test_warm_cache_reads_at_cache_bandwidth_only_for_the_same_data_that_fits() -> None:
    small = call_of(12 << 20)                                 # 12 MiB: fits the 64 MiB cache
    b = SimulatedBackend(**QUIET)
    dram, cache = (12 << 20) / 1000e9 + 2e-6, (12 << 20) / 4000e9 + 2e-6
    assert b.time_launches(small, 3, flush=False).seconds == pytest.approx((dram, cache, cache))
    assert b.time_launches(small, 2, flush=False).seconds == pytest.approx((cache, cache))   # still resident
    assert b.time_launches(small, 2, flush=True).seconds == pytest.approx((dram, dram))      # flushed each time
    other = call_of(12 << 20)                                 # the same size, other buffers
    assert data_key(other) != data_key(small)
    assert b.time_launches(other, 1, flush=False).seconds == pytest.approx((dram,))
    big = call_of(100 << 20)                                  # past the cache: never resident
    big_dram = bytes_moved(big) / 1000e9 + 2e-6
    for _ in range(2):                                        # nor its first launch the next time
        assert b.time_launches(big, 3, flush=False).seconds == pytest.approx((big_dram,) * 3)
    assert b.time_launches(small, 1, flush=False).seconds == pytest.approx((dram,))        # evicted by big


def test_host_time_is_unrelated_to_device_time() -> None:
    small = SimulatedBackend(clock="host").time_launches(call_of(12_000), 200, flush=True)
    large = SimulatedBackend(clock="host").time_launches(call_of(1 << 30), 200, flush=True)
    assert small.clock == large.clock == "host"
    assert small.seconds == large.seconds                     # the enqueue does not see the kernel
    assert np.median(large.seconds) == pytest.approx(4e-6, rel=0.1)


def test_the_host_clock_variant_claims_device_over_host_times() -> None:
    t = HostClockBackend().time_launches(call_of(1 << 30), 100, flush=True)
    honest = SimulatedBackend().time_launches(call_of(1 << 30), 100, flush=True)
    assert t.clock == "device"
    assert np.median(t.seconds) < 1e-5 < np.median(honest.seconds)     # 4 us against 1.07 ms


def test_it_is_a_named_backend_with_checked_options() -> None:
    b = make_backend("simulated", {"seed": "3", "slowdown": "1.05"})
    assert isinstance(b, SimulatedBackend) and b.model.slowdown == 1.05 and b.peak_gbps == 1200.0
    assert isinstance(make_backend("simulated-host-clock", {}), HostClockBackend)
    for opts, message in (({"slowdown": "fast"}, "slowdown='fast': give a number"),
                          ({"slowdown": "0"}, "must be > 0"), ({"clock": "wall"}, "clock='wall'"),
                          ({"speed": "1"}, "unknown option speed"), ({"seed": "-1"}, "seed='-1'")):
        with pytest.raises(BackendError, match=re.escape(message)):
            make_backend("simulated", opts)


def test_its_numbers_pass_the_conformance_suite() -> None:
    r = run_suite(["--backend", "simulated", "--backend-opt", "slowdown=1.2", "--scale", "small",
                   "--op", "MseLossBackward", "-k", "2x3 and atlas-a2", "-x"])
    last = r.stdout.strip().splitlines()[-1]
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert re.search(r"[1-9]\d* passed", last) and "failed" not in last


def _timed_run(tmp_path, name: str, **opts) -> str:
    """A results.json of one case timed on the simulated device: 10 rounds of 50 flushed launches,
    each round's median (the benchmark's loop; the timing protocol's stand-in)."""
    from suite.perf.record import TimingRecord
    from suite.report import results
    from tests.reportkit import sample_record
    b = SimulatedBackend(**opts)
    call = call_of(1 << 28)
    rounds = [float(np.median(b.time_launches(call, 50, flush=True).seconds)) for _ in range(10)]
    rec = sample_record("case")
    rec["timing"] = TimingRecord.of_rounds(rounds, clock="device", source="simulated", cache="cold", launches=50,
                                           nbytes=bytes_moved(call), peak_gbps=b.peak_gbps,
                                           peak_source="simulated").to_json()
    run = {"backend": {"spec": "simulated", "options": {}}, "products": ["atlas-a2"], "standard_override": None,
           "manifest_hash": "", "machine": {}, "shard": None}
    path = tmp_path / f"{name}.json"
    results.write(path, results.make_document(run, [rec]))
    return str(path)


def test_simulated_runs_go_through_the_gate_end_to_end(tmp_path, capsys) -> None:
    from suite.cli import main as cli
    base = _timed_run(tmp_path, "base", seed=1)
    assert cli.main(["report", "diff", base, _timed_run(tmp_path, "same", seed=2)]) == 0
    assert cli.main(["report", "diff", base, _timed_run(tmp_path, "five", seed=3, slowdown=1.05)]) == 0
    capsys.readouterr()
    assert cli.main(["report", "diff", base, _timed_run(tmp_path, "slow", seed=4, slowdown=1.2)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("WORSE: 1 performance regressions\n") and "REGRESSION  case  " in out
    assert re.search(r"x1\.(19|20|21)\d  p=", out), out


def test_drift_slows_the_device_over_its_launches() -> None:
    """drift=0.3 over drift_launches=1000: launch i (counted over the device's life, every call)
    takes (1 + 0.3 i / 1000) times as long; without drift nothing changes."""
    b = SimulatedBackend(drift="0.3", drift_launches="1000", **QUIET)
    base = 12_000_000 / 1000e9 + 2e-6
    first = b.time_launches(call_of(12_000_000), 3, flush=True).seconds
    later = b.time_launches(call_of(12_000_000), 2, flush=True).seconds
    assert first + later == pytest.approx(tuple(base * (1 + 0.3 * i / 1000) for i in range(5)), rel=1e-12)
    assert SimulatedBackend(**QUIET).time_launches(call_of(12_000_000), 5, flush=True).seconds == \
        pytest.approx((base,) * 5, rel=1e-12)
    for opts, message in (({"drift_launches": "0"}, "drift_launches"), ({"drift": "-0.1"}, "drift='-0.1'")):
        with pytest.raises(BackendError, match=re.escape(message)):
            make_backend("simulated", opts)


def test_two_backends_on_one_device_share_its_drift() -> None:
    """The benchmark's A and B on one simulated device: the drift counts both backends' launches
    (its `ramp`), so B timed after A runs on a hotter device."""
    a = SimulatedBackend(drift=1.0, drift_launches=10, **QUIET)
    b = SimulatedBackend(seed=1, drift=1.0, drift_launches=10, **QUIET)
    b.device.ramp = a.device.ramp
    call = call_of(12_000_000)
    base = 12_000_000 / 1000e9 + 2e-6
    a.time_launches(call, 4, flush=True)
    assert b.time_launches(call, 2, flush=True).seconds == pytest.approx((base * 1.4, base * 1.5), rel=1e-12)
    assert a.device.ramp.launched == 6
