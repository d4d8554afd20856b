"""benchmarks/device_timing_check.py, the prepared device check of the torch backend's CUDA timing
(docs/timing.md, "A device check"), proven without a device: no CUDA is exit 2 in one line; its
checks catch a host clock, another event source, a case not timed, bad rounds and an impossible
GB/s; and a rehearsal on the simulated backend runs it end to end (on the reference backend's
host clock it fails, naming each case)."""
from __future__ import annotations

import copy
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "device_timing_check.py"


def _module():
    spec = importlib.util.spec_from_file_location("device_timing_check", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


check = _module()


def _script(*args: str, timeout: float = HANG_S) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_without_cuda_it_exits_2_in_one_line() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the check would run")
    r = _script()
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (f"device_timing_check: no CUDA device here, nothing checked: torch {torch.__version__} "
                        f"sees no CUDA device (torch.cuda.is_available() is False)\n")


def test_without_torch_it_exits_2_in_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)          # import torch raises ImportError
    assert check.main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == ("device_timing_check: no CUDA device here, nothing checked: torch is not installed "
                                 "(pip install torch, a CUDA build)\n")


def timed(case: str, clock: str = "device", source: str = "torch.cuda.Event", rounds=(2e-5, 2.1e-5, 1.9e-5),
          gbps: float = 3000.0) -> dict:
    return {"case": case, "key": f"k[{case}]", "kind": "numbers", "outcome": "passed",
            "timing": {"clock": clock, "source": source, "rounds": list(rounds), "median_s": sorted(rounds)[1],
                       "gbps": gbps}}


def test_good_records_give_the_table_and_no_problem() -> None:
    rows, problems = check.check({"records": [timed("a"), timed("b", gbps=4000.0)]}, "torch.cuda.Event")
    assert problems == [] and rows == [("a", 2e-5, 3000.0, "device (torch.cuda.Event)"),
                                       ("b", 2e-5, 4000.0, "device (torch.cuda.Event)")]
    assert check.table(rows).splitlines()[1].split() == ["a", "20", "us", "3000.0", "device", "(torch.cuda.Event)"]


@pytest.mark.parametrize("change,says", [
    (lambda r: r["timing"].update(clock="host", source="perf_counter_ns"),
     "c: timed by the host clock (perf_counter_ns), not the device's events (torch.cuda.Event)"),
    (lambda r: r["timing"].update(source="torch.npu.Event"),
     "c: timed by the device clock (torch.npu.Event), not the device's events (torch.cuda.Event)"),
    (lambda r: r.update(timing={"status": "not timed", "reason": "its numbers did not pass"}),
     "c: not timed: its numbers did not pass"),
    (lambda r: r.pop("timing"), "c: no timing record (outcome passed)"),
    (lambda r: r["timing"].update(rounds=[2e-5, math.inf, 2e-5]), "c: round medians must be positive and finite"),
    (lambda r: r["timing"].update(rounds=[2e-5, 0.0, 2e-5]), "c: round medians must be positive and finite"),
    (lambda r: r["timing"].update(rounds=[]), "c: round medians must be positive and finite"),
    (lambda r: r["timing"].update(median_s=math.nan), "c: round medians must be positive and finite"),
    (lambda r: r["timing"].update(median_s=-1e-5), "c: round medians must be positive and finite"),
    (lambda r: r["timing"].update(gbps=10_000.5), "c: 10000.5 GB/s is not a memory's speed (positive, at most 10000)"),
    (lambda r: r["timing"].update(gbps=0), "c: 0 GB/s is not a memory's speed"),
])
def test_each_bad_record_is_one_problem_naming_the_case(change, says: str) -> None:
    bad = copy.deepcopy(timed("c"))
    change(bad)
    rows, problems = check.check({"records": [timed("a"), bad]}, "torch.cuda.Event")
    assert len(problems) == 1 and problems[0].startswith(says) and "\n" not in problems[0], problems
    assert [r[0] for r in rows][0] == "a"
    assert check.check({"records": [timed("c", gbps=10_000.0)]}, "torch.cuda.Event")[1] == []   # the bound counts


def test_a_run_without_numbers_records_is_a_problem() -> None:
    assert check.check({"records": [{**timed("d"), "kind": "determinism"}]}, "torch.cuda.Event") == (
        [], ["the run has no numbers record: the timing set did not run"])


@pytest.mark.parametrize("text", ["", " , ", "512x", "0x4", "ax4", "4x-1"])
def test_bad_sizes_are_refused(text: str) -> None:
    import argparse
    with pytest.raises(argparse.ArgumentTypeError):
        check.sizes(text)


def test_sizes_are_read() -> None:
    assert check.sizes("512x512, 64x4") == ["512x512", "64x4"] and check.sizes("512") == ["512"]


def test_a_rehearsal_on_the_simulated_backend_runs_end_to_end(tmp_path: Path) -> None:
    r = _script("--rehearse", "simulated", "--sizes", "256x256", "--rounds", "5", "--report-dir", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "REHEARSAL on backend simulated: this proves the script, not a device"
    assert lines[1] == f"pytest --timing --backend simulated: exit 0; reports in {tmp_path / 'rep'}"
    assert lines[2].split() == ["case", "median", "GB/s", "clock"]
    assert [x.split()[0] for x in lines[3:5]] == [
        f"MseLossBackward-{d}-atlas-a2-none-256x256.256x256.256x256-contiguous-uniform" for d in ("float16", "float32")]
    assert all(x.endswith("device (simulated)") for x in lines[3:5])
    assert lines[5:] == ['OK: 2 cases timed on the device clock by simulated (backend "simulated")']
    assert (tmp_path / "rep" / "results.json").is_file()


def test_a_rehearsal_on_a_host_clock_fails_naming_each_case(tmp_path: Path) -> None:
    r = _script("--rehearse", "reference", "--sizes", "256x256", "--rounds", "5", "--report-dir", str(tmp_path / "rep"))
    assert r.returncode == 1, r.stdout + r.stderr
    problems = [x for x in r.stdout.splitlines() if x.startswith("PROBLEM: ")]
    assert len(problems) == 2 and all("timed by the host clock (perf_counter_ns), not the device's events" in p
                                      for p in problems)
    assert r.stdout.splitlines()[-1] == 'FAILED: 2 problems; 2 cases timed (backend "reference")'
