"""`report diff` and `report merge` (suite/report/compare.py) at their boundaries, on small synthetic
results.json documents (a made-up operator; every document is checked against the schema first):
each test asserts the decision AND the text the user reads."""
from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

import suite
from suite.cli import main as cli
from suite.report import compare
from suite.report import results
from suite.report.results import ResultsError

RUN: Dict[str, Any] = {
    "backend": {"spec": "fake", "options": {}}, "products": ["atlas-a2"], "standard_override": None,
    "manifest_hash": "ab" * 32, "machine": {"platform": "p", "python": "3", "numpy": "2", "hostname": "h"},
    "shard": None}
OK = "OK: no new failures, no precision regressions"


def rec(key: str, outcome: str = "passed", max_ulp: Any = 0.25, kind: str = "numbers",
        reason: Optional[str] = None, reproduce: Optional[str] = None) -> Dict[str, Any]:
    """A schema record of the made-up operator; a failed one has its reproducer, an xfailed one
    its known-failure reason, unless given."""
    if outcome == "failed" and reproduce is None:
        reproduce = f"pytest '{key}'"
    if outcome == "xfailed" and reason is None:
        reason = "known failure: r"
    metrics = None if max_ulp is None else {
        "standard": "cann", "n": 6, "n_over": 0, "share_over": 0.0, "mismatches": 0, "n_gross": 0,
        "max_ulp": max_ulp, "mean_ulp": 0.1, "max_abs": 0.0, "max_rel": 0.0, "rmse": 0.0}
    return {"key": key, "case": key, "kind": kind, "op": "FakeOp", "product": "atlas-a2",
            "dtypes": {"x": "float16"}, "out_dtype": "float16", "reduction": 0, "attrs": {"reduction": 0},
            "shapes": {"x": [2, 3]}, "out_shape": [2, 3], "layout": "contiguous", "values": "uniform",
            "expect": 0, "outcome": outcome, "reason": reason, "status": 0, "reproduce": reproduce,
            "metrics": metrics, "fault": None}


def run(*records: Dict[str, Any], incomplete: Optional[str] = None, incidents=(), complete: Optional[bool] = None,
        **fields: Any) -> Dict[str, Any]:
    doc = results.make_document({**RUN, **fields}, records, incomplete, incidents)
    if complete is not None:
        doc["complete"] = complete
    assert results.validate(doc) == [], results.validate(doc)
    return doc


def shown(d: compare.Diff, limit: int = 10) -> str:
    return compare.render_diff(d, limit)


# -- diff: every pair of outcomes of one case ---------------------------------------------------
# (outcome in BASE, outcome in NEW; None: absent) -> (worse, the whole rendered text)
NEW_FAIL = "WORSE: 1 new failures\nnew failures by operator and kind (1):\n  1  FakeOp  numbers\nnew failures, FakeOp numbers (1):\n  k  ({})\n    reproduce: pytest 'k'"
VANISHED = "WORSE: 1 vanished cases\nvanished (1):\n  k"
FIXED = OK + "\nfixed (1):\n  k"
NEW_XFAIL = OK + "\nnew known failures (xfailed now, not before) (1):\n  k  ({} before): known failure: r"
HIDDEN = ("WORSE: 1 new failures\nnew failures by operator and kind (1):\n  1  FakeOp  numbers\nnew failures, FakeOp numbers (1):\n  k  ({0} before, now a known failure)\n    known failure: r\n"
          "new known failures (xfailed now, not before) (1):\n  k  ({0} before): known failure: r")
TRANSITIONS = {
    (None, "passed"): (False, OK + "\nappeared (1):\n  k"),
    (None, "failed"): (True, NEW_FAIL.format("new case") + "\nappeared (1):\n  k"),
    (None, "skipped"): (False, OK + "\nappeared (1):\n  k"),
    (None, "xfailed"): (False, OK + "\nnew known failures (xfailed now, not before) (1):\n  k  (new case): "
                               "known failure: r\nappeared (1):\n  k"),
    (None, "xpassed"): (False, OK + "\nappeared (1):\n  k"),
    ("passed", None): (True, VANISHED),
    ("failed", None): (True, VANISHED),
    ("skipped", None): (True, VANISHED),
    ("xfailed", None): (True, VANISHED),
    ("xpassed", None): (True, VANISHED),
    ("passed", "passed"): (False, OK),
    ("passed", "failed"): (True, NEW_FAIL.format("passed before")),
    ("passed", "skipped"): (True, VANISHED),
    ("passed", "xfailed"): (True, HIDDEN.format("passed")),
    ("passed", "xpassed"): (False, OK),
    ("failed", "passed"): (False, FIXED),
    ("failed", "failed"): (False, OK),
    ("failed", "skipped"): (True, VANISHED),            # a failure skipped now is hidden, not fixed
    ("failed", "xfailed"): (False, NEW_XFAIL.format("failed")),
    ("failed", "xpassed"): (False, FIXED),
    ("skipped", "passed"): (False, OK),
    ("skipped", "failed"): (True, NEW_FAIL.format("skipped before")),
    ("skipped", "skipped"): (False, OK),
    ("skipped", "xfailed"): (False, NEW_XFAIL.format("skipped")),
    ("skipped", "xpassed"): (False, OK),
    ("xfailed", "passed"): (False, FIXED),
    ("xfailed", "failed"): (True, NEW_FAIL.format("xfailed before")),
    ("xfailed", "skipped"): (True, VANISHED),
    ("xfailed", "xfailed"): (False, OK),
    ("xfailed", "xpassed"): (False, FIXED),
    ("xpassed", "passed"): (False, OK),
    ("xpassed", "failed"): (True, NEW_FAIL.format("xpassed before")),
    ("xpassed", "skipped"): (True, VANISHED),
    ("xpassed", "xfailed"): (True, HIDDEN.format("xpassed")),
    ("xpassed", "xpassed"): (False, OK),
}


def test_the_transition_table_is_complete() -> None:
    outcomes = (None, *results.OUTCOMES)
    assert set(TRANSITIONS) == {(b, n) for b in outcomes for n in outcomes if (b, n) != (None, None)}


@pytest.mark.parametrize("base,new", sorted(TRANSITIONS, key=str), ids=lambda x: str(x))
def test_each_pair_of_outcomes(base: Optional[str], new: Optional[str]) -> None:
    worse, text = TRANSITIONS[(base, new)]
    other = rec("other")                                   # a case passing in both, untouched
    b = run(other, *([rec("k", base)] if base else []))
    n = run(other, *([rec("k", new)] if new else []))
    d = compare.diff(b, n)
    assert (d.worse, shown(d)) == (worse, text)


def test_every_record_is_weighed_whatever_comes_before_it() -> None:
    """A new case first in NEW (keys sort), then a new failure, a fix and a regression."""
    base = run(rec("b"), rec("c", "failed"), rec("d", max_ulp=0.25))
    new = run(rec("a"), rec("b", "failed"), rec("c"), rec("d", max_ulp=4.0))
    d = compare.diff(base, new)
    assert ([r["key"] for r in d.appeared], [r["key"] for r, _ in d.new_failures], [n["key"] for _, n in d.fixed],
            [n["key"] for _, n in d.regressions]) == (["a"], ["b"], ["c"], ["d"])


def test_a_regression_needs_a_good_outcome_on_both_sides() -> None:
    """Metrics of a record that did not pass (a schema-valid document may carry them) never make a
    precision regression: skipped then passing, passing then skipped, failed then failed."""
    for b_out, n_out in (("skipped", "passed"), ("skipped", "xpassed"), ("failed", "failed"), ("xfailed", "xfailed")):
        d = compare.diff(run(rec("k", b_out, max_ulp=0.25)), run(rec("k", n_out, max_ulp=4.0)))
        assert d.regressions == [], (b_out, n_out)
    d = compare.diff(run(rec("k", max_ulp=0.25)), run(rec("k", "skipped", max_ulp=4.0)))
    assert d.regressions == [] and [r["key"] for r in d.vanished] == ["k"]


def test_a_case_skipped_in_both_or_newly_run_is_not_vanished() -> None:
    """A passing case skipped now (a smaller gate machine: --max-memory, MemAvailable; a backend that
    lost a capability) is no longer tested: vanished, worse unless allowed. Skipped in both, or
    skipped before and run now, is not."""
    d = compare.diff(run(rec("k", "skipped")), run(rec("k", "skipped")))
    assert d.vanished == [] and not d.worse
    d = compare.diff(run(rec("k", "skipped")), run(rec("k")))
    assert d.vanished == [] and not d.worse
    d = compare.diff(run(rec("k")), run(rec("k", "skipped")))
    assert d.worse and [r["key"] for r in d.vanished] == ["k"]
    assert not compare.diff(run(rec("k")), run(rec("k", "skipped")), allow_vanished=True).worse


# -- diff: precision regressions at both thresholds ---------------------------------------------
def up(x: float) -> float:
    return math.nextafter(x, math.inf)


def down(x: float) -> float:
    return math.nextafter(x, -math.inf)


# (base max_ulp, new max_ulp, ulp_growth, ulp_ratio, regression?)
REGRESSION = [
    # growth decides (ratio 5x, far past 2): grew by exactly 1 ulp, a hair more, a hair less
    (0.25, 1.25, None, None, False),
    (0.25, up(1.25), None, None, True),
    (0.25, down(1.25), None, None, False),
    # ratio decides (grew by 4 ulps, far past 1): to exactly 2x, a hair more, a hair less
    (4.0, 8.0, None, None, False),
    (4.0, up(8.0), None, None, True),
    (4.0, down(8.0), None, None, False),
    # both at once, at the edge
    (1.0, 2.0, None, None, False),
    (1.5, up(2.5), None, None, False),                  # growth just past 1, but only 1.67x
    (0.75, 1.5, None, None, False),                     # 2x, but only 0.75 ulp more
    # from zero: any ratio holds, growth decides
    (0.0, 1.0, None, None, False),
    (0.0, up(1.0), None, None, True),
    (0.0, 0.0, None, None, False),
    # it got better
    (8.0, 0.5, None, None, False),
    # the thresholds given: growth 2.5, ratio 3
    (0.5, 3.0, 2.5, None, False),
    (0.5, up(3.0), 2.5, None, True),
    (2.0, 6.0, None, 3.0, False),
    (2.0, up(6.0), None, 3.0, True),
    (2.0, 6.0, None, down(3.0), True),
    # zero thresholds: any growth at all
    (0.25, up(0.25), 0.0, 0.0, True),
    (0.25, 0.25, 0.0, 0.0, False),
    # non-finite metrics (strings in the file): inf after finite is a regression; inf in both, or
    # NaN anywhere, compares as no growth
    (0.5, "inf", None, None, True),
    ("inf", "inf", None, None, False),
    ("nan", 9.0, None, None, False),
    (0.5, "nan", None, None, False),
]


@pytest.mark.parametrize("bu,nu,growth,ratio,want", REGRESSION, ids=[f"{r[0]}->{r[1]}" for r in REGRESSION])
def test_precision_regression_at_both_thresholds(bu, nu, growth, ratio, want) -> None:
    kw = {k: v for k, v in (("ulp_growth", growth), ("ulp_ratio", ratio)) if v is not None}
    d = compare.diff(run(rec("k", max_ulp=bu)), run(rec("k", max_ulp=nu)), **kw)
    assert d.worse is want, (bu, nu, growth, ratio)
    if want:
        assert shown(d) == (f"WORSE: 1 precision regressions\nprecision regressions (1):\n"
                            f"  k  {float(bu):.3g} -> {float(nu):.3g} ulp")
        assert [(b["key"], n["key"]) for b, n in d.regressions] == [("k", "k")]
    else:
        assert shown(d) == OK and d.regressions == []


def test_the_default_thresholds() -> None:
    assert (compare.ULP_GROWTH, compare.ULP_RATIO) == (1.0, 2.0)
    assert not hasattr(results, "ULP_GROWTH") and not hasattr(results, "ULP_RATIO")   # compare's alone, no shim


@pytest.mark.parametrize("base,new", [("passed", "xpassed"), ("xpassed", "passed"), ("xpassed", "xpassed")])
def test_a_regression_counts_between_any_good_outcomes(base: str, new: str) -> None:
    d = compare.diff(run(rec("k", base, max_ulp=0.5)), run(rec("k", new, max_ulp=2.0)))
    assert d.worse and shown(d).endswith("  k  0.5 -> 2 ulp")


@pytest.mark.parametrize("bu,nu", [(None, 9.0), (0.5, None), (None, None)])
def test_no_metrics_on_either_side_is_no_regression(bu, nu) -> None:
    d = compare.diff(run(rec("k", max_ulp=bu, kind="rejection" if bu is None else "numbers")),
                     run(rec("k", max_ulp=nu)))
    assert not d.worse and shown(d) == OK


def test_metrics_without_max_ulp_is_no_regression() -> None:
    b, n = rec("k", max_ulp=0.5), rec("k", max_ulp=9.0)
    del b["metrics"]["max_ulp"]
    assert not compare.diff(run(b), run(n)).worse
    assert compare.worst_ulp(b) is None and compare.worst_ulp(n) == 9.0


def test_a_failing_case_is_never_a_regression_too() -> None:
    """Failed in NEW with a larger error: a new failure, once, not also a regression."""
    d = compare.diff(run(rec("k", max_ulp=0.5)), run(rec("k", "failed", max_ulp=900.0)))
    assert d.regressions == [] and len(d.new_failures) == 1
    d = compare.diff(run(rec("k", "failed", max_ulp=0.5)), run(rec("k", "failed", max_ulp=900.0)))
    assert not d.worse and shown(d) == OK


# -- diff: incidents, incomplete runs, notes, the head and the lists ------------------------------
def test_incidents_of_new_make_it_worse_and_base_incidents_do_not() -> None:
    a = rec("a")
    d = compare.diff(run(a), run(a, incidents=["gw0: the backend's process exited with code 3 in close()",
                                               "gw1: signal 11"]))
    assert d.worse and shown(d) == (
        "WORSE: 2 incidents\nincidents (outside any case) (2):\n"
        "  gw0: the backend's process exited with code 3 in close()\n  gw1: signal 11")
    d = compare.diff(run(a, incidents=["gw0: old trouble"]), run(a))
    assert not d.worse and shown(d) == OK


def test_an_unfinished_run_is_noted_and_its_missing_cases_vanish() -> None:
    a, b = rec("a"), rec("b")
    d = compare.diff(run(a, b), run(a, incomplete="killed: SIGKILL"))
    assert d.worse and shown(d) == (
        "WORSE: 1 vanished cases\nnote: NEW did not finish (killed: SIGKILL): its missing cases count as vanished\n"
        "vanished (1):\n  b")
    d = compare.diff(run(a, incomplete="interrupted"), run(a, b))
    assert not d.worse and shown(d) == (
        OK + "\nnote: BASE did not finish (interrupted): its missing cases count as vanished\nappeared (1):\n  b")
    # an unfinished run that cannot say why
    d = compare.diff(run(a, complete=False), run(a, complete=False))
    assert shown(d) == (OK + "\nnote: BASE did not finish (incomplete): its missing cases count as vanished"
                        "\nnote: NEW did not finish (incomplete): its missing cases count as vanished")


@pytest.mark.parametrize("field,value,note", [
    ("suite_version", "9.9", "note: suite_version differs: '{old}' -> '9.9'"),
    ("backend", {"spec": "other", "options": {}}, "note: backend differs: spec fake -> other"),
    # options as --backend-opt takes them, not as a Python dict (issue 23)
    ("backend", {"spec": "fake", "options": {"factor": "2", "mode": "fast"}},
     "note: backend differs: options none -> factor=2 mode=fast"),
    ("standard_override", "strict", "note: standard_override differs: None -> 'strict'"),
])
def test_runs_of_another_configuration_are_compared_with_a_note(field: str, value: Any, note: str) -> None:
    a = rec("a")
    base, new = run(a), run(a)
    new[field] = value
    d = compare.diff(base, new)
    assert not d.worse and shown(d) == OK + "\n" + note.replace("{old}", base["suite_version"])


@pytest.mark.parametrize("field", ["manifest_hash", "tolerances_hash"])
def test_other_goldens_or_tolerances_make_new_worse_unless_accepted(field: str) -> None:
    """A backend may rewrite golden/ or the tolerance table on disk: a run judged by them is no
    comparison with BASE's, however well it did, unless the change is accepted by name."""
    a = rec("a")
    base, new = run(a, tolerances_hash="12" * 32), run(a, tolerances_hash="12" * 32)
    old = base[field]
    new[field] = "cd" * 32
    change = f"{field} differs: '{old}' -> '{'cd' * 32}'"
    d = compare.diff(base, new)
    assert d.worse and shown(d) == (
        "WORSE: judged by other goldens or tolerances than BASE (--accept-golden-change accepts the change)\n"
        f"differs: {change}")
    d = compare.diff(base, new, accept_golden_change=True)
    assert not d.worse and shown(d) == (
        OK + " (other goldens or tolerances accepted by --accept-golden-change)\n" + f"accepted: {change}")
    d = compare.diff(run(rec("a", "failed")), run(rec("a", "failed"), manifest_hash="cd" * 32))
    assert shown(d).splitlines()[0] == ("WORSE: judged by other goldens or tolerances than BASE "
                                        "(--accept-golden-change accepts the change)")


def test_a_base_without_tolerances_hash_is_not_compared_on_it() -> None:
    a = rec("a")
    d = compare.diff(run(a), run(a, tolerances_hash="12" * 32))
    assert not d.worse and shown(d) == OK + "\nnote: BASE has no tolerances_hash (an older suite's): not compared"
    d = compare.diff(run(a, tolerances_hash="12" * 32), run(a))            # NEW lost it
    assert d.worse and "differs: tolerances_hash differs: '" + "12" * 32 + "' -> None" in shown(d)


def test_report_diff_exits_1_when_the_goldens_differ_and_0_when_accepted(tmp_path: Path, capsys) -> None:
    a = rec("a")
    results.write(tmp_path / "base.json", run(a))
    results.write(tmp_path / "new.json", run(a, manifest_hash="cd" * 32))
    args = ["report", "diff", str(tmp_path / "base.json"), str(tmp_path / "new.json")]
    assert cli.main(args) == 1
    assert "differs: manifest_hash differs" in capsys.readouterr().out
    assert cli.main(args + ["--accept-golden-change"]) == 0
    assert "accepted: manifest_hash differs" in capsys.readouterr().out
    assert cli.main(["report", "diff", str(tmp_path / "base.json"), str(tmp_path / "base.json")]) == 0


def test_tolerances_hash_is_validated() -> None:
    doc = run(rec("a"), tolerances_hash="")
    doc["tolerances_hash"] = "xyz"
    assert results.validate(doc) == ["run: tolerances_hash 'xyz' is not a sha256 (64 lowercase hex digits) or \"\""]
    doc["tolerances_hash"] = 5
    assert len(results.validate(doc)) == 1


def test_machine_and_products_are_not_compared() -> None:
    a = rec("a")
    new = run(a, products=["atlas-a2", "atlas-a3"])
    new["machine"] = dict(new["machine"], hostname="elsewhere")
    assert shown(compare.diff(run(a), new)) == OK


def test_the_head_names_every_reason_in_order_and_vanished_can_be_allowed() -> None:
    base = run(rec("f"), rec("r", max_ulp=0.25), rec("v"))
    new = run(rec("f", "failed"), rec("r", max_ulp=4.0), incidents=["gw0: x"])
    d = compare.diff(base, new)
    assert shown(d).splitlines()[0] == "WORSE: 1 new failures, 1 precision regressions, 1 vanished cases, 1 incidents"
    d = compare.diff(base, new, allow_vanished=True)
    assert d.worse and shown(d).splitlines()[0] == "WORSE: 1 new failures, 1 precision regressions, 1 incidents"
    assert "vanished (1):\n  v" in shown(d)                     # still listed
    d = compare.diff(run(rec("a"), rec("b")), run(rec("a")), allow_vanished=True)
    assert not d.worse and shown(d) == OK + " (1 vanished cases allowed)\nvanished (1):\n  b"


def test_the_sections_come_in_order() -> None:
    base = run(rec("f"), rec("g", "failed"), rec("r", max_ulp=0.25), rec("v"), rec("x"))
    new = run(rec("f", "failed"), rec("g"), rec("r", max_ulp=4.0), rec("x", "xfailed"), rec("z"),
              incidents=["gw0: x"], suite_version="new")
    titles = [ln for ln in shown(compare.diff(base, new)).splitlines() if not ln.startswith(" ")]
    assert titles == [
        "WORSE: 2 new failures, 1 precision regressions, 1 vanished cases, 1 incidents",
        f"note: suite_version differs: '{base['suite_version']}' -> 'new'",
        "new failures and incidents by operator and kind (3):", "incidents (outside any case) (1):",
        "new failures, FakeOp numbers (2):", "precision regressions (1):", "vanished (1):",
        "new known failures (xfailed now, not before) (1):", "fixed (1):", "appeared (1):"]


@pytest.mark.parametrize("n,limit,tail", [
    (12, 10, ["  ... and 2 more"]),
    (11, 10, ["  ... and 1 more"]),
    (10, 10, []),
    (3, 1, ["  ... and 2 more"]),
    (3, 0, ["  ... and 3 more"]),
])
def test_each_list_is_cut_at_the_limit_with_a_count(n: int, limit: int, tail: list) -> None:
    keys = [f"k{i:02d}" for i in range(n)]
    d = compare.diff(run(*(rec(k) for k in keys)), run())
    assert shown(d, limit).splitlines() == [f"WORSE: {n} vanished cases", f"vanished ({n}):",
                                            *(f"  {k}" for k in keys[:limit]), *tail]


def test_the_default_limit_is_10() -> None:
    d = compare.diff(run(*(rec(f"k{i:02d}") for i in range(11))), run())
    assert compare.render_diff(d).splitlines()[-2:] == ["  k09", "  ... and 1 more"]


def test_a_known_failure_without_a_reason_is_listed_without_one() -> None:
    d = compare.diff(run(rec("k")), run(rec("k", "xfailed", reason="")))
    assert shown(d).splitlines()[-1] == "  k  (passed before)"


def test_a_new_failure_without_a_reproducer_is_one_line() -> None:
    d = compare.diff(run(rec("k")), run(rec("k", "failed", reproduce="")))
    assert shown(d) == "WORSE: 1 new failures\nnew failures by operator and kind (1):\n  1  FakeOp  numbers\nnew failures, FakeOp numbers (1):\n  k  (passed before)"


# -- report diff, the command -------------------------------------------------------------------
def _files(tmp_path: Path, **docs: Dict[str, Any]) -> Dict[str, str]:
    out = {}
    for name, doc in docs.items():
        results.write(tmp_path / f"{name}.json", doc)
        out[name] = str(tmp_path / f"{name}.json")
    return out


def _main(args, capsys) -> tuple:
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_report_diff_exit_codes_and_output(tmp_path: Path, capsys) -> None:
    f = _files(tmp_path, base=run(rec("k", max_ulp=0.25)), same=run(rec("k", max_ulp=0.25)),
               worse=run(rec("k", max_ulp=1.5)), failing=run(rec("k", "failed")))
    assert _main(["report", "diff", f["base"], f["same"]], capsys) == (0, OK + "\n", "")
    assert _main(["report", "diff", f["base"], f["worse"]], capsys) == (
        1, "WORSE: 1 precision regressions\nprecision regressions (1):\n  k  0.25 -> 1.5 ulp\n", "")
    # the thresholds reach the rule: 1.25 ulps of growth is within --ulp-growth 1.25, past 1.2
    assert _main(["report", "diff", f["base"], f["worse"], "--ulp-growth", "1.25"], capsys)[0] == 0
    assert _main(["report", "diff", f["base"], f["worse"], "--ulp-growth", "1.2"], capsys)[0] == 1
    assert _main(["report", "diff", f["base"], f["worse"], "--ulp-ratio", "6"], capsys)[0] == 0
    assert _main(["report", "diff", f["base"], f["worse"], "--ulp-ratio", "5.9"], capsys)[0] == 1
    code, out, _ = _main(["report", "diff", f["base"], f["failing"], "--limit", "0"], capsys)
    assert (code, out) == (1, "WORSE: 1 new failures\nnew failures by operator and kind (1):\n  1  FakeOp  numbers\nnew failures, FakeOp numbers (1):\n  ... and 1 more\n")


def test_report_diff_allow_vanished(tmp_path: Path, capsys) -> None:
    f = _files(tmp_path, base=run(rec("a"), rec("b")), new=run(rec("a")))
    assert _main(["report", "diff", f["base"], f["new"]], capsys) == (1, VANISHED.replace("k", "b") + "\n", "")
    assert _main(["report", "diff", f["base"], f["new"], "--allow-vanished"], capsys) == (
        0, OK + " (1 vanished cases allowed)\nvanished (1):\n  b\n", "")


@pytest.mark.parametrize("which", ["base", "new"])
def test_report_diff_refuses_an_unfinished_run_unless_allowed(tmp_path: Path, capsys, which: str) -> None:
    docs = {"base": run(rec("a")), "new": run(rec("a"))}
    docs[which] = run(rec("a"), incomplete="stopped early: -x")
    f = _files(tmp_path, **docs)
    assert _main(["report", "diff", f["base"], f["new"]], capsys) == (
        2, "", f"error: {f[which]}: the run did not finish (stopped early: -x); --allow-incomplete uses it anyway\n")
    code, out, _ = _main(["report", "diff", f["base"], f["new"], "--allow-incomplete"], capsys)
    assert code == 0 and out == (f"{OK}\nnote: {which.upper()} did not finish (stopped early: -x): "
                                 f"its missing cases count as vanished\n")


@pytest.mark.parametrize("option,value,says", [
    ("--ulp-growth", "nan", "argument --ulp-growth: 'nan': give a finite number >= 0"),
    ("--ulp-growth", "-1", "argument --ulp-growth: '-1': give a finite number >= 0"),
    ("--ulp-growth", "-0.0001", "argument --ulp-growth: '-0.0001': give a finite number >= 0"),
    ("--ulp-ratio", "inf", "argument --ulp-ratio: 'inf': give a finite number >= 0"),
    ("--ulp-ratio", "two", "argument --ulp-ratio: 'two' is not a number"),
    ("--limit", "-1", "argument --limit: '-1': give a whole number >= 0"),
    ("--limit", "1.5", "argument --limit: '1.5' is not a whole number"),
])
def test_report_diff_refuses_thresholds_that_are_no_thresholds(tmp_path: Path, capsys, option, value, says) -> None:
    f = _files(tmp_path, base=run(rec("a")))
    with pytest.raises(SystemExit) as e:
        cli.main(["report", "diff", f["base"], f["base"], option, value])
    assert e.value.code == 2 and f"aclnn-conform report diff: error: {says}\n" in capsys.readouterr().err


@pytest.mark.parametrize("option,value", [("--ulp-growth", "0"), ("--ulp-ratio", "0"), ("--limit", "0")])
def test_zero_is_a_threshold(tmp_path: Path, capsys, option: str, value: str) -> None:
    f = _files(tmp_path, base=run(rec("a")))
    assert _main(["report", "diff", f["base"], f["base"], option, value], capsys) == (0, OK + "\n", "")


# -- merge --------------------------------------------------------------------------------------
def shards(n: int, *ks: int, **fields: Any) -> list:
    """(name, doc) for shards ks of n, shard k holding the case 'c{k}'."""
    return [(f"s{k}.json", run(rec(f"c{k}"), shard=f"{k}/{n}", **fields)) for k in ks]


def test_merge_of_a_complete_set() -> None:
    docs = shards(3, 2, 3, 1)
    docs[1][1]["incidents"] = ["gw0: exit 3 in close()"]
    docs[0][1]["products"] = ["atlas-a3"]
    docs[2][1]["machine"] = dict(RUN["machine"], hostname="other")
    m = compare.merge(docs)
    assert results.validate(m) == []
    assert [r["key"] for r in m["records"]] == ["c1", "c2", "c3"]
    assert m["shard"] is None and m["merged_from"] == ["2/3", "3/3", "1/3"]
    assert m["products"] == ["atlas-a2", "atlas-a3"] and m["machine"] == RUN["machine"]   # the first named
    assert m["counts"] == {"passed": 3, "failed": 0, "skipped": 0, "xfailed": 0, "xpassed": 0}
    assert list(m) == ["schema_version", "suite_version", "backend", "products", "standard_override",
                       "manifest_hash", "machine", "shard", "merged_from", "counts", "complete", "incomplete",
                       "incidents", "records"]
    assert m["complete"] is True and m["incomplete"] is None
    assert m["incidents"] == ["s3.json: gw0: exit 3 in close()"]
    for f in ("backend", "standard_override", "manifest_hash"):
        assert m[f] == RUN[f]
    assert compare.shard_set([("m", m)]) == []


def test_a_merged_file_is_a_document_of_this_suite() -> None:
    """Fields in the schema's order; the schema version and suite version of the suite that merged
    (shards of version 1, or of another suite version, merge into a version-2 file of this one)."""
    docs = shards(2, 1, 2, suite_version="0.0.1")
    for _, d in docs:
        d["schema_version"] = 1
        for k in ("complete", "incomplete", "incidents"):
            del d[k]
        for r in d["records"]:
            del r["fault"]
        assert results.validate(d) == []
    m = compare.merge(docs)
    assert list(m) == ["schema_version", "suite_version", "backend", "products", "standard_override",
                       "manifest_hash", "machine", "shard", "merged_from", "counts", "complete", "incomplete",
                       "incidents", "records"]
    assert (m["schema_version"], m["suite_version"]) == (results.SCHEMA_VERSION, suite.__version__)
    assert (m["complete"], m["incomplete"], m["incidents"]) == (True, None, [])


def test_merge_of_one_unsharded_run_and_of_one_shard_of_one() -> None:
    doc = run(rec("a"))
    m = compare.merge([("only.json", doc)])
    assert m["merged_from"] == ["only.json"] and m["records"] == doc["records"]
    assert compare.shard_set([("only.json", doc)]) == []
    assert compare.shard_set(shards(1, 1)) == []


# (shards given as K of N, or None for an unsharded run) -> the problems, in order
SETS = [
    ([(1, 3), (3, 3)], ["missing shard 2/3"]),
    ([(3, 3)], ["missing shards 1/3, 2/3"]),
    ([(1, 3), (2, 3), (2, 3), (3, 3)], ["shard given twice: 2/3"]),
    ([(1, 2), (1, 2), (2, 2), (2, 2)], ["shards given twice: 1/2, 2/2"]),
    ([(1, 3), (2, 3), (1, 2)], ["shards of different schemes: 1/2; 1/3, 2/3", "missing shard 2/2",
                                "missing shard 3/3"]),
    ([(1, 2), None], ["s1.json: not a shard (shard None); merge the shards of one --shard K/N run",
                      "missing shard 2/2"]),
    ([None, None], ["s0.json: not a shard (shard None); merge the shards of one --shard K/N run",
                    "s1.json: not a shard (shard None); merge the shards of one --shard K/N run"]),
    ([(1, 12)], ["missing shards 2/12, 3/12, 4/12, 5/12, 6/12, 7/12, 8/12, 9/12, 10/12, 11/12 and 1 more"]),
    ([(1, 11)], ["missing shards 2/11, 3/11, 4/11, 5/11, 6/11, 7/11, 8/11, 9/11, 10/11, 11/11"]),
    ([(2, 100000)], ["missing shards 1/100000, 3/100000, 4/100000, 5/100000, 6/100000, 7/100000, 8/100000, "
                     "9/100000, 10/100000, 11/100000 and 99989 more"]),
]


def _docs(spec: list) -> list:
    out = []
    for i, kn in enumerate(spec):
        doc = run(rec(f"c{i}"))
        doc["shard"] = None if kn is None else f"{kn[0]}/{kn[1]}"
        out.append((f"s{i}.json", doc))
    return out


@pytest.mark.parametrize("spec,problems", SETS, ids=[str(s) for s, _ in SETS])
def test_merge_refuses_an_incomplete_set_unless_partial(spec: list, problems: list) -> None:
    docs = _docs(spec)
    assert compare.shard_set(docs) == problems
    with pytest.raises(ResultsError) as e:
        compare.merge(docs)
    assert str(e.value) == "; ".join(problems) + " (--allow-partial merges them anyway)"
    m = compare.merge(docs, allow_partial=True)
    assert len(m["records"]) == len(spec) and results.validate(m) == []


@pytest.mark.parametrize("spec", ["0/3", "4/3", " 1/3", "1/3/5", "", 7])
def test_a_shard_field_that_is_not_k_of_n_is_not_a_shard(spec) -> None:
    docs = shards(2, 1, 2)
    docs[1][1]["shard"] = spec
    assert compare.shard_set(docs) == [f"s2.json: not a shard (shard {spec!r}); merge the shards of one "
                                       f"--shard K/N run", "missing shard 2/2"]


@pytest.mark.parametrize("field,value", [
    ("schema_version", 1),
    ("suite_version", "9.9"),
    ("manifest_hash", "cd" * 32),
    ("backend", {"spec": "other", "options": {}}),
    ("standard_override", "strict"),
])
def test_merge_refuses_shards_of_different_runs(field: str, value: Any) -> None:
    docs = shards(3, 1, 2, 3)
    first = docs[0][1][field]
    docs[2][1][field] = value
    with pytest.raises(ResultsError) as e:
        compare.merge(docs, allow_partial=True, allow_incomplete=True)
    assert str(e.value) == (f"s3.json: {field} {value!r} differs from s1.json's {first!r}; "
                            f"shards of one run share it")


def test_merge_refuses_conflicting_records_and_takes_identical_ones_once() -> None:
    docs = shards(2, 1, 2)
    docs[1][1]["records"].append(rec("c1", "failed"))
    docs[1][1]["counts"] = results.count_outcomes(docs[1][1]["records"])
    with pytest.raises(ResultsError) as e:
        compare.merge(docs)
    assert str(e.value) == "s2.json: conflicting records for c1 (also in s1.json): passed vs failed"
    docs[1][1]["records"][-1] = rec("c1")
    m = compare.merge(docs)
    assert [r["key"] for r in m["records"]] == ["c1", "c2"]


def test_merge_refuses_an_unfinished_shard_unless_allowed() -> None:
    docs = shards(3, 1, 2, 3)
    docs[1] = ("s2.json", run(rec("c2"), shard="2/3", incomplete="killed: out of memory"))
    docs[2] = ("s3.json", run(rec("c3"), shard="3/3", complete=False))
    with pytest.raises(ResultsError) as e:
        compare.merge(docs)
    assert str(e.value) == ("s2.json: the run did not finish (killed: out of memory); "
                            "--allow-incomplete uses it anyway")
    m = compare.merge(docs, allow_incomplete=True)
    assert m["complete"] is False and results.validate(m) == []
    assert m["incomplete"] == "s2.json: killed: out of memory; s3.json: incomplete"


def test_merge_of_nothing() -> None:
    with pytest.raises(ResultsError) as e:
        compare.merge([])
    assert str(e.value) == "nothing to merge"


def test_refuse_incomplete_names_the_flag() -> None:
    compare.refuse_incomplete([("a", run(rec("a")))], "--flag")           # finished: nothing said
    with pytest.raises(ResultsError) as e:
        compare.refuse_incomplete([("a", run(rec("a"))), ("b", run(rec("a"), complete=False))], "--flag")
    assert str(e.value) == "b: the run did not finish (incomplete); --flag uses it anyway"


# -- report merge, the command ------------------------------------------------------------------
def test_report_merge_writes_and_says_what_it_did(tmp_path: Path, capsys) -> None:
    docs = shards(3, 1, 2, 3)
    docs[1][1]["records"][0] = rec("c2", "failed")
    docs[1][1]["counts"] = results.count_outcomes(docs[1][1]["records"])
    f = _files(tmp_path, **{name[:-5]: d for name, d in docs})
    out = tmp_path / "merged.json"
    code, text, err = _main(["report", "merge", f["s1"], f["s2"], f["s3"], "-o", str(out)], capsys)
    assert (code, err) == (0, "")
    assert text == f"merged 3 files into {out}: 3 records (2 passed, 1 failed)\n"
    merged = results.read(out)
    assert merged["merged_from"] == ["1/3", "2/3", "3/3"] and merged["counts"]["failed"] == 1


def test_report_merge_refuses_and_allows_a_partial_set(tmp_path: Path, capsys) -> None:
    f = _files(tmp_path, **{name[:-5]: d for name, d in shards(4, 1, 3)})
    out = tmp_path / "merged.json"
    assert _main(["report", "merge", f["s1"], f["s3"], "-o", str(out)], capsys) == (
        2, "", "error: missing shards 2/4, 4/4 (--allow-partial merges them anyway)\n")
    assert not out.exists()
    assert _main(["report", "merge", f["s1"], f["s3"], "-o", str(out), "--allow-partial"], capsys) == (
        0, f"merged 2 files into {out}: 2 records (2 passed)\npartial: missing shards 2/4, 4/4\n", "")
    # every kind of problem reaches the user the same way, each a line of its own when allowed
    for spec in ([(1, 3), (3, 3)], [(1, 3), (2, 3), (2, 3), (3, 3)], [(1, 3), (2, 3), (1, 2)], [(1, 2), None]):
        where = tmp_path / str(spec).translate({ord(c): None for c in "[]() ,"})
        where.mkdir()
        paths = {name: _files(where, **{name[:-5]: d})[name[:-5]] for name, d in _docs(spec)}
        said = next(problems for s, problems in SETS if s == spec)     # a file is named by its path now
        problems = [paths[p.split(":")[0]] + p[len(p.split(":")[0]):] if p.split(":")[0] in paths else p
                    for p in said]
        out = where / "merged.json"
        assert _main(["report", "merge", *paths.values(), "-o", str(out)], capsys) == (
            2, "", f"error: {'; '.join(problems)} (--allow-partial merges them anyway)\n"), spec
        assert not out.exists()
        n = len(spec)
        assert _main(["report", "merge", *paths.values(), "-o", str(out), "--allow-partial"], capsys) == (
            0, f"merged {n} files into {out}: {n} records ({n} passed)\n" + "".join(f"partial: {p}\n" for p in problems),
            ""), spec


def test_report_merge_refuses_and_allows_an_unfinished_shard(tmp_path: Path, capsys) -> None:
    docs = dict(shards(2, 1, 2))
    docs["s2.json"] = run(shard="2/2", incomplete="interrupted by SIGTERM")
    f = _files(tmp_path, s1=docs["s1.json"], s2=docs["s2.json"])
    out = tmp_path / "merged.json"
    assert _main(["report", "merge", f["s1"], f["s2"], "-o", str(out)], capsys) == (
        2, "", f"error: {f['s2']}: the run did not finish (interrupted by SIGTERM); --allow-incomplete uses it anyway\n")
    assert _main(["report", "merge", f["s1"], f["s2"], "-o", str(out), "--allow-incomplete"], capsys) == (
        0, f"merged 2 files into {out}: 1 records (1 passed)\nincomplete: {f['s2']}: interrupted by SIGTERM\n", "")
    assert results.read(out)["complete"] is False


def test_report_merge_refuses_different_runs(tmp_path: Path, capsys) -> None:
    docs = shards(2, 1, 2)
    docs[1][1]["manifest_hash"] = "cd" * 32
    f = _files(tmp_path, **{name[:-5]: d for name, d in docs})
    code, out, err = _main(["report", "merge", f["s1"], f["s2"], "-o", str(tmp_path / "m.json")], capsys)
    assert (code, out) == (2, "")
    assert err == (f"error: {f['s2']}: manifest_hash '{'cd' * 32}' differs from {f['s1']}'s '{'ab' * 32}'; "
                   f"shards of one run share it\n")


def test_results_and_compare_do_not_import_each_other_both_ways() -> None:
    """The schema (results) is the lower layer: compare imports it, never the other way round, and
    compare's names are not reachable through results (the old compatibility shim is gone)."""
    import ast
    import inspect
    tree = ast.parse(inspect.getsource(results))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any("compare" in m for m in imported), imported
    assert "suite.report.results" in {n.module for n in ast.walk(ast.parse(inspect.getsource(compare)))
                                      if isinstance(n, ast.ImportFrom)}
    for name in ("merge", "diff", "render_diff", "shard_set", "GOOD", "FAILING", "SAME_RUN", "worst_ulp"):
        assert hasattr(compare, name) and not hasattr(results, name), name
    assert copy.copy(compare.FAILING) == ("failed",) and compare.GOOD == ("passed", "xpassed")



# -- diff: timing (issue 24) ---------------------------------------------------------------------------
# Five rounds a side, no ties: the one-sided Mann-Whitney p of two fully separated sets is exactly
# 1/252 (tests/test_perf_gate.py), printed 0.004.
from suite.perf.record import TimingRecord  # noqa: E402

BASE_S = [0.95e-5, 0.97e-5, 1e-5, 1.02e-5, 1.04e-5]           # median 10 us


def timed(key: str, rounds, clock: str = "device", **kw: Any) -> Dict[str, Any]:
    r = rec(key, **kw)
    r["timing"] = TimingRecord.of_rounds(rounds, clock=clock, source="simulated", cache="cold", launches=100,
                                         nbytes=12_000_000).to_json()
    return r


def not_timed(key: str, why: str = "the backend has no timing hook") -> Dict[str, Any]:
    return {**rec(key), "timing": {"status": "not timed", "reason": why}}


def scaled(factor: float):
    return [factor * x for x in BASE_S]


OK_TIMED = OK + ", no performance regressions"
TIMING_HEAD = "timing, BASE -> NEW median per launch (--perf-threshold 0.1, --perf-alpha 0.01)"


def test_diff_without_timing_is_as_before_and_compares_no_timing() -> None:
    d = compare.diff(run(rec("k")), run(rec("k")))
    assert d.timing == [] and not d.worse and shown(d) == OK


def test_a_slower_kernel_is_a_performance_regression_with_medians_ratio_and_p() -> None:
    d = compare.diff(run(timed("k", BASE_S)), run(timed("k", scaled(1.2))))
    assert d.worse
    assert shown(d) == ("WORSE: 1 performance regressions\n"
                        f"{TIMING_HEAD}: 1 cases: 1 REGRESSION\n"
                        "  REGRESSION  k  10 us -> 12 us  x1.200  p=0.004")


def test_five_percent_slower_passes_and_faster_is_improved() -> None:
    d = compare.diff(run(timed("a", BASE_S), timed("b", BASE_S)),
                     run(timed("a", scaled(1.05)), timed("b", scaled(0.8))))
    assert not d.worse
    assert shown(d) == (f"{OK_TIMED}\n{TIMING_HEAD}: 2 cases: 1 IMPROVED, 1 SAME\n"
                        "  IMPROVED    b  10 us -> 8 us  x0.800  p=0.004")


def test_what_cannot_be_judged_is_unknown_and_never_worse() -> None:
    base = run(timed("few", BASE_S[:3]), timed("host", BASE_S), timed("gone", BASE_S), not_timed("neither"))
    new = run(timed("few", scaled(2)[:3]), timed("host", scaled(2), clock="host"), not_timed("gone"),
              not_timed("neither"))
    d = compare.diff(base, new)
    assert not d.worse
    assert shown(d) == (f"{OK_TIMED}\n{TIMING_HEAD}: 3 cases (1 not timed in either: not compared): 3 UNKNOWN\n"
                        "  UNKNOWN     few  BASE has 3 rounds, fewer than 5\n"
                        "  UNKNOWN     gone  not timed in NEW: the backend has no timing hook\n"
                        "  UNKNOWN     host  clocks differ (device vs host): a host clock times launches, not kernels")


def test_a_case_timed_on_one_side_only_is_unknown_whichever_side() -> None:
    d = compare.diff(run(timed("k", BASE_S)), run(rec("k")))
    assert [(k, v.kind, v.reason) for k, v in d.timing] == [("k", "UNKNOWN", "no timing record in NEW")]
    d = compare.diff(run(rec("a"), not_timed("b")), run(timed("a", scaled(2)), timed("b", scaled(2))))
    assert [(k, v.kind, v.reason) for k, v in d.timing] == [
        ("a", "UNKNOWN", "no timing record in BASE"),
        ("b", "UNKNOWN", "not timed in BASE: the backend has no timing hook")]
    assert not d.worse


def test_the_timing_lines_are_limited_like_the_others() -> None:
    d = compare.diff(run(*(timed(f"k{i}", BASE_S) for i in range(3))),
                     run(*(timed(f"k{i}", scaled(1.5)) for i in range(3))))
    assert shown(d, limit=1).splitlines()[1:] == [
        f"{TIMING_HEAD}: 3 cases: 3 REGRESSION", "  REGRESSION  k0  10 us -> 15 us  x1.500  p=0.004",
        "  ... and 2 more"]


def test_report_diff_exits_1_on_a_performance_regression_and_takes_the_thresholds(tmp_path: Path, capsys) -> None:
    f = _files(tmp_path, base=run(timed("k", BASE_S)), slow=run(timed("k", scaled(1.2))))
    code, out, err = _main(["report", "diff", f["base"], f["slow"]], capsys)
    assert (code, err) == (1, "") and "REGRESSION  k  10 us -> 12 us  x1.200  p=0.004" in out
    assert _main(["report", "diff", f["base"], f["slow"], "--perf-threshold", "0.25"], capsys)[0] == 0
    assert _main(["report", "diff", f["base"], f["slow"], "--perf-threshold", "0.2"], capsys)[0] == 1
    assert _main(["report", "diff", f["base"], f["slow"], "--perf-alpha", "0.003"], capsys)[0] == 0
    code, out, _ = _main(["report", "diff", f["base"], f["slow"], "--perf-alpha", "0.004"], capsys)
    assert code == 1 and "(--perf-threshold 0.1, --perf-alpha 0.004)" in out


@pytest.mark.parametrize("option,value,says", [
    ("--perf-threshold", "-0.1", "argument --perf-threshold: '-0.1': give a finite number >= 0"),
    ("--perf-alpha", "0", "argument --perf-alpha: '0': give a probability, 0 < alpha <= 1"),
    ("--perf-alpha", "1.5", "argument --perf-alpha: '1.5': give a probability, 0 < alpha <= 1"),
    ("--perf-alpha", "nan", "argument --perf-alpha: 'nan': give a probability, 0 < alpha <= 1"),
    ("--perf-alpha", "p", "argument --perf-alpha: 'p' is not a number"),
])
def test_report_diff_refuses_perf_options_that_are_no_thresholds(tmp_path: Path, capsys, option, value, says) -> None:
    f = _files(tmp_path, base=run(rec("a")))
    with pytest.raises(SystemExit) as e:
        cli.main(["report", "diff", f["base"], f["base"], option, value])
    assert e.value.code == 2 and f"aclnn-conform report diff: error: {says}\n" in capsys.readouterr().err


def test_report_diff_refuses_a_bad_timing_record_in_one_line(tmp_path: Path, capsys) -> None:
    bad = timed("k", BASE_S)
    bad["timing"]["rounds"] = []
    doc = run(rec("k"))
    doc["records"] = [bad]
    results.write(tmp_path / "bad.json", doc)
    f = _files(tmp_path, base=run(timed("k", BASE_S)))
    code, out, err = _main(["report", "diff", f["base"], str(tmp_path / "bad.json")], capsys)
    assert (code, out) == (2, "")
    assert err == (f"error: {tmp_path / 'bad.json'}: not a results.json of schema 2: records[0].timing: "
                   f"rounds must be a non-empty list of positive seconds\n")


@pytest.mark.parametrize("s,shown_as", [(2.5, "2.5 s"), (1e-3, "1 ms"), (0.0123456, "12.3 ms"), (1.2e-5, "12 us"),
                                        (9.99e-7, "999 ns"), (4e-9, "4 ns")])
def test_timing_lines_show_seconds_in_a_short_unit(s: float, shown_as: str) -> None:
    from suite.report import perfdiff
    assert perfdiff.seconds(s) == shown_as


# -- several outputs: each judged output's worst ulp error is compared (issue 21, mut4) -----------
def multi(key: str, first: Any, second: Any, outcome: str = "passed") -> Dict[str, Any]:
    """A record of a call with two outputs, `out` (the record's own metrics: the first output's)
    and `total`, of worst ulp errors `first` and `second`."""
    r = rec(key, outcome, max_ulp=first)
    r["outputs"] = {"out": dict(r["metrics"]), "total": {**r["metrics"], "max_ulp": second}}
    return r


def test_output_ulps_reads_each_outputs_max_ulp_and_nothing_else() -> None:
    assert compare.output_ulps(multi("k", 0.5, "inf")) == {"out": 0.5, "total": math.inf}
    assert compare.output_ulps(rec("k")) == {}                           # one output: no `outputs`
    assert compare.output_ulps({"outputs": [1, 2]}) == {}                 # not a mapping: none read
    assert compare.output_ulps({"outputs": {"out": 3, "total": {"max_ulp": 2}}}) == {"total": 2.0}
    assert compare.output_ulps({"outputs": {"total": {"mean_ulp": 2}}}) == {"total": None}


@pytest.mark.parametrize("base, new, want", [
    # the second output alone regressed: named
    ((0.5, 0.5), (0.5, 9.0), [("total", 0.5, 9.0)]),
    # the first alone: the record's metrics (""), not `out` again
    ((0.5, 0.5), (9.0, 0.5), [("", 0.5, 9.0)]),
    # both, by different amounts: each
    ((0.5, 1.0), (9.0, 20.0), [("", 0.5, 9.0), ("total", 1.0, 20.0)]),
    # both by the same amount: the second is listed too only when it differs from the first's
    ((0.5, 0.5), (9.0, 9.0), [("", 0.5, 9.0)]),
    # neither
    ((0.5, 0.5), (0.5, 1.0), []),
])
def test_regressed_names_each_output_that_lost_precision(base, new, want) -> None:
    assert compare.regressed(multi("k", *base), multi("k", *new), 1.0, 2.0) == want


def test_an_output_judged_in_one_run_only_is_not_compared() -> None:
    b, n = multi("k", 0.5, 0.5), multi("k", 0.5, 9.0)
    n["outputs"]["count"] = n["outputs"].pop("total")
    assert compare.regressed(b, n, 1.0, 2.0) == []
    assert not compare.diff(run(b), run(n)).worse


@pytest.mark.parametrize("base, new, kw, line", [
    ((0.5, 0.5), (0.5, 9.0), {}, "k  total 0.5 -> 9 ulp"),
    ((0.5, 1.0), (9.0, 20.0), {}, "k  out 0.5 -> 9 ulp; total 1 -> 20 ulp"),
    # regressed by the thresholds given, not by the defaults the line is drawn with: the record's own
    ((0.5, 0.25), (1.25, 0.25), {"ulp_growth": 0.5, "ulp_ratio": 1.5}, "k  0.5 -> 1.25 ulp"),
])
def test_a_regression_of_several_outputs_names_each_output(base, new, kw, line) -> None:
    d = compare.diff(run(multi("k", *base)), run(multi("k", *new)), **kw)
    assert d.worse and shown(d) == f"WORSE: 1 precision regressions\nprecision regressions (1):\n  {line}"


# -- refuse_empty: a run with no records ---------------------------------------------------------
EMPTY = "e.json: the run has no records (no case ran); there is nothing to compare or merge"


def test_a_run_with_no_records_is_refused_and_an_unfinished_one_only_where_allowed() -> None:
    finished, unfinished = run(), run(complete=False)
    for doc, ok in ((finished, False), (finished, True), (unfinished, False)):
        with pytest.raises(ResultsError) as e:
            compare.refuse_empty([("a.json", run(rec("a"))), ("e.json", doc)], unfinished_ok=ok)
        assert str(e.value) == EMPTY, (doc["complete"], ok)
    compare.refuse_empty([("e.json", unfinished)], unfinished_ok=True)      # a shard stopped before its first case
    with pytest.raises(ResultsError) as e:                                   # never by default (report diff)
        compare.refuse_empty([("e.json", unfinished)])
    assert str(e.value) == EMPTY
    compare.refuse_empty([("a.json", run(rec("a")))])
    with pytest.raises(ResultsError) as e:
        compare.merge([("e.json", finished)], allow_incomplete=True)
    assert str(e.value) == EMPTY


# -- diff on documents an older or another writer made (not results.read's) -------------------------
def test_a_backend_that_is_not_an_object_is_noted_as_the_two_values() -> None:
    base, new = run(rec("a")), run(rec("a"))
    base["backend"] = "fake"
    d = compare.diff(base, new)
    assert d.notes == ["backend differs: 'fake' -> {'spec': 'fake', 'options': {}}"]
    d = compare.diff(new, base)
    assert d.notes == ["backend differs: {'spec': 'fake', 'options': {}} -> 'fake'"]


def test_a_base_without_manifest_hash_is_judged_by_other_goldens() -> None:
    """Unlike tolerances_hash (new in schema 2), a run without goldens named is never 'not compared'."""
    base, new = run(rec("a")), run(rec("a"))
    del base["manifest_hash"]
    d = compare.diff(base, new)
    assert d.judged_by == [f"manifest_hash differs: None -> {new['manifest_hash']!r}"] and d.notes == []
    assert d.worse


def test_the_perf_thresholds_given_are_the_ones_shown() -> None:
    d = compare.diff(run(timed("k", BASE_S)), run(timed("k", scaled(1.2))), perf_threshold=0.25, perf_alpha=0.02)
    assert (d.perf_threshold, d.perf_alpha) == (0.25, 0.02) and not d.worse
    assert "(--perf-threshold 0.25, --perf-alpha 0.02): 1 cases: 1 SAME" in shown(d)
