"""The `interleaved` record field and the run's `timing_baseline` (suite/perf/pair.py,
suite/report/results.py; docs/results-schema.md): a good one validates, each bad one is one line
naming the field; `report diff RUN` judges one run by them again with its own options, and a run
without them is one line, not a traceback."""
from __future__ import annotations

import copy

import pytest

from suite.cli import main as cli
from suite.perf import gate, pair
from suite.perf.record import TimingRecord
from suite.report import results
from tests.reportkit import sample_record

RUN = {"backend": {"spec": "simulated", "options": {}}, "products": ["atlas-a2"], "standard_override": None,
       "manifest_hash": "", "machine": {}, "shard": None,
       "timing_baseline": {"spec": "simulated", "options": {"seed": "1"}}}


def timing(median: float) -> dict:
    rounds = [median * (1 + d) for d in (-0.01, -0.005, 0.0, 0.005, 0.01, 0.002)]
    return TimingRecord.of_rounds(rounds, clock="device", source="simulated", cache="cold", launches=100,
                                  nbytes=1 << 20).to_json()


def record(key: str, base: float, cand: float, outcome: str = "passed") -> dict:
    r = sample_record(key, outcome)
    r["timing"] = timing(cand)
    b, c = TimingRecord.from_json(timing(base)), TimingRecord.from_json(r["timing"])
    r["interleaved"] = pair.make(b.to_json(), gate.compare(b, c), 0.1, 0.01)
    return r


def test_a_good_field_validates_and_each_bad_one_is_one_line() -> None:
    doc = results.make_document(RUN, [record("a", 1e-5, 1e-5)])
    assert results.validate(doc) == []
    for change, line in ((lambda v: v.pop("verdict"), "records[0].interleaved: missing field 'verdict'"),
                         (lambda v: v.update(verdict="SLOWER"), "records[0].interleaved: verdict 'SLOWER' is not one of"),
                         (lambda v: v.update(p="low"), "records[0].interleaved: field 'p' is 'low', expected a finite number"),
                         (lambda v: v.update(extra=1), "records[0].interleaved: unknown field 'extra'"),
                         (lambda v: v["baseline"].pop("rounds"), "records[0].interleaved.baseline: timing: missing field 'rounds'")):
        bad = copy.deepcopy(doc)
        change(bad["records"][0]["interleaved"])
        errors = results.validate(bad)
        assert errors and errors[0].startswith(line) and "\n" not in errors[0], errors
    bad = copy.deepcopy(doc)
    bad["timing_baseline"] = {"spec": "simulated", "options": {"seed": 1}}
    assert results.validate(bad) == ['run: timing_baseline must be {"spec": str, "options": {str: str}}']


def _file(tmp_path, *records) -> str:
    path = tmp_path / "run.json"
    results.write(path, results.make_document(RUN, records))
    return str(path)


def test_report_diff_of_one_run_judges_it_again_with_its_own_options(tmp_path, capsys) -> None:
    path = _file(tmp_path, record("slow", 1e-5, 1.2e-5, "failed"), record("same", 1e-5, 1e-5))
    assert cli.main(["report", "diff", path]) == 1
    out = capsys.readouterr().out
    assert out.startswith("WORSE: 1 performance regressions\n") and "REGRESSION  slow  10 us -> 12 us  x1.200" in out
    # The run failed "slow" for its REGRESSION at 10 %; at 30 % it is SAME, and that failure was
    # the run's performance verdict alone, so nothing else is worse.
    assert cli.main(["report", "diff", path, "--perf-threshold", "0.3"]) == 0
    assert capsys.readouterr().out.startswith("OK: no failures, no performance regressions")


def test_report_diff_of_one_run_counts_its_other_failures(tmp_path, capsys) -> None:
    other = sample_record("broken", "failed")
    other["reason"] = "out fails standard"
    assert cli.main(["report", "diff", _file(tmp_path, record("same", 1e-5, 1e-5), other)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("WORSE: 1 failed cases") and "  broken: out fails standard" in out


def test_report_diff_of_one_run_without_a_baseline_is_one_line(tmp_path, capsys) -> None:
    rec = sample_record("plain")
    path = tmp_path / "plain.json"
    results.write(path, results.make_document({k: v for k, v in RUN.items() if k != "timing_baseline"}, [rec]))
    assert cli.main(["report", "diff", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("no record was timed against a baseline (pytest --timing --timing-baseline); name BASE "
                        "and NEW to compare two runs") and "\n" not in err


def test_shards_timed_against_different_baselines_do_not_merge() -> None:
    from suite.report import compare
    from suite.report.results import ResultsError
    docs = []
    for k, seed in ((1, "1"), (2, "2")):
        run = {**RUN, "shard": f"{k}/2", "timing_baseline": {"spec": "simulated", "options": {"seed": seed}}}
        docs.append((f"s{k}.json", results.make_document(run, [record(f"c{k}", 1e-5, 1e-5)])))
    with pytest.raises(ResultsError) as e:
        compare.merge(docs)
    assert str(e.value).startswith("s2.json: timing_baseline {'spec': 'simulated', 'options': {'seed': '2'}} "
                                   "differs from s1.json's")
    docs[1][1]["timing_baseline"] = docs[0][1]["timing_baseline"]
    assert compare.merge(docs)["timing_baseline"] == {"spec": "simulated", "options": {"seed": "1"}}


from hypothesis import given, settings, strategies as st  # noqa: E402

JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                    max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(sorted(pair.FIELDS) + ["extra"]), value=JSON, whole=st.none() | JSON)
def test_any_interleaved_field_is_checked_in_lines_never_a_traceback(field: str, value, whole) -> None:
    doc = results.make_document(RUN, [record("a", 1e-5, 1.2e-5, "failed")])
    doc["records"][0]["interleaved"][field] = value
    if whole is not None:
        doc["records"][0]["interleaved"] = whole
    errors = results.validate(doc)
    assert all(isinstance(e, str) and "\n" not in e for e in errors)
    if not errors:                            # what validates, the one-run diff reads without raising
        from suite.report import rundiff
        rundiff.render("f.json", doc, 0.1, 0.01, 10)
