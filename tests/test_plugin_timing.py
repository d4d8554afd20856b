"""pytest --timing end to end (suite/plugin, suite/perf/case.py, docs/timing.md): the timing set
runs and is timed after its numbers pass, through the backend's own process; the record in
results.json and the table in summary.md; a failing or hook-less backend is "not timed" with its
reason; without --timing nothing changes; bad input is one line."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List

import pytest

from suite.cases.load import load_cases
from suite.common.yamlfile import FileError
from suite.report import results
from tests.core_helpers import suite_folder
from tests.timing_backends import UNIT

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ("-p", "suite.plugin", "-p", "no:cacheprovider", "-p", "no:benchmark")
B = "tests.timing_backends:"
MSE = """
op: MseLossBackward
matrices:
  - products: [atlas-a2]
    dtypes: [float32]
    reductions: [none]
    shapes: [[2x3, 2x3, 2x3]]
    determinism: true
  - name: the timing set
    products: [atlas-a2]
    dtypes: [float32, float16]
    reductions: [none]
    shapes: [[64x32, 64x32, 64x32]]
    timing: true
"""
TIMED = ["MseLossBackward-float32-atlas-a2-none-64x32.64x32.64x32-contiguous-uniform",
         "MseLossBackward-float16-atlas-a2-none-64x32.64x32.64x32-contiguous-uniform"]


@pytest.fixture
def suite_dir(pytester: pytest.Pytester, monkeypatch) -> pytest.Pytester:
    return suite_folder(pytester, monkeypatch, ROOT, {"mse.yaml": MSE})


def run(p: pytest.Pytester, backend: str, *args: str) -> Dict[str, dict]:
    """The run's records by case id (numbers tests), from its results.json (validated)."""
    r = p.runpytest(*PLUGIN, "--cases=cases", "--golden-dir=golden", f"--backend={backend}",
                    "--report-dir=rep", *args)
    doc = json.loads((p.path / "rep" / "results.json").read_text())
    assert results.validate(doc) == []
    p.last = r
    return {rec["case"]: rec for rec in doc["records"] if rec["kind"] == "numbers"}


def test_the_timing_set_is_timed_with_exact_figures(suite_dir) -> None:
    recs = run(suite_dir, B + "Simulated", "--timing", "--timing-rounds", "5")
    assert sorted(recs) == sorted(TIMED)                        # the timing set alone
    suite_dir.last.assert_outcomes(passed=2, deselected=2)      # the status and determinism modules left out
    t = recs[TIMED[0]]["timing"]
    nbytes = 4 * 64 * 32 * 4                                    # three float32 inputs and out
    assert t == {"clock": "device", "source": "simulated", "cache": "cold", "rounds": [UNIT] * 5,
                 "launches": 41, "median_s": UNIT, "min_s": UNIT, "iqr_s": 0.0, "bytes": nbytes,
                 "gbps": nbytes / UNIT / 1e9, "peak_gbps": None, "peak_source": None,
                 "peak_fraction": None, "cache_resident": False}
    assert recs[TIMED[1]]["timing"]["bytes"] == nbytes // 2       # float16
    summary = (suite_dir.path / "rep" / "summary.md").read_text()
    assert "## Timing (2 cases)" in summary
    assert f"| `{TIMED[0]}` | device (simulated) | cold | 122.1 us | 122.1 us | 0 ns | 0.2684 | unverified |" in summary
    html = (suite_dir.path / "rep" / "report.html").read_text()
    assert "<h2>Timing (2 cases)</h2>" in html and "<td class=l>device (simulated)</td>" in html


def test_peak_from_the_hardware_file_and_warm(suite_dir) -> None:
    hw = (ROOT / "cases" / "hardware.yaml").read_text().replace(
        "  float32_subnormals: not established\natlas-a3:",
        "  float32_subnormals: not established\n  peak_gbps: 0.1\n  peak_source: a test's figure\natlas-a3:")
    (suite_dir.path / "cases" / "hardware.yaml").write_text(hw)
    t = run(suite_dir, B + "Simulated", "--timing", "--timing-rounds", "3", "--timing-warm")[TIMED[0]]["timing"]
    assert (t["cache"], t["peak_gbps"], t["peak_source"]) == ("warm", 0.1, "a test's figure")
    assert t["peak_fraction"] == t["gbps"] / 0.1 and t["cache_resident"] is True
    assert "(above peak: cache-resident)" in (suite_dir.path / "rep" / "summary.md").read_text()


def test_the_reference_backend_is_timed_on_the_host_clock(suite_dir) -> None:
    t = run(suite_dir, "reference", "--timing", "--timing-rounds", "2")[TIMED[0]]["timing"]
    assert (t["clock"], t["source"], t["peak_gbps"], t["peak_fraction"]) == ("host", "perf_counter_ns", None, None)
    assert len(t["rounds"]) == 2 and t["median_s"] > 0 and 30 <= t["launches"] <= 1000
    assert "| host (perf_counter_ns) | cold |" in (suite_dir.path / "rep" / "summary.md").read_text()


@pytest.mark.parametrize("backend, reason", [
    ("WrongSimulated", "its numbers did not pass: only a correct kernel is timed"),
    ("NoHook", "backend no-hook has no time_launches(call, launches, *, flush) (docs/backend-contract.md, "
               "Timing): not timed"),
    ("HostCalledDevice", "host timers around each launch, not device events"),
    ("Crashes", "the backend's process failed while timing: the backend's process exited with code 3 during timing"),
])
def test_not_timed_says_why(suite_dir, backend: str, reason: str) -> None:
    recs = run(suite_dir, B + backend, "--timing", "--timing-rounds", "3")
    for case in TIMED:
        t = recs[case]["timing"]
        assert t["status"] == "not timed" and reason in t["reason"], t
    summary = (suite_dir.path / "rep" / "summary.md").read_text()
    assert f"| `{TIMED[0]}` | not timed |" in summary
    assert "<td class=l>not timed</td>" in (suite_dir.path / "rep" / "report.html").read_text()


def test_without_timing_nothing_changes(suite_dir) -> None:
    recs = run(suite_dir, B + "Simulated")
    assert len(recs) == 3 and not any("timing" in r for r in recs.values())
    # 3 numbers tests, 1 determinism test, and the status module's empty set: no deselection.
    suite_dir.last.assert_outcomes(passed=4, deselected=1)
    assert "## Timing" not in (suite_dir.path / "rep" / "summary.md").read_text()
    assert "Timing" not in (suite_dir.path / "rep" / "report.html").read_text()


@pytest.mark.parametrize("args, line", [
    (["--timing", "--timing-rounds", "0"], "--timing-rounds 0: 1 or more"),
    (["--timing-warm"], "--timing-rounds and --timing-warm take effect only with --timing"),
])
def test_bad_options_are_one_line(suite_dir, args: List[str], line: str) -> None:
    r = suite_dir.runpytest(*PLUGIN, "--cases=cases", "--golden-dir=golden", *args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert line in r.stderr.str() and "Traceback" not in r.stderr.str()


def test_a_bad_timing_key_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(MSE.replace("timing: true", "timing: sometimes"))
    with pytest.raises(FileError) as e:
        load_cases([tmp_path / "m.yaml"])
    assert str(e.value).endswith("m.yaml:14: field 'timing': expected true or false, not 'sometimes'")
    assert "\n" not in str(e.value)
