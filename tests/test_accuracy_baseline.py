"""The double benchmark (issue 45, item 2; docs/precision.md "The double benchmark"): the kit's
cross_check metrics and ratios (suite/judge/benchmark.py) at, inside and outside each level's
limits, the record's `accuracy` field (suite/report/accuracy.py), and `pytest --accuracy-baseline`
end to end (suite/plugin/accuracy.py, suite/run/double.py): a candidate twice as wrong as the
baseline fails L2 and one as good passes; a baseline that raises, crashes, hangs or fails its
standard is recorded as the baseline's error and never passes or fails a case."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Dict, List

import ml_dtypes
import numpy as np
import pytest

from suite.judge import benchmark as B
from suite.ops.base import Golden
from suite.report import accuracy as field, results
from tests.core_helpers import suite_folder

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]


def golden(g: np.ndarray) -> Golden:
    g = np.asarray(g, dtype=np.float64)
    return Golden(out=g, scale=np.abs(g), nterms=1, path=np.abs(g))


# -- the metrics, on arrays whose errors are exact ---------------------------------------------------
# In [1, 2) each dtype's ulp is fixed; one ulp (float32: 1024 ulps, 2^-13) is a relative error above
# the dtype's small value (the ratios' floor), so the ratios are the errors' own.
ULPS = {"float16": (np.float16, 2.0 ** -10), "bfloat16": (ml_dtypes.bfloat16, 2.0 ** -7),
        "float32": (np.float32, 2.0 ** -13)}


def sides(dtype: str, k: int, n: int = 4096, seed: int = 0):
    """(golden, baseline, candidate): goldens on the dtype's grid in [1, 2), the baseline one step
    off each, the candidate k steps (k a power of two: the candidate's errors are exactly k times
    the baseline's, and so are their maxima, means and root mean squares)."""
    dt, step = ULPS[dtype]
    rng = np.random.default_rng(seed)
    g = np.floor(rng.uniform(1, 1.5, n) / step) * step            # exact in the dtype
    sign = rng.choice([-1.0, 1.0], n)
    return golden(g), (g + sign * step).astype(dt), (g + sign * k * step).astype(dt)


@pytest.mark.parametrize("dtype", list(ULPS))
def test_a_candidate_twice_as_wrong_fails_L2_and_L1_and_is_at_L0s_limit(dtype: str) -> None:
    g, base, cand = sides(dtype, 2)
    m = B.measure(cand, base, g)
    j = {lv: B.judge(m, lv) for lv in B.LEVELS}
    assert j["L2"].ratios == {"mare": 2.0, "mere": 2.0, "rmse": 2.0, "small": 0.0}
    assert not j["L2"].passed and j["L2"].why == "mere x2 > 1.2, rmse x2 > 1.2"      # MARE x2 is at L2's 2
    assert not j["L1"].passed and j["L1"].why == "mere x2 > 1.5, rmse x2 > 1.5"
    assert j["L0"].passed and j["L0"].why == ""                                      # at L0's 2 and 2


@pytest.mark.parametrize("dtype", list(ULPS))
def test_a_candidate_as_good_as_the_baseline_passes_every_level(dtype: str) -> None:
    g, base, _ = sides(dtype, 1)
    m = B.measure(base.copy(), base, g)
    assert m.candidate == m.baseline and m.n_large == 4096 and m.n_small == 0
    assert all(B.judge(m, lv).passed for lv in B.LEVELS)
    assert B.judge(m, "L2").ratios == {"mare": 1.0, "mere": 1.0, "rmse": 1.0, "small": 0.0}


@pytest.mark.parametrize("dtype", list(ULPS))
def test_four_times_as_wrong_is_within_L0s_and_L1s_mare_only(dtype: str) -> None:
    g, base, cand = sides(dtype, 4)
    j = {lv: B.judge(B.measure(cand, base, g), lv) for lv in B.LEVELS}
    assert j["L0"].why == "mere x4 > 2, rmse x4 > 2"
    assert j["L1"].why == "mere x4 > 1.5, rmse x4 > 1.5"
    assert j["L2"].why == "mare x4 > 2, mere x4 > 1.2, rmse x4 > 1.2"


def test_the_metrics_are_the_kits_definitions() -> None:
    """MARE and MERE: max and mean of |x - g| / (|g| + 1e-7) where |g| >= the small value; RMSE
    the root mean square of |x - g| there."""
    g = np.array([1.0, -2.0, 0.5, 3.0])
    x = np.array([1.5, -2.0, 0.25, 3.0], dtype=np.float32)
    m = B.measure(x, x, golden(g))
    rel = np.abs(x - g) / (np.abs(g) + 1e-7)
    assert m.candidate.mare == rel.max() and m.candidate.mere == pytest.approx(rel.mean(), rel=1e-15)
    assert m.candidate.rmse == pytest.approx(math.sqrt((0.5 ** 2 + 0.25 ** 2) / 4), rel=1e-15)


def test_the_measure_is_block_by_block_and_the_same_in_any_blocks() -> None:
    g, base, cand = sides("float32", 2, n=1000, seed=3)
    whole, blocked = B.measure(cand, base, g), B.measure(cand, base, g, block=7)
    assert (whole.candidate.mare, whole.n_large) == (blocked.candidate.mare, blocked.n_large)
    assert blocked.candidate.mere == pytest.approx(whole.candidate.mere, rel=1e-13)
    assert blocked.baseline.rmse == pytest.approx(whole.baseline.rmse, rel=1e-13)


# -- the limits: at, inside and outside each level's ratio -------------------------------------------
@pytest.mark.parametrize("level", list(B.LEVELS))
@pytest.mark.parametrize("metric", list(B.METRICS) + ["small"])
def test_each_ratio_at_inside_and_outside_its_levels_limit(level: str, metric: str) -> None:
    limit = dict(zip(B.METRICS, B.LEVELS[level]), small=B.SMALL_RATIO)[metric]
    ones = {k: 1.0 for k in (*B.METRICS, "small")}
    assert B.within({**ones, metric: limit}, level) == (True, "")                        # at: passes, as in the kit
    assert B.within({**ones, metric: np.nextafter(limit, 0)}, level) == (True, "")       # inside
    ok, why = B.within({**ones, metric: np.nextafter(limit, math.inf)}, level)           # outside
    assert not ok and why == f"{metric} x{limit:.3g} > {limit:g}"


def test_the_levels_are_the_kits() -> None:
    assert B.LEVELS == {"L0": (10.0, 2.0, 2.0), "L1": (5.0, 1.5, 1.5), "L2": (2.0, 1.2, 1.2)}
    assert B.DEFAULT_LEVEL == "L1" and B.SMALL_RATIO == 2.0
    assert B.SMALL_VALUE == {"float16": (2 ** -11, 2 ** -16), "bfloat16": (2 ** -8, 2 ** -16),
                             "float32": (2 ** -14, 2 ** -30)}


def test_a_ratios_denominator_is_floored_at_the_small_value_and_the_kits_special_cases() -> None:
    floor = 2.0 ** -14
    assert B.ratio(2e-5, 1e-9, floor) == 2e-5 / floor          # the baseline below the noise floor
    assert B.ratio(4e-4, 2e-4, floor) == 2.0
    assert B.ratio(0.0, 0.0, floor) == 1.0 and B.ratio(math.inf, math.inf, floor) == 1.0
    assert B.ratio(math.inf, 1.0, floor) == math.inf and B.ratio(math.nan, 1.0, floor) == math.inf
    assert B.ratio(1.0, math.nan, floor) == math.inf and B.ratio(1.0, math.inf, floor) == 0.0


def test_a_baseline_below_the_floor_makes_the_benchmark_an_absolute_cap() -> None:
    """float32: a baseline of a few ulps is under 2^-14, so the candidate's MERE may reach the
    level's ratio times 2^-14 (L2: 1.2 * 2^-14) whatever the baseline's own error."""
    g = golden(np.ones(64))
    base = np.full(64, 1 + 2.0 ** -23, dtype=np.float32)
    for k, ok in ((2 ** 9, True), (2 ** 10, False)):          # candidate 2^-14 (x1 the floor), 2^-13 (x2)
        cand = np.full(64, 1 + k * 2.0 ** -23, dtype=np.float32)
        assert B.judge(B.measure(cand, base, g), "L2").passed is ok


@pytest.mark.parametrize("base_errors, cand_errors, ok", [
    (3, 6, True), (3, 7, False), (0, 2, True), (0, 3, False), (5, 0, True)])
def test_the_small_domain_counts_errors_at_most_twice_the_baselines(base_errors: int, cand_errors: int,
                                                                    ok: bool) -> None:
    g = np.full(16, 2.0 ** -20)                                 # below float32's small value 2^-14
    off = 2.0 ** -20 + 2.0 ** -28                               # off by 2^-28 > atol 2^-30
    base = np.where(np.arange(16) < base_errors, off, 2.0 ** -20).astype(np.float32)
    cand = np.where(np.arange(16) < cand_errors, off, 2.0 ** -20).astype(np.float32)
    m = B.measure(cand, base, golden(g))
    assert (m.n_large, m.n_small, m.candidate.small_errors, m.baseline.small_errors) == (0, 16, cand_errors, base_errors)
    j = B.judge(m, "L2")
    assert j.passed is ok and j.ratios["mare"] is None and j.ratios["small"] == cand_errors / max(base_errors, 1)


@pytest.mark.parametrize("cand, gold, base, ok", [
    (np.nan, 1.0, np.nan, True),          # as the baseline
    (np.nan, np.nan, 1.0, True),          # as the golden, which is NaN
    (np.inf, np.inf, 5.0, True),
    (np.inf, 1.0, 1.0, False),            # neither
    (-np.inf, np.inf, np.inf, False),
    (1.0, np.nan, 1.0, True),             # the candidate as the baseline
    (2.0, np.nan, 1.0, False),
])
def test_nan_and_infinity_match_the_baseline_or_a_special_golden(cand: float, gold: float, base: float,
                                                                 ok: bool) -> None:
    c, g, b = (np.array([v, 1.0], dtype=np.float32) for v in (cand, gold, base))
    m = B.measure(c, b, golden(g.astype(np.float64)))
    assert m.special_mismatches == (0 if ok else 1) and m.n_large == 1
    assert B.judge(m, "L0").passed is ok


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_a_dtype_outside_the_kits_three_has_no_double_benchmark(dtype) -> None:
    a = np.ones(3, dtype=dtype)
    assert "float16, bfloat16, float32 only" in B.unsupported(a.dtype)
    with pytest.raises(ValueError, match="only"):
        B.measure(a, a, golden(np.ones(3)))


# -- the record's field --------------------------------------------------------------------------
def _doc(acc: dict) -> dict:
    rec = {"key": "k", "case": "c", "kind": "numbers", "op": "o", "product": "p", "dtypes": {}, "out_dtype": "float32",
           "reduction": None, "shapes": {}, "out_shape": [], "layout": "contiguous", "values": "uniform",
           "expect": 0, "outcome": "passed", "reason": None, "status": 0, "reproduce": None, "metrics": None,
           "accuracy": acc}
    return {"schema_version": 2, "suite_version": "x", "backend": {}, "products": [], "standard_override": None,
            "manifest_hash": "", "machine": {}, "shard": None, "counts": results.count_outcomes([rec]),
            "accuracy_baseline": {"spec": "torch", "options": {}, "level": "L2"}, "records": [rec]}


def test_the_field_in_each_form_validates_and_a_broken_one_is_named() -> None:
    g, base, cand = sides("float32", 2, n=64)
    made = json.loads(json.dumps(results.make_record(
        {"accuracy": {"baseline": "torch", **B.judge(B.measure(cand, base, g), "L2").to_json()}}, "failed", "x")))
    acc = made["accuracy"]
    assert acc["passed"] is False and acc["ratios"]["mere"] == 2.0 and acc["limits"]["mere"] == 1.2
    for good in (acc, {"baseline": "torch", "error": "it crashed"},
                 {"baseline": "torch", "level": "L2", "skipped": "out is float64"},
                 {**acc, "ratios": {**acc["ratios"], "mare": "inf"}}):
        assert results.validate(_doc(good)) == [], good
    assert field.problems({**acc, "extra": 1}) == ["accuracy: unknown field 'extra'"]
    assert field.problems({k: v for k, v in acc.items() if k != "ratios"}) == ["accuracy: missing field 'ratios'"]
    assert field.problems({**acc, "candidate": {**acc["candidate"], "mere": "x"}}) == [
        "accuracy.candidate: field 'mere' is 'x', expected num"]
    assert field.problems({"baseline": "torch", "error": 3}) == ["accuracy: field 'error' is 3, expected str"]
    assert results.validate(_doc({"error": "no baseline named"})) == [
        "records[0].accuracy: field 'baseline' missing or not a str"]


# -- pytest --accuracy-baseline end to end --------------------------------------------------------
PLUGIN = ("-p", "suite.plugin", "-p", "no:cacheprovider", "-p", "no:benchmark")
A = "tests.accuracy_backends:"
MSE = """
op: MseLossBackward
matrices:
  - products: [atlas-a2]
    dtypes: [float32]
    reductions: [none]
    shapes: [[64x32, 64x32, 64x32], [2x3, 2x3, 2x3]]
"""
CASES = ["MseLossBackward-float32-atlas-a2-none-64x32.64x32.64x32-contiguous-uniform",
         "MseLossBackward-float32-atlas-a2-none-2x3.2x3.2x3-contiguous-uniform"]
# One standard that forgives 1% relative error, so that both sides pass it and the double benchmark decides.
LOOSE = """
default: loose
standards:
  loose:
    doc: a share below 1% of elements over 1% relative error
    rule: share
    threshold: {float16: 0.01, bfloat16: 0.01, float32: 0.01}
"""
REL = 2.0 ** -12                  # the baseline's relative error: above float32's floor 2^-14


@pytest.fixture
def suite_dir(pytester: pytest.Pytester, monkeypatch) -> pytest.Pytester:
    p = suite_folder(pytester, monkeypatch, ROOT, {"mse.yaml": MSE})
    (p.path / "cases" / "tolerances.yaml").write_text(LOOSE.lstrip())
    return p


def run(p: pytest.Pytester, cand_rel: float, *args: str) -> Dict[str, dict]:
    """The run's numbers records by case id, from its results.json (validated)."""
    r = p.runpytest(*PLUGIN, "--cases=cases", "--golden-dir=golden", "--tolerances=cases/tolerances.yaml",
                    "--report-dir=rep", "--backend", A + "Off", "--backend-opt", f"rel={cand_rel!r}", *args)
    doc = json.loads((p.path / "rep" / "results.json").read_text())
    assert results.validate(doc) == [], results.validate(doc)
    p.last, p.doc = r, doc
    return {rec["case"]: rec for rec in doc["records"] if rec["kind"] == "numbers"}


BASE = ["--accuracy-baseline", A + "Off", "--accuracy-baseline-opt", f"rel={REL!r}"]


def test_twice_as_wrong_fails_L2_with_both_sides_and_the_ratios_in_every_report(suite_dir) -> None:
    recs = run(suite_dir, 2 * REL, *BASE, "--accuracy-level", "L2")
    assert suite_dir.last.ret == pytest.ExitCode.TESTS_FAILED
    out = suite_dir.last.stdout.str()
    for case in CASES:
        r = recs[case]
        a = r["accuracy"]
        assert r["outcome"] == "failed" and r["status"] == 0 and r["metrics"]["standard"] == "loose"
        assert a["baseline"] == A + "Off" and a["level"] == "L2" and a["passed"] is False
        assert a["limits"] == {"mare": 2.0, "mere": 1.2, "rmse": 1.2, "small": 2.0}
        assert a["ratios"]["mere"] == pytest.approx(2.0, rel=1e-3) and a["ratios"]["rmse"] == pytest.approx(2.0, rel=1e-3)
        assert a["candidate"]["mere"] == pytest.approx(2 * REL, rel=1e-3)
        assert a["baseline_metrics"]["mere"] == pytest.approx(REL, rel=1e-3)
        assert r["reason"].startswith(f"{case}: fails the double benchmark at L2 against the accuracy baseline "
                                      f"{A}Off: mere x2 > 1.2, rmse x2 > 1.2 (MARE x2, MERE x2, RMSE x2, small x")
        assert f"--accuracy-baseline {A}Off --accuracy-baseline-opt rel={REL!r} --accuracy-level L2" in r["reproduce"]
        assert f"{case}: fails the double benchmark at L2" in out
    assert suite_dir.doc["accuracy_baseline"] == {"spec": A + "Off", "options": {"rel": repr(REL)}, "level": "L2"}
    assert "Double benchmark against the accuracy baseline tests.accuracy_backends:Off at L2 (2 cases: 2 FAIL)" in out
    summary = (suite_dir.path / "rep" / "summary.md").read_text()
    assert f"## Double benchmark against the accuracy baseline `{A}Off` at L2 (2 cases: 2 FAIL)" in summary
    assert re.search(rf"\| `{re.escape(CASES[0])}` \| FAIL \| 2 \| 2 \| 2 \| \S+ \| 0\.000488 \| 0\.000244 \| mere x2", summary)
    html = (suite_dir.path / "rep" / "report.html").read_text()
    assert f"<h2>Double benchmark against the accuracy baseline <code>{A}Off</code> at L2 (2 cases: 2 FAIL)</h2>" in html


def test_as_good_as_the_baseline_passes_L2(suite_dir) -> None:
    recs = run(suite_dir, REL, *BASE, "--accuracy-level", "L2")
    assert suite_dir.last.ret == pytest.ExitCode.OK, suite_dir.last.stdout.str()[-3000:]
    for case in CASES:
        a = recs[case]["accuracy"]
        assert recs[case]["outcome"] == "passed" and a["passed"] is True and "why" not in a
        assert a["ratios"]["mare"] == a["ratios"]["mere"] == a["ratios"]["rmse"] == 1.0 and a["ratios"]["small"] <= 1


def test_the_default_level_is_L1_and_a_candidate_inside_it_fails_L2(suite_dir) -> None:
    recs = run(suite_dir, 1.4 * REL, *BASE)
    assert suite_dir.last.ret == pytest.ExitCode.OK, suite_dir.last.stdout.str()[-3000:]
    assert {recs[c]["accuracy"]["level"] for c in CASES} == {"L1"}
    assert all(recs[c]["accuracy"]["passed"] and recs[c]["outcome"] == "passed" for c in CASES)
    assert suite_dir.doc["accuracy_baseline"]["level"] == "L1"
    recs = run(suite_dir, 1.4 * REL, *BASE, "--accuracy-level", "L2")
    assert [recs[c]["outcome"] for c in CASES] == ["failed", "failed"]


def test_a_candidate_that_fails_its_standard_fails_as_before_with_the_benchmark_beside(suite_dir) -> None:
    recs = run(suite_dir, 0.5, *BASE)
    for case in CASES:
        r = recs[case]
        assert r["outcome"] == "failed" and "fails standard 'loose'" in r["reason"] and r["worst"]
        assert r["accuracy"]["passed"] is False


@pytest.mark.parametrize("baseline, args, error", [
    ("Raises", [], "the baseline did not return a result: the backend crashed: RuntimeError: the baseline's own bug"),
    ("Segfault", [], "the baseline did not return a result: the accuracy baseline's process: "),
    ("Hangs", ["--case-timeout", "1"], "overran its deadline"),
    ("Off", ["--accuracy-baseline-opt", "rel=0.5"], "the baseline's result fails the case's standard: fails "
                                                    "standard 'loose': "),
])
def test_a_baseline_that_fails_is_its_own_error_and_never_fails_or_passes_a_case(suite_dir, baseline: str,
                                                                                 args: List[str], error: str) -> None:
    # a candidate 3x as wrong as an Off baseline would be: judged by its standard alone, it passes
    recs = run(suite_dir, 3 * REL, "--accuracy-baseline", A + baseline, "--accuracy-level", "L2", *args)
    assert suite_dir.last.ret == pytest.ExitCode.OK, suite_dir.last.stdout.str()[-3000:]
    for case in CASES:
        r = recs[case]
        assert r["outcome"] == "passed" and r["fault"] is None and r["status"] == 0
        assert set(r["accuracy"]) == {"baseline", "error"} and error in r["accuracy"]["error"], r["accuracy"]
    note = "the accuracy baseline failed on 2 cases (its error is in each record's accuracy.error): they were " \
           "judged by the standard alone, with no double benchmark"
    assert note in suite_dir.last.stdout.str()
    assert f"**Note**: {note}." in (suite_dir.path / "rep" / "summary.md").read_text()
    assert suite_dir.doc["incidents"] == []


def test_a_failing_baseline_never_makes_a_failing_candidate_pass(suite_dir) -> None:
    recs = run(suite_dir, 0.5, "--accuracy-baseline", A + "Raises")
    assert suite_dir.last.ret == pytest.ExitCode.TESTS_FAILED
    assert [recs[c]["outcome"] for c in CASES] == ["failed", "failed"]
    assert all("error" in recs[c]["accuracy"] for c in CASES)


def test_without_the_option_no_record_has_the_field(suite_dir) -> None:
    recs = run(suite_dir, 2 * REL)
    assert suite_dir.last.ret == pytest.ExitCode.OK
    assert not any("accuracy" in r for r in suite_dir.doc["records"]) and "accuracy_baseline" not in suite_dir.doc
    assert "Double benchmark" not in (suite_dir.path / "rep" / "summary.md").read_text() and recs


@pytest.mark.parametrize("args, line", [
    (["--accuracy-level", "L2"], "--accuracy-level and --accuracy-baseline-opt take effect only with "
                                 "--accuracy-baseline"),
    (["--accuracy-baseline-opt", "rel=1"], "take effect only with --accuracy-baseline"),
    (["--accuracy-baseline", "reference", "--accuracy-level", "L3"], "--accuracy-level L3: not one of L0, L1, L2"),
    (["--accuracy-baseline", "nosuch.module:Thing"], "--accuracy-baseline nosuch.module:Thing: "),
    (["--accuracy-baseline", "reference", "--accuracy-baseline-opt", "rel"], "--accuracy-baseline-opt"),
])
def test_bad_options_are_one_line(suite_dir, args: List[str], line: str) -> None:
    r = suite_dir.runpytest(*PLUGIN, "--cases=cases", "--golden-dir=golden", *args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert line in r.stderr.str() and "Traceback" not in r.stderr.str(), r.stderr.str()


KL = """
op: KlDiv
matrices:
  - products: [atlas-a2]
    dtypes: [float32, float16]
    reductions: [none, sum]
    logTarget: [false, true]
    shapes: [[2x3, 2x3], [17x33, 17x33]]
"""


def test_torch_as_the_accuracy_baseline_runs_every_case_with_both_sides(pytester: pytest.Pytester, monkeypatch) -> None:
    pytest.importorskip("torch")
    p = suite_folder(pytester, monkeypatch, ROOT, {"kl.yaml": KL})
    r = p.runpytest(*PLUGIN, "--cases=cases", "--golden-dir=golden", "--report-dir=rep", "--op", "KlDiv",
                    "--accuracy-baseline", "torch")
    doc = json.loads((p.path / "rep" / "results.json").read_text())
    assert results.validate(doc) == []
    nums = [x for x in doc["records"] if x["kind"] == "numbers"]
    assert len(nums) == 16 and all("accuracy" in x and x["accuracy"]["baseline"] == "torch" for x in nums)
    measured = [x["accuracy"] for x in nums if "ratios" in x["accuracy"]]
    assert measured and all(set(a["ratios"]) == {"mare", "mere", "rmse", "small"} for a in measured)
    assert all(x["outcome"] == "passed" for x in nums if x["accuracy"].get("passed") is not False), r.stdout.str()[-3000:]
    assert "## Double benchmark against the accuracy baseline `torch` at L1 (16 cases: " in \
        (p.path / "rep" / "summary.md").read_text()


def test_several_outputs_are_each_benchmarked_against_their_own_golden(tmp_path: Path) -> None:
    """aclnnNLLLoss under mean writes out and totalWeightOut: each is measured against its own
    golden; the record's top level is the first output's, `outputs` holds both, and a failure
    names each failing output (suite/run/double.py, Runner in pytest's process)."""
    from suite.cases.load import load_cases
    from suite.golden.source import is_stored
    from suite.golden.store import GoldenStore
    from suite.judge.table import load_table
    from suite.run.double import DoubleBenchmark
    from suite.run.host import make_host
    from suite.run.runner import CaseFailure, Runner
    case = next(c for c in load_cases([ROOT / "cases" / "nll_loss.yaml"])[0] if c.expect == 0 and c.outputs
                and c.attrs.get("reduction") == 1 and c.out_dtype == "float32" and is_stored(c))
    (tmp_path / "t.yaml").write_text(LOOSE.lstrip())

    def runner(cand_rel: float) -> Runner:
        host = lambda rel: make_host(A + "Off", {"rel": repr(rel)}, isolation="none", timeout=0,  # noqa: E731
                                     restarts=0, policy=None)
        cand = host(cand_rel)
        return Runner(cand, cand.info, GoldenStore(ROOT / "golden"), load_table(tmp_path / "t.yaml"),
                      accuracy=DoubleBenchmark(host(REL), "off", "L2"))
    a = runner(REL).check_numbers(case, "t")["accuracy"]
    assert a["passed"] is True and set(a["outputs"]) == {"out", "totalWeightOut"} and "why" not in a
    assert all(o["ratios"]["mere"] == 1.0 for o in a["outputs"].values())
    with pytest.raises(CaseFailure) as e:
        runner(2 * REL).check_numbers(case, "t")
    a = e.value.record["accuracy"]
    assert a["passed"] is False and a["outputs"]["totalWeightOut"]["ratios"]["mere"] == pytest.approx(2, rel=1e-3)
    # (a one-element output's MARE is its MERE: x2 up to rounding, at or just past L2's MARE limit 2)
    assert re.fullmatch(r"out: (mare x2 > 2, )?mere x2 > 1\.2, rmse x2 > 1\.2; "
                        r"totalWeightOut: (mare x2 > 2, )?mere x2 > 1\.2, rmse x2 > 1\.2", a["why"]), a["why"]
    assert a["candidate"] == a["outputs"]["out"]["candidate"]
    assert field.problems(json.loads(json.dumps(results.make_record({"accuracy": a}, "failed", "x")["accuracy"]))) == []
