"""`report diff BASE NEW` where a run was timed against a baseline (pytest --timing-baseline):
NEW's interleaved verdict is shown beside the sequential BASE -> NEW one, judged again with the
diff's options, and a REGRESSION of either fails the diff; an interleaved verdict never makes a
failing diff pass, BASE's interleaved verdicts are BASE's own (docs/perf-gate.md, "Two runs").
Every pair of verdicts, the options' boundaries, and a bad `interleaved` field in one line."""
from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from suite.perf import gate, pair
from suite.perf.record import TimingRecord
from suite.report import compare
from tests.test_report_compare import BASE_S, OK_TIMED, TIMING_HEAD, _files, _main, rec, run, scaled, shown

BASELINE = {"timing_baseline": {"spec": "simulated", "options": {}}}
KINDS = (gate.REGRESSION, gate.IMPROVED, gate.SAME, gate.UNKNOWN)
FACTOR = {gate.REGRESSION: 1.2, gate.IMPROVED: 0.8, gate.SAME: 1.05}     # p = 1/252 for each: fully separated


def timing(rounds: List[float]) -> Dict[str, Any]:
    return TimingRecord.of_rounds(rounds, clock="device", source="simulated", cache="cold", launches=100,
                                  nbytes=12_000_000).to_json()


def case(key: str, rounds: List[float], baseline: Optional[List[float]] = None, outcome: str = "passed",
         not_timed: Optional[str] = None) -> Dict[str, Any]:
    """A record timed with `rounds`; with `baseline` (or `not_timed`, the baseline's reason) also
    against a timing baseline in its run, with the verdict that run's gate gave (default options)."""
    r = rec(key, outcome)
    r["timing"] = timing(rounds)
    if baseline is not None or not_timed is not None:
        b = {"status": "not timed", "reason": not_timed} if not_timed else timing(baseline)
        v = gate.Verdict(gate.UNKNOWN, None, None, None, None, not_timed) if not_timed else \
            gate.compare(TimingRecord.from_json(b), TimingRecord.from_json(r["timing"]))
        r["interleaved"] = pair.make(b, v, 0.1, 0.01)
    return r


def new_rounds(seq: str) -> List[float]:
    """NEW's rounds for a sequential verdict against BASE_S (UNKNOWN: BASE has 3 rounds instead)."""
    return scaled(FACTOR.get(seq, 1.0))


def baseline_rounds(seq: str, inter: str) -> List[float]:
    """The timing baseline's rounds in NEW's run for an interleaved verdict on new_rounds(seq)."""
    cand = new_rounds(seq)
    return cand[:3] if inter == gate.UNKNOWN else [x / FACTOR[inter] for x in cand]


def pair_of(seq: str, inter: str) -> compare.Diff:
    base = run(case("k", BASE_S[:3] if seq == gate.UNKNOWN else BASE_S))
    new = run(case("k", new_rounds(seq), baseline_rounds(seq, inter)), **BASELINE)
    return compare.diff(base, new)


@pytest.mark.parametrize("seq,inter", list(itertools.product(KINDS, KINDS)))
def test_every_pair_of_verdicts_a_regression_of_either_fails(seq: str, inter: str) -> None:
    d = pair_of(seq, inter)
    assert [(k, v.kind) for k, v in d.timing] == [("k", seq)]
    assert {k: v.kind for k, v in d.interleaved.items()} == {"k": inter}
    assert d.worse is (gate.REGRESSION in (seq, inter))
    text = shown(d)
    head = text.splitlines()[0]
    assert head == ("WORSE: 1 performance regressions" if d.worse else OK_TIMED)
    assert (f"{TIMING_HEAD}: 1 cases: 1 {seq}; NEW against its timing baseline, interleaved in one run: "
            f"1 cases: 1 {inter}") in text
    rows = [x for x in text.splitlines() if x.startswith("  ")]
    if seq == inter == gate.SAME:
        assert rows == []                       # SAME on both sides is counted, not listed
        return
    assert len(rows) == 1 and rows[0].startswith(f"  {seq:<10}  k  ")
    assert f"  |  interleaved {inter}  " in rows[0]
    if inter == gate.UNKNOWN:
        assert rows[0].endswith("|  interleaved UNKNOWN  BASE has 3 rounds, fewer than 5")
    else:
        assert f"|  interleaved {inter}  " in rows[0] and f"  x{FACTOR[inter]:.3f}  p=" in rows[0].split("|")[1]


def test_an_interleaved_regression_fails_beside_a_same_with_both_medians_ratio_and_p() -> None:
    assert shown(pair_of(gate.SAME, gate.REGRESSION)) == (
        "WORSE: 1 performance regressions\n"
        f"{TIMING_HEAD}: 1 cases: 1 SAME; NEW against its timing baseline, interleaved in one run: 1 cases: "
        "1 REGRESSION\n"
        "  SAME        k  10 us -> 10.5 us  x1.050  p=0.075  |  interleaved REGRESSION  8.75 us -> 10.5 us  "
        "x1.200  p=0.004")
    assert shown(pair_of(gate.REGRESSION, gate.IMPROVED)).splitlines()[2] == (
        "  REGRESSION  k  10 us -> 12 us  x1.200  p=0.004  |  interleaved IMPROVED  15 us -> 12 us  x0.800  p=0.004")


def test_a_case_counts_once_when_both_verdicts_are_regressions() -> None:
    d = pair_of(gate.REGRESSION, gate.REGRESSION)
    assert [k for k, _ in d.slower] == ["k"] and shown(d).startswith("WORSE: 1 performance regressions\n")


def test_rows_are_listed_by_the_worse_of_their_two_verdicts() -> None:
    base = run(case("a", BASE_S), case("b", BASE_S), case("c", BASE_S))
    new = run(case("a", scaled(0.8)), case("b", scaled(1.05), [x / 1.2 for x in scaled(1.05)]),
              case("c", scaled(1.05)), **BASELINE)
    rows = [x.split()[:2] for x in shown(compare.diff(base, new)).splitlines()[2:]]
    assert rows == [["SAME", "b"], ["IMPROVED", "a"]]        # b's interleaved REGRESSION first; c not listed


def test_a_run_failed_for_its_interleaved_regression_fails_the_diff_even_if_base_failed_alike() -> None:
    # The gap this closes: BASE failed the case the same way, so it is no new failure; the
    # sequential comparison says SAME. Before, the diff read OK.
    slow = [x / 1.2 for x in BASE_S]
    base = run(case("k", BASE_S, slow, "failed"), **BASELINE)
    new = run(case("k", BASE_S, slow, "failed"), **BASELINE)
    d = compare.diff(base, new)
    assert d.new_failures == [] and [v.kind for _, v in d.timing] == ["SAME"]
    assert d.worse and shown(d).startswith("WORSE: 1 performance regressions\n")
    # BASE passed it: a new failure (the run's own verdict, as recorded) and the regression, one case.
    d = compare.diff(run(case("k", BASE_S)), new)
    assert shown(d).startswith("WORSE: 1 new failures, 1 performance regressions\n")


def test_a_case_new_in_new_is_judged_on_its_interleaved_verdict() -> None:
    new = run(case("old", BASE_S), case("new", BASE_S, [x / 1.2 for x in BASE_S]), **BASELINE)
    d = compare.diff(run(case("old", BASE_S)), new)
    assert d.worse
    lines = shown(d).splitlines()
    assert lines[1] == (f"{TIMING_HEAD}: 2 cases: 1 SAME, 1 UNKNOWN; NEW against its timing baseline, interleaved "
                        "in one run: 1 cases: 1 REGRESSION")
    assert lines[2] == ("  UNKNOWN     new  not in BASE  |  interleaved REGRESSION  8.33 us -> 10 us  x1.200  "
                        "p=0.004")


def test_a_baseline_that_was_not_timed_is_unknown_with_its_reason_never_worse() -> None:
    new = run(case("k", BASE_S, not_timed="the baseline's numbers did not pass: out fails standard"), **BASELINE)
    d = compare.diff(run(case("k", BASE_S)), new)
    assert not d.worse and shown(d).splitlines()[2] == (
        "  SAME        k  10 us -> 10 us  x1.000  p=0.54  |  interleaved UNKNOWN  the baseline's numbers did not "
        "pass: out fails standard")


def test_base_timed_against_a_baseline_is_compared_on_its_own_timing_only() -> None:
    base = run(case("k", BASE_S, [x / 1.2 for x in BASE_S], "failed"), **BASELINE)   # BASE's own regression
    d = compare.diff(base, run(case("k", BASE_S)))
    assert not d.worse and d.interleaved == {}
    assert shown(d).splitlines()[:2] == [
        OK_TIMED, "note: BASE was timed against a timing baseline too: its interleaved verdicts are BASE's, not "
                  "compared (NEW's are)"]


def test_without_interleaved_records_the_diff_reads_as_before() -> None:
    d = compare.diff(run(case("k", BASE_S)), run(case("k", scaled(1.2))))
    assert d.interleaved == {} and shown(d) == ("WORSE: 1 performance regressions\n"
                                                f"{TIMING_HEAD}: 1 cases: 1 REGRESSION\n"
                                                "  REGRESSION  k  10 us -> 12 us  x1.200  p=0.004")


def test_the_interleaved_verdict_is_judged_again_with_the_diffs_options(tmp_path: Path, capsys) -> None:
    # Sequentially SAME (x1.000); interleaved x1.200 p=0.004: the boundaries of both options.
    f = _files(tmp_path, base=run(case("k", scaled(1.2))),
               new=run(case("k", scaled(1.2), BASE_S), **BASELINE))
    code, out, err = _main(["report", "diff", f["base"], f["new"]], capsys)
    assert (code, err) == (1, "") and "|  interleaved REGRESSION  10 us -> 12 us  x1.200  p=0.004" in out
    for option, value, code in (("--perf-threshold", "0.25", 0), ("--perf-threshold", "0.2", 1),
                                ("--perf-alpha", "0.003", 0), ("--perf-alpha", "0.004", 1)):
        got, out, _ = _main(["report", "diff", f["base"], f["new"], option, value], capsys)
        assert got == code, (option, value, out)
        assert out.split("\n")[1].endswith("interleaved in one run: 1 cases: 1 " + ("REGRESSION" if code else "SAME"))


@pytest.mark.parametrize("change,says", [
    (lambda v: v.pop("verdict"), "records[0].interleaved: missing field 'verdict'"),
    (lambda v: v.pop("baseline"), "records[0].interleaved: missing field 'baseline'"),
    (lambda v: v.update(ratio="fast"), "records[0].interleaved: field 'ratio' is 'fast', expected a finite number"),
    (lambda v: v["baseline"].update(rounds=[]),
     "records[0].interleaved.baseline: timing: rounds must be a non-empty list of positive seconds"),
])
def test_a_bad_interleaved_field_in_either_file_is_one_line(tmp_path: Path, capsys, change, says) -> None:
    good = run(case("k", BASE_S, BASE_S), **BASELINE)
    bad = copy.deepcopy(good)
    change(bad["records"][0]["interleaved"])
    (tmp_path / "bad.json").write_text(json.dumps(bad))       # written as is: results.write would refuse it
    f = _files(tmp_path, good=good)
    for args in ([f["good"], str(tmp_path / "bad.json")], [str(tmp_path / "bad.json"), f["good"]]):
        code, out, err = _main(["report", "diff", *args], capsys)
        assert (code, out) == (2, "") and err.count("\n") == 1, err
        assert err.startswith(f"error: {tmp_path / 'bad.json'}: not a results.json of schema 2: {says}"), err


def test_an_interleaved_field_that_is_no_object_is_one_line(tmp_path: Path, capsys) -> None:
    bad = run(case("k", BASE_S), **BASELINE)
    bad["records"][0]["interleaved"] = [1, 2]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    f = _files(tmp_path, good=run(case("k", BASE_S)))
    code, out, err = _main(["report", "diff", f["good"], str(tmp_path / "bad.json")], capsys)
    assert (code, out) == (2, "") and err == (f"error: {tmp_path / 'bad.json'}: not a results.json of schema 2: "
                                              "records[0]: field 'interleaved' is [1, 2], expected dict; records[0].interleaved is list, "
                                              "not an object\n")
