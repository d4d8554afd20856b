"""The CI gate: a broken backend's run diffs as worse than the reference's (exit 1, the newly failing
cases named); precision regressions; known failures (xfail, xpass, strict, stale patterns)."""
from __future__ import annotations

import copy
import fnmatch
import json

import numpy as np
import pytest

from suite.report import knownfail
from suite.report import compare, results
from suite.backends.reference import ReferenceBackend
from suite.contract import OpCall
from suite.common.yamlfile import FileError
from tests.reportkit import ROOT, cli, run_suite

MSE = "--cases=" + str(ROOT / "cases" / "mse_loss_backward.yaml")
SLICE = "test_results and float32 and atlas-a2"          # MSE numbers, every reduction
# A BASE that NEW's run could have written (on this machine, outside the folders that run protected:
# another run's report folder, a file a test made) is refused without it (tests/test_report_trust.py);
# the runs below follow the documented flow where they can (--baseline names it to the run).
TRUSTED = "--trust-baseline"


class BrokenMseBackend(ReferenceBackend):
    """The reference kernel with a planted bug: MSE's mean divides by N+1 instead of N."""
    name = "broken-mse-mean"

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        if call.op == "MseLossBackward" and call.attrs["reduction"] == 1:
            n = int(np.prod(np.shape(call.inputs["self"])))
            out = np.asarray(out.astype(np.float64) * n / (n + 1)).astype(out.dtype)
        return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("gate")
    ref = run_suite([MSE, "-k", SLICE, "--report-dir=" + str(d / "ref")])
    assert ref.returncode == 0, ref.stdout[-3000:]
    bad = run_suite([MSE, "-k", SLICE, "--backend", "tests.test_gate:BrokenMseBackend",
                     "--baseline=" + str(d / "ref" / "results.json"), "--report-dir=" + str(d / "bad")])
    assert bad.returncode == 1, bad.stdout[-3000:]
    return d, results.read(d / "ref" / "results.json"), results.read(d / "bad" / "results.json")


def test_broken_backend_fails_the_gate(runs):
    d, ref, bad = runs
    failed = {r["key"] for r in bad["records"] if r["outcome"] == "failed"}
    assert failed and all(r["reduction"] == 1 for r in bad["records"] if r["key"] in failed)
    assert {r["outcome"] for r in ref["records"]} == {"passed"}
    p = cli(["report", "diff", str(d / "ref" / "results.json"), str(d / "bad" / "results.json"), "--limit", "3"])
    assert p.returncode == 1, p.stdout
    assert p.stdout.startswith(f"WORSE: {len(failed)} new failures")
    assert f"new failures by operator and kind ({len(failed)}):\n  {len(failed)}  MseLossBackward  numbers\n" in p.stdout
    failures = p.stdout.split("new failures, MseLossBackward numbers (")[1].split("precision regressions")[0]
    shown = [line.strip().split()[0] for line in failures.splitlines() if line.startswith("  suite/")]
    assert len(shown) == 3 and set(shown) <= failed
    assert f"... and {len(failed) - 3} more" in p.stdout and "reproduce: pytest " in p.stdout
    back = cli(["report", "diff", str(d / "bad" / "results.json"), str(d / "ref" / "results.json"), TRUSTED])
    assert back.returncode == 0 and f"fixed ({len(failed)})" in back.stdout


def test_failed_records_carry_metrics_and_reproducer(runs):
    bad = runs[2]
    r = next(r for r in bad["records"] if r["outcome"] == "failed")
    m = r["metrics"]
    assert m["standard"] and results.number(m["max_ulp"]) > 1 and m["n_over"] > 0 and m["share_over"] > 0
    assert r["status"] == 0 and "fails standard" in r["reason"]
    assert r["reproduce"].startswith("pytest ") and "BrokenMseBackend" in r["reproduce"]
    md = (runs[0] / "bad" / "summary.md").read_text()
    assert f"## Failures ({bad['counts']['failed']})" in md and r["reproduce"] in md


def _with(doc, key, **metrics):
    doc = copy.deepcopy(doc)
    for r in doc["records"]:
        if r["key"] == key:
            r["metrics"].update(metrics)
    return doc


def test_precision_regression_threshold(runs):
    ref = runs[1]
    key = next(r["key"] for r in ref["records"] if r["metrics"] and r["metrics"]["n"])
    base = _with(ref, key, max_ulp=0.4)
    assert compare.diff(base, _with(ref, key, max_ulp=1.3)).worse is False          # +0.9 ulp: noise
    assert compare.diff(_with(ref, key, max_ulp=3.0), _with(ref, key, max_ulp=4.5)).worse is False  # 1.5x
    d = compare.diff(base, _with(ref, key, max_ulp=2.0))
    assert d.worse and [n["key"] for _, n in d.regressions] == [key]
    assert "1 precision regressions" in compare.render_diff(d)
    assert compare.diff(base, _with(ref, key, max_ulp=2.0), ulp_growth=2.0).worse is False


def test_vanished_cases_are_worse_unless_allowed(runs, tmp_path):
    d, ref, _ = runs
    fewer = copy.deepcopy(ref)
    fewer["records"] = fewer["records"][1:]
    fewer["counts"] = results.count_outcomes(fewer["records"])
    results.write(tmp_path / "fewer.json", fewer)
    base = str(d / "ref" / "results.json")
    assert cli(["report", "diff", base, str(tmp_path / "fewer.json"), TRUSTED]).returncode == 1
    p = cli(["report", "diff", base, str(tmp_path / "fewer.json"), "--allow-vanished", TRUSTED])
    assert p.returncode == 0 and "1 vanished cases allowed" in p.stdout
    assert cli(["report", "diff", str(tmp_path / "fewer.json"), base, TRUSTED]).returncode == 0   # appeared: fine


KNOWN = """\
- cases: "MseLossBackward-float32-atlas-a2-mean-*"
  reason: divides by N+1
  issue: https://example.org/issues/1
- cases: ["MseLossBackward-float32-atlas-a2-sum-2x3.2x3.2x3-contiguous-uniform"]
  reason: was flaky once
- cases: MseLossBackward-float32-atlas-a2-none-2x3.2x3.2x3-contiguous-uniform
  reason: fixed upstream
  strict: true
- cases: NoSuchOp-*
  reason: stale
"""


def test_known_failures(tmp_path, runs):
    kf = tmp_path / "known.yaml"
    kf.write_text(KNOWN)
    p = run_suite([MSE, "-k", SLICE, "--backend", "tests.test_gate:BrokenMseBackend",
                   "--known-failures=" + str(kf), "--report-dir=" + str(tmp_path / "rep"), "-rxX"])
    assert p.returncode == 1, p.stdout[-3000:]                    # only the strict XPASS fails the run
    doc = results.read(tmp_path / "rep" / "results.json")
    outcome = {r["case"]: r["outcome"] for r in doc["records"]}
    plain = {r["case"]: r["outcome"] for r in runs[2]["records"]}       # same backend, no list
    listed_sum = "MseLossBackward-float32-atlas-a2-sum-2x3.2x3.2x3-contiguous-uniform"
    strict = "MseLossBackward-float32-atlas-a2-none-2x3.2x3.2x3-contiguous-uniform"
    want = {}
    for case, o in plain.items():
        if fnmatch.fnmatchcase(case, "MseLossBackward-float32-atlas-a2-mean-*"):
            want[case] = "xfailed" if o == "failed" else "xpassed"     # mean cases the bug spares pass
        elif case == listed_sum:
            want[case] = "xpassed"
        elif case == strict:
            want[case] = "failed"                                       # XPASS(strict)
        else:
            want[case] = o
    assert outcome == want
    assert "xfailed" in want.values() and "failed" in plain.values()
    xf = [r for r in doc["records"] if r["outcome"] == "xfailed"]
    assert all("divides by N+1" in r["reason"] and "issues/1" in r["reason"] for r in xf)
    assert f"{sum(o == 'xpassed' for o in want.values())} xpassed" in p.stdout.splitlines()[-1]
    assert "XPASS(strict)" in p.stdout and "'NoSuchOp-*' matches no case" in p.stdout
    assert "known.yaml:9" in p.stdout


@pytest.mark.parametrize("text,where", [
    ("- cases: a*\n", "known.yaml:1: field 'reason': required"),
    ("- cases: a*\n  reason: r\n  strict: yes please\n", "known.yaml:3: field 'strict'"),
    ("- cases: []\n  reason: r\n", "known.yaml:1: field 'cases'"),
    ("- cases: a*\n  reason: r\n  owner: me\n", "known.yaml:3: field 'owner': unknown field"),
    ("cases: a*\n", "known.yaml:1: a known-failures file is a list"),
])
def test_known_failures_schema_errors(tmp_path, text, where):
    f = tmp_path / "known.yaml"
    f.write_text(text)
    with pytest.raises(FileError) as e:
        knownfail.load_file(f)
    assert where in str(e.value)


def test_known_failures_usage_error_names_the_file(tmp_path):
    f = tmp_path / "known.yaml"
    f.write_text("- reason: r\n")
    p = run_suite([MSE, "--collect-only", "-k", "nothing-matches-this", "--known-failures=" + str(f)])
    assert p.returncode == 4 and "known.yaml:1: field 'cases': required" in p.stderr


def test_diff_rejects_a_file_of_another_schema(tmp_path, runs):
    doc = copy.deepcopy(runs[1])
    doc["schema_version"] = 3
    (tmp_path / "v3.json").write_text(json.dumps(doc))
    p = cli(["report", "diff", str(runs[0] / "ref" / "results.json"), str(tmp_path / "v3.json")])
    assert p.returncode == 2 and "schema_version 3 is not one of 1, 2" in p.stderr


def test_a_schema_1_file_still_reads_and_counts_as_finished(tmp_path, runs):
    """Baselines written before schema 2 keep working: no complete/incomplete/incidents/fault."""
    doc = copy.deepcopy(runs[1])
    doc["schema_version"] = 1
    for k in ("complete", "incomplete", "incidents"):
        del doc[k]
    for r in doc["records"]:
        del r["fault"]
    (tmp_path / "v1.json").write_text(json.dumps(doc))
    back = results.read(tmp_path / "v1.json")
    assert results.is_complete(back)
    p = cli(["report", "diff", str(tmp_path / "v1.json"), str(runs[0] / "bad" / "results.json"), TRUSTED])
    assert p.returncode == 1 and p.stdout.startswith("WORSE: ")


def test_a_known_failure_that_passed_in_the_baseline_is_a_regression(tmp_path, runs):
    """The list names the mean cases; the reference run (the baseline) passed them. With
    --baseline they are not excused: the run fails; without it they xfail, and report diff against
    the baseline still says WORSE, listing them as new failures and as new known failures."""
    d, ref, bad = runs
    kf = tmp_path / "known.yaml"
    kf.write_text('- cases: "MseLossBackward-*atlas-a2-mean-*"\n  reason: divides by N+1\n')
    base = str(d / "ref" / "results.json")
    common = [MSE, "-k", SLICE, "--backend", "tests.test_gate:BrokenMseBackend", "--known-failures=" + str(kf)]
    p = run_suite(common + ["--baseline=" + base, "--report-dir=" + str(tmp_path / "with")])
    assert p.returncode == 1, p.stdout[-3000:]
    doc = results.read(tmp_path / "with" / "results.json")
    broken = {r["key"] for r in bad["records"] if r["outcome"] == "failed"}
    assert {r["key"] for r in doc["records"] if r["outcome"] == "failed"} == broken
    assert not doc["counts"]["xfailed"] and "known failures not excused (they passed in --baseline)" in p.stdout
    p = run_suite(common + ["--report-dir=" + str(tmp_path / "without")])
    assert p.returncode == 0, p.stdout[-3000:]                         # the list hides them...
    new = str(tmp_path / "without" / "results.json")
    assert results.read(new)["counts"]["xfailed"] == len(broken)
    p = cli(["report", "diff", base, new, "--limit", "1000", TRUSTED])  # ...but not from the gate
    assert p.returncode == 1 and p.stdout.startswith(f"WORSE: {len(broken)} new failures"), p.stdout
    assert f"new known failures (xfailed now, not before) ({len(broken)})" in p.stdout
    assert p.stdout.count("passed before, now a known failure") == len(broken)
    # against a baseline that already failed them, the same list is fine: listed, not worse
    p = cli(["report", "diff", str(d / "bad" / "results.json"), new, TRUSTED])
    assert p.returncode == 0 and f"new known failures (xfailed now, not before) ({len(broken)})" in p.stdout


def test_baseline_that_is_not_a_results_file_is_one_line(tmp_path):
    f = tmp_path / "base.json"
    f.write_text("{")
    p = run_suite([MSE, "--collect-only", "-k", "nothing", "--baseline=" + str(f)])
    assert p.returncode == 4 and f"--baseline: {f}:1: not JSON" in p.stderr and "Traceback" not in p.stderr
