"""pytest --timing --timing-baseline end to end (suite/plugin/baseline.py, suite/perf/pair.py,
docs/timing.md "Interleaved"): the baseline backend runs in a process of its own, passes the
numbers first, and is timed round by round with the candidate; the gate's verdict is in
results.json (`interleaved`), summary.md and report.html, a REGRESSION fails the run with the
case, both medians, the ratio and p, and `aclnn-conform report diff RUN` gates on it alone; a
baseline that fails, crashes or misbehaves makes the timing UNKNOWN and never a failing run pass."""
from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Dict, List

import pytest
import scipy.stats  # noqa: F401 (imported before pytester's in-process runs, which drop from
                    # sys.modules what they import, and scipy's extensions cannot load twice)

from suite.cli import main as cli
from suite.plugin import baseline
from suite.report import results
from tests.core_helpers import suite_folder
from tests.test_plugin_timing import MSE, PLUGIN, TIMED

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]
B = "tests.timing_backends:"
I = "tests.interleave_backends:"
SIM = ["--backend", "simulated", "--backend-opt", "seed=2", "--timing", "--timing-rounds", "6"]
BASE = ["--timing-baseline", "simulated", "--timing-baseline-opt", "seed=1"]


@pytest.fixture
def suite_dir(pytester: pytest.Pytester, monkeypatch) -> pytest.Pytester:
    return suite_folder(pytester, monkeypatch, ROOT, {"mse.yaml": MSE})


def run(p: pytest.Pytester, *args: str) -> Dict[str, dict]:
    """The run's timed records by case id, from its results.json (validated)."""
    r = p.runpytest(*PLUGIN, "--cases=cases", "--golden-dir=golden", "--report-dir=rep", *args)
    doc = json.loads((p.path / "rep" / "results.json").read_text())
    assert results.validate(doc) == [], results.validate(doc)
    p.last, p.doc = r, doc
    return {rec["case"]: rec for rec in doc["records"] if rec["case"] in TIMED}


def test_a_slower_candidate_fails_the_run_with_both_medians_the_ratio_and_p(suite_dir, capsys) -> None:
    recs = run(suite_dir, *SIM, "--backend-opt", "slowdown=1.3", *BASE)
    assert suite_dir.last.ret == pytest.ExitCode.TESTS_FAILED
    out = suite_dir.last.stdout.str()
    for case in TIMED:
        r = recs[case]
        v = r["interleaved"]
        assert r["outcome"] == "failed" and v["verdict"] == "REGRESSION" and v["order"] == "ABAB"
        base, cand = v["baseline"], r["timing"]
        assert len(base["rounds"]) == len(cand["rounds"]) == 6 and base["launches"] == cand["launches"]
        assert v["base_median_s"] == base["median_s"] and v["cand_median_s"] == cand["median_s"]
        assert v["ratio"] == pytest.approx(cand["median_s"] / base["median_s"]) and 1.25 < v["ratio"] < 1.35
        assert v["p"] <= 0.01 and (v["threshold"], v["alpha"]) == (0.1, 0.01)
        assert r["status"] == 0 and r["metrics"]["n"] == 64 * 32          # its numbers passed
        line = re.search(rf"{re.escape(case)}: performance REGRESSION against the timing baseline simulated: "
                         rf"median (\S+ \S+) -> (\S+ \S+) a launch, x(\d\.\d+), p=(\S+) ", out)
        assert line and float(line[3]) == pytest.approx(v["ratio"], abs=5e-4), out[-3000:]
    assert suite_dir.doc["timing_baseline"] == {"spec": "simulated", "options": {"seed": "1"}}
    summary = (suite_dir.path / "rep" / "summary.md").read_text()
    assert "## Interleaved timing against the baseline `simulated` (2 cases: 2 REGRESSION)" in summary
    assert re.search(rf"\| `{re.escape(TIMED[0])}` \| REGRESSION \| \S+ us \| \S+ us \| x1\.\d+ \| \S+ \|", summary)
    html = (suite_dir.path / "rep" / "report.html").read_text()
    assert "<h2>Interleaved timing against the baseline <code>simulated</code>" in html
    capsys.readouterr()
    assert cli.main(["report", "diff", str(suite_dir.path / "rep" / "results.json")]) == 1
    said = capsys.readouterr().out
    assert said.startswith("WORSE: 2 performance regressions") and f"REGRESSION  test_numerics.py::test_results[{TIMED[0]}]" in said
    assert "BASELINE -> CANDIDATE, interleaved in one run" in said


def test_the_same_kernel_interleaved_is_same_and_passes(suite_dir, capsys) -> None:
    recs = run(suite_dir, *SIM, *BASE)
    assert suite_dir.last.ret == pytest.ExitCode.OK, suite_dir.last.stdout.str()[-2000:]
    assert [recs[c]["interleaved"]["verdict"] for c in TIMED] == ["SAME", "SAME"]
    assert all(recs[c]["outcome"] == "passed" for c in TIMED)
    capsys.readouterr()
    assert cli.main(["report", "diff", str(suite_dir.path / "rep" / "results.json")]) == 0
    assert capsys.readouterr().out.startswith("OK: ")


@pytest.mark.parametrize("baseline, reason", [
    (B + "WrongSimulated", "the baseline's numbers did not pass: "),
    (B + "Crashes", "the timing baseline's process failed while timing: "),
    (B + "NoHook", "has no time_launches"),
])
def test_a_failing_baseline_makes_the_timing_unknown(suite_dir, baseline: str, reason: str) -> None:
    recs = run(suite_dir, *SIM, "--timing-baseline", baseline)
    assert suite_dir.last.ret == pytest.ExitCode.OK, suite_dir.last.stdout.str()[-2000:]
    for case in TIMED:
        v = recs[case]["interleaved"]
        assert v["verdict"] == "UNKNOWN" and reason in v["reason"] and v["p"] is None, v
        assert v["baseline"]["status"] == "not timed" and reason in v["baseline"]["reason"]
        assert len(recs[case]["timing"]["rounds"]) == 6          # the candidate timed all the same


def test_a_hanging_baseline_is_killed_at_its_deadline_and_costs_only_the_verdict(suite_dir) -> None:
    recs = run(suite_dir, *SIM, "--timing-baseline", I + "Hangs", "--case-timeout", "1")
    assert suite_dir.last.ret == pytest.ExitCode.OK, suite_dir.last.stdout.str()[-2000:]
    for case in TIMED:
        v = recs[case]["interleaved"]
        assert v["verdict"] == "UNKNOWN" and "overran its deadline" in v["reason"], v
        assert recs[case]["outcome"] == "passed" and len(recs[case]["timing"]["rounds"]) == 6


def test_the_baseline_runs_in_a_process_of_its_own(suite_dir) -> None:
    recs = run(suite_dir, "--backend", I + "Pid", "--timing", "--timing-rounds", "5", "--timing-baseline", I + "Pid")
    r = recs[TIMED[0]]
    cand, base = r["timing"]["source"], r["interleaved"]["baseline"]["source"]
    assert cand.startswith("pid ") and base.startswith("pid ") and cand != base
    assert f"pid {os.getpid()}" not in (cand, base)


def test_a_hostile_baseline_cannot_make_a_failing_candidate_pass(suite_dir) -> None:
    target = suite_dir.path / "rep" / "results.json"
    recs = run(suite_dir, "--backend", B + "WrongSimulated", "--timing", "--timing-rounds", "5",
               "--timing-baseline", I + "Hostile", "--timing-baseline-opt", f"path={target}")
    assert suite_dir.last.ret == pytest.ExitCode.TESTS_FAILED
    assert [recs[c]["outcome"] for c in TIMED] == ["failed", "failed"]
    assert "timing baseline" in " ".join(suite_dir.doc["incidents"])     # its exit in close() is one


@pytest.mark.parametrize("args, line", [
    (["--timing", "--timing-baseline", "nosuch.module:Thing"], "--timing-baseline nosuch.module:Thing: "),
    (["--timing-baseline", "simulated"], "--timing-baseline, --timing-baseline-opt, --perf-threshold and "
                                         "--perf-alpha take effect only with --timing and --timing-baseline"),
    (["--timing", "--perf-alpha", "0.05"], "take effect only with --timing and --timing-baseline"),
    (["--timing", "--timing-baseline", "simulated", "--timing-baseline-opt", "seed"], "--timing-baseline-opt"),
    (["--timing", "--timing-baseline", "simulated", "--perf-threshold", "-1"], "--perf-threshold -1: "),
    (["--timing", "--timing-baseline", "simulated", "--perf-alpha", "2"], "--perf-alpha 2: "),
])
def test_bad_options_are_one_line(suite_dir, args: List[str], line: str) -> None:
    r = suite_dir.runpytest(*PLUGIN, "--cases=cases", "--golden-dir=golden", *args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert line in r.stderr.str() and "Traceback" not in r.stderr.str(), r.stderr.str()


@pytest.mark.parametrize("option, convert", [("perf_threshold", cli._threshold), ("perf_alpha", cli._probability)])
@pytest.mark.parametrize("text", ["0", "1e-9", "0.05", "1", "1.5", "-0.0", "-1", "nan", "inf", "-inf", "two", ""])
def test_pytest_and_report_diff_take_the_same_perf_numbers(option: str, convert, text: str) -> None:
    """--perf-threshold and --perf-alpha mean the same in pytest and in `aclnn-conform report diff`:
    a value one refuses the other refuses, and one both take is the same number."""
    opt = SimpleNamespace(timing_baseline="simulated", timing_baseline_opt=[], perf_threshold=None, perf_alpha=None)
    setattr(opt, option, text)
    try:
        plugin_took = getattr(baseline.options_of(opt, True), option.split("_")[1])
    except pytest.UsageError as e:
        plugin_took = None
        assert str(e).startswith(f"--{option.replace('_', '-')} {text}: ")
    try:
        cli_took = convert(text)
    except argparse.ArgumentTypeError:
        cli_took = None
    assert plugin_took == cli_took


LARGE = MSE.replace("shapes: [[64x32, 64x32, 64x32]]\n    timing: true", "shapes: [[256x256, 256x256, 256x256]]\n    timing: true") \
    .replace("dtypes: [float32, float16]", "dtypes: [float32]")


def test_the_memory_check_counts_the_baselines_copy(pytester: pytest.Pytester, monkeypatch) -> None:
    # A case of 2**16 elements (not committed: the check applies) whose estimate fits --max-memory
    # with half a MiB to spare; the baseline's process holds another copy of its inputs and output
    # (1.25 MiB), so with --timing-baseline it no longer fits and is skipped, saying why.
    from suite.cases.load import load_cases
    from suite.cases.model import Kind
    from suite.run import memory
    p = suite_folder(pytester, monkeypatch, ROOT, {"mse.yaml": LARGE})
    case = next(c for c in load_cases([p.path / "cases"])[0] if c.timing)
    alone = memory.need(case, Kind.NUMBERS, 0.0, 1)          # the simulated backend: no working memory
    cap = f"--max-memory={alone + (1 << 19)}"
    key = f"test_numerics.py::test_results[{case.id}]"
    recs = {r["key"]: r for r in _doc(p, *SIM, cap)["records"]}
    assert recs[key]["outcome"] == "passed" and "rounds" in recs[key]["timing"]
    recs = {r["key"]: r for r in _doc(p, *SIM, *BASE, cap)["records"]}
    assert recs[key]["outcome"] == "skipped", recs[key]
    assert re.fullmatch(r"needs about \d+ MiB of memory for its arrays \(1 MiB of it the timing baseline's copy\); "
                        r"\d+ MiB --max-memory", recs[key]["reason"]), recs[key]["reason"]


def _doc(p: pytest.Pytester, *args: str) -> dict:
    p.runpytest(*PLUGIN, "--cases=cases", "--golden-dir=golden", "--report-dir=rep", *args)
    doc = json.loads((p.path / "rep" / "results.json").read_text())
    assert results.validate(doc) == [], results.validate(doc)
    return doc


def test_the_baselines_share_of_the_estimate(tmp_path: Path) -> None:
    """Its output, its working memory and its process's copies, for a numbers test only."""
    from suite.cases.load import load_cases
    from suite.cases.model import Kind
    from suite.run import memory
    (tmp_path / "mse.yaml").write_text(LARGE)
    case = next(c for c in load_cases([tmp_path])[0] if c.timing)
    arrays, out = 3 * 4 << 16, 4 << 16                        # three float32 inputs of 2**16, the output
    for working, copies, share in ((0.0, 0, out), (0.0, 1, out + arrays + out), (2.0, 1, 3 * (arrays + out) + out)):
        assert memory.baseline_share(case, working, copies) == pytest.approx(1.1 * share, abs=1)
        assert memory.need(case, Kind.NUMBERS, 2.0, 1, (working, copies)) - memory.need(case, Kind.NUMBERS, 2.0, 1) \
            == pytest.approx(1.1 * share, abs=1)
    assert memory.need(case, Kind.DETERMINISM, 2.0, 1, (2.0, 1)) == memory.need(case, Kind.DETERMINISM, 2.0, 1)
