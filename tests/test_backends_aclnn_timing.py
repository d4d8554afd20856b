"""The aclnn backend's time_launches (aclrtEvent), proven against the host emulator's event
stand-ins and its deterministic device clock (tests/emulator/src/events.c; docs/timing.md).

What this proves: the seconds are the emulated device's (not the host's), each launch between its
own pair of events recorded on the launch stream, the flush (twice the L2 the runtime reports)
before the start event, one synchronize after the loop and none inside it, the executor reused
(aclSetAclOpExecutorRepeatable) or planned again outside the events where it cannot be, nothing
leaked; each planted mistake (tests/aclnn_timing_faults.py) is caught; and `pytest --timing
--backend aclnn` runs end to end with the device-event clock in results.json. What it cannot
prove: that a real NPU's events behave as the vendor documents; no NPU was used.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from suite import DeviceFault, OpCall, Unsupported, ops
from suite.backends.aclnn import AclnnBackend
from suite.report import results
from tests import aclnn_checks as C
from tests import aclnn_timing_check as T
from tests.aclnn_timing_faults import FAULTS
from tests.test_backends_aclnn import live
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def declarations(monkeypatch):
    for name, op in C.stand_ins().items():
        monkeypatch.setitem(ops.OPERATORS, name, op)


@pytest.fixture
def env(monkeypatch):
    """The emulated device's figures for these tests (round ones, so the expectations are plain)."""
    monkeypatch.setenv("ACLNN_EMU_SOC", "Ascend910B3")
    for k, v in {"ACLNN_EMU_GBPS": "1000", "ACLNN_EMU_LAUNCH_NS": "2000", "ACLNN_EMU_L2_BYTES": "262144",
                 "ACLNN_EMU_L2_SPEEDUP": "4", "ACLNN_EMU_MEMSET_NS": "500"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("ACLNN_EMU_NO_REPEATABLE", raising=False)
    return monkeypatch


def _make(emu_dir, cls=AclnnBackend):
    b = cls(lib_dir=emu_dir)
    assert b.unavailable is None, b.unavailable
    return b


@pytest.fixture
def backend(emu_dir, env):
    b = _make(emu_dir)
    events = T.live_events(b)   # the process's count: a planted leak in an earlier test stays leaked
    yield b
    b.close()
    assert live(b) == (0, 0, 0, 0) and T.live_events(b) == events, "leaked emulator resources"


def _call(n: int = 4096, dtype=C.F32) -> OpCall:
    return C.mse(np.random.default_rng(3), ((n,), (n,), (n,)), dtype, reduction=0)


def _timed(b, call, n, flush):
    """One time_launches call after the call's numbers (as the suite does; that also opens the
    device): what it returned, the trace it left, and the events it left alive."""
    b.run(call)
    T.reset(b)
    events = T.live_events(b)
    t = b.time_launches(call, n, flush=flush)
    return t, T.trace(b), T.live_events(b) - events


@pytest.mark.parametrize("flush", [True, False], ids=["cold", "warm"])
def test_the_honest_backend_keeps_the_event_protocol(backend, flush):
    call = _call()
    t, tokens, left = _timed(backend, call, 7, flush)
    assert T.violations(backend, call, 7, flush, t, tokens=tokens, events_after=left) == []
    assert len(t.seconds) == 7 and (t.clock, t.source) == ("device", "aclrtEvent")
    assert live(backend)[:3] == (0, 0, 0)


def test_seconds_are_the_emulated_device_time_not_the_host(backend, env):
    call = _call(1 << 16)
    cold = T.kernel_seconds(call)
    assert cold == pytest.approx((2000 + 4 * 4 * 65536 / 1000) / 1e9)   # 2 us + 1 MiB at 1 TB/s
    t = _timed(backend, call, 5, True)[0]
    assert t.seconds == pytest.approx([cold] * 5, rel=1e-6)
    env.setenv("ACLNN_EMU_GBPS", "250")             # a slower device: four times the bytes' time
    t = _timed(backend, call, 5, True)[0]
    assert t.seconds == pytest.approx([T.kernel_seconds(call)] * 5, rel=1e-6)
    launch = 2000 / 1e9
    assert T.kernel_seconds(call) - launch == pytest.approx(4 * (cold - launch))


def test_warm_launches_read_the_emulated_l2_and_cold_ones_do_not(backend):
    call = _call()                                    # 64 KiB: fits the emulated L2 of 256 KiB
    cold = _timed(backend, call, 6, True)[0]
    warm = _timed(backend, call, 6, False)[0]
    assert min(cold.seconds) > max(warm.seconds[1:])
    assert warm.seconds[1:] == pytest.approx([T.kernel_seconds(call, warm=True)] * 5, rel=1e-6)


def test_flush_is_twice_the_l2_the_runtime_reports(emu_dir, env):
    env.setenv("ACLNN_EMU_L2_BYTES", str(3 << 20))
    b = _make(emu_dir)
    try:
        tokens = _timed(b, _call(), 3, True)[1]
        assert [x.split("@")[0] for x in tokens if x.startswith("M")] == [f"M{6 << 20}"] * 3
    finally:
        b.close()


def test_executor_is_planned_once_and_reused(backend):
    tokens = _timed(backend, _call(), 5, True)[1]
    assert tokens.count("P") == 1 and tokens.index("P") < tokens.index(next(x for x in tokens if x[0] == "R"))


def test_without_a_repeatable_executor_each_launch_is_planned_outside_its_events(backend, env):
    env.setenv("ACLNN_EMU_NO_REPEATABLE", "1")        # aclSetAclOpExecutorRepeatable refuses
    call = _call()
    t, tokens, left = _timed(backend, call, 5, True)
    assert tokens.count("P") == 5
    assert T.violations(backend, call, 5, True, t, tokens=tokens, events_after=left) == []
    assert live(backend)[:3] == (0, 0, 0)


CAUGHT_BY = {"end event before the launch": "not the one kernel",
             "synchronize inside the loop": "synchronize(s) inside the loop",
             "flush inside the timed region": "no flush of at least", "events on the default stream": "off the launch stream",
             "events read before the device reached them": "aclrtEventElapsedTime failed",
             "an event leaked": "left alive", "host clock per launch said to be the device's": "the emulated device took",
             "host clock over the call said to be the device's": "the emulated device took"}


def test_every_planted_timing_fault_has_its_check():
    assert set(CAUGHT_BY) == set(FAULTS)


@pytest.mark.parametrize("what", list(FAULTS))
def test_each_planted_timing_fault_is_caught(emu_dir, env, what):
    b = _make(emu_dir, FAULTS[what])
    try:
        call = _call()
        t, tokens, left = _timed(b, call, 6, True)
        found = T.violations(b, call, 6, True, t, tokens=tokens, events_after=left)
    except RuntimeError as e:   # the emulator refused a call the protocol forbids
        found = [str(e)]
    finally:
        b.close()
    assert any(CAUGHT_BY[what] in f for f in found), f"{what}: not caught ({found})"


def test_an_ai_core_fault_while_timing_costs_the_call_and_leaks_nothing(backend, env):
    call = _call()
    backend.run(call)
    env.setenv("ACLNN_EMU_AICORE_FAULT_AT", str(backend.libraries.runtime.handle.aclemuKernelsRun() + 3))
    events = T.live_events(backend)
    with pytest.raises(DeviceFault):
        backend.time_launches(call, 6, flush=True)
    env.delenv("ACLNN_EMU_AICORE_FAULT_AT")
    assert live(backend)[:3] == (0, 0, 0) and T.live_events(backend) == events
    C.assert_close(backend.run(call), call)           # the device was recovered


def test_the_emulator_refuses_what_the_vendors_calling_order_forbids(backend):
    """Its strictness is what lets the planted faults fail: an event read before the device reached
    it, two events of different streams, an executor queued twice without being made repeatable."""
    import ctypes
    f, call = backend._fn, _call()
    backend.run(call)
    ev = [ctypes.c_void_p() for _ in range(3)]
    for e in ev:
        assert f["aclrtCreateEventWithFlag"](ctypes.byref(e), 8) == 0
    other = ctypes.c_void_p()
    assert f["aclrtCreateStream"](ctypes.byref(other)) == 0
    ms = ctypes.c_float()
    with backend._marshalled(call) as m:
        size, ex = ctypes.c_uint64(), ctypes.c_void_p()
        assert m.phase1(*m.args, ctypes.byref(size), ctypes.byref(ex)) == 0 and size.value == 0
        assert f["aclrtRecordEvent"](ev[0], backend._stream) == 0
        assert m.phase2(None, 0, ex, backend._stream) == 0
        assert m.phase2(None, 0, ex, backend._stream) != 0            # not repeatable, still queued
        assert f["aclrtRecordEvent"](ev[1], backend._stream) == 0
        assert f["aclrtRecordEvent"](ev[2], other) == 0
        assert f["aclrtEventElapsedTime"](ctypes.byref(ms), ev[0], ev[1]) != 0   # not reached yet
        assert f["aclrtSynchronizeStream"](backend._stream) == 0 and f["aclrtSynchronizeStream"](other) == 0
    assert f["aclrtEventElapsedTime"](ctypes.byref(ms), ev[0], ev[1]) == 0
    took = ms.value * 1e-3    # one kernel, cold or (where the allocator gave run()'s buffers back) warm
    assert any(took == pytest.approx(T.kernel_seconds(call, warm=w), rel=1e-6) for w in (False, True)), took
    assert f["aclrtEventElapsedTime"](ctypes.byref(ms), ev[0], ev[2]) != 0       # two streams
    for e in ev:
        assert f["aclrtDestroyEvent"](e) == 0
    assert f["aclrtDestroyStream"](other) == 0


def test_a_runtime_without_event_calls_is_unsupported_naming_them(backend):
    backend._fn.pop("aclrtEventElapsedTime")
    with pytest.raises(Unsupported, match="aclrtEventElapsedTime"):
        backend.time_launches(_call(), 3, flush=True)


# ---- pytest --timing --backend aclnn, end to end ---------------------------------------------------
def _suite(emu_dir, tmp_path, backend="aclnn", *extra):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACLNN_EMU_SOC": "Ascend910_9391"}
    for k in ("ACLNN_EMU_GBPS", "ACLNN_EMU_LAUNCH_NS", "ACLNN_EMU_L2_BYTES", "ACLNN_EMU_L2_SPEEDUP",
              "ACLNN_EMU_MEMSET_NS"):
        env.pop(k, None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timing", "--timing-rounds", "3",
           f"--backend={backend}", f"--backend-opt=lib_dir={emu_dir}", "--op", "MseLossBackward",
           "-k", "float32 and uniform", f"--report-dir={tmp_path}", *extra]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_S)
    doc = json.loads((tmp_path / "results.json").read_text())
    assert results.validate(doc) == [], proc.stdout[-2000:]
    recs = [r for r in doc["records"] if r["kind"] == "numbers"]
    assert recs and all(r["outcome"] == "passed" for r in recs), proc.stdout[-3000:]
    return recs


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_pytest_timing_with_the_aclnn_backend_records_device_events(emu_dir, tmp_path, warm):
    for rec in _suite(emu_dir, tmp_path, "aclnn", *(["--timing-warm"] if warm else [])):
        t = rec["timing"]
        assert (t["clock"], t["source"], t["cache"]) == ("device", "aclrtEvent", "warm" if warm else "cold"), t
        assert len(t["rounds"]) == 3 and t["launches"] >= 30
        # The emulator's own figures (the subprocess ran without the overrides): exactly its device
        # time, its L2's speed where nothing flushed it between launches.
        gbps = T.DEFAULTS["ACLNN_EMU_GBPS"] * (T.DEFAULTS["ACLNN_EMU_L2_SPEEDUP"] if warm else 1)
        expect = (T.DEFAULTS["ACLNN_EMU_LAUNCH_NS"] + t["bytes"] / gbps) / 1e9
        assert t["median_s"] == pytest.approx(expect, rel=1e-6) and t["iqr_s"] == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize("backend,leaked", [("aclnn", 0), ("tests.aclnn_timing_faults:LeakedEvent", 1)],
                         ids=["aclnn", "planted-leak"])
def test_pytest_timing_leaves_nothing_alive_after_close(emu_dir, tmp_path, backend, leaked):
    """The suite's leak check (tests.aclnn_leakcheck, in pytest's process) over a timed session; the
    backend that leaks one event a timing call shows there, one per call."""
    counts = tmp_path / "live.jsonl"
    recs = _suite(emu_dir, tmp_path, backend, "--isolation", "none", "-p", "tests.aclnn_leakcheck",
                  f"--aclnn-live-counts={counts}")
    assert all(r["timing"]["source"] == "aclrtEvent" for r in recs)
    (line,) = [json.loads(x) for x in counts.read_text().splitlines()]
    zero = {"buffers": 0, "tensors": 0, "executors": 0, "streams": 0}
    assert {k: v for k, v in line["after_close"].items() if k != "events"} == zero, line
    if not leaked:
        assert line["at_session_end"] == {**zero, "streams": 1, "events": 0} and line["after_close"]["events"] == 0
    else:   # the untimed call, the warm-up's calls and the rounds: each call leaked one event
        assert line["after_close"]["events"] > len(recs) * 3, line


def test_pytest_timing_refuses_host_times_said_to_be_device_events(emu_dir, tmp_path):
    for rec in _suite(emu_dir, tmp_path, "tests.aclnn_timing_faults:HostTimed"):
        assert rec["timing"]["status"] == "not timed" and "host" in rec["timing"]["reason"], rec["timing"]
