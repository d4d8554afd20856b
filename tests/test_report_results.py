"""results.json's schema (suite/report/results.py): validate() names every departure with the exact line a
user reads, the building blocks (jsonable numbers, records, counts, documents) and the file format
(one line per record), in-process on small synthetic documents of a made-up operator."""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any, Callable, List

import numpy as np
import pytest

import suite
from suite.report import results
from suite.report.results import ResultsError
from tests.test_report_compare import RUN, rec, run

def _bad(mutate: Callable[[dict], Any]) -> List[str]:
    doc = run(rec("a"), rec("b", "failed"))
    mutate(doc)
    return results.validate(doc)


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """doc[a][b]... = value, the path written a.b (numbers index lists)."""
    def mutate(doc: dict) -> None:
        *head, last = path.split(".")
        node = doc
        for p in head:
            node = node[int(p)] if isinstance(node, list) else node[p]
        node[int(last) if isinstance(node, list) else last] = value
    return mutate


def _del(path: str) -> Callable[[dict], None]:
    def mutate(doc: dict) -> None:
        *head, last = path.split(".")
        node = doc
        for p in head:
            node = node[int(p)] if isinstance(node, list) else node[p]
        del node[last]
    return mutate


_ELEMENT = {"index": [0], "inputs": None, "golden": 1.0, "lo": 1.0, "hi": 1.0, "got": 2.0, "error": 3.0,
            "unit": "ulp", "why": "over"}
_NOT_SHA = "run: tolerances_hash '%s...%s' is not a sha256 (64 lowercase hex digits) or \"\""
_TB = 'run: timing_baseline must be {"spec": str, "options": {str: str}}'


def _timing_problems(doc: dict) -> List[str]:
    from suite.perf import record
    found = record.problems(doc)
    assert found                            # the row below checks that validate passes them on
    return found


def _pair_problems(doc: dict) -> List[str]:
    from suite.perf import pair
    found = pair.problems(doc)
    assert found
    return found


# mutation of a valid two-record document -> every error validate() gives, in order
SCHEMA = {
    "valid": (lambda d: None, []),
    "missing manifest_hash": (_del("manifest_hash"), ["run: missing field 'manifest_hash'"]),
    "missing records": (_del("records"), ["run: missing field 'records'"]),
    "optional run fields absent": (lambda d: [d.pop(k) for k in ("complete", "incomplete", "incidents")], []),
    "merged_from present": (_set("merged_from", ["1/2", "2/2"]), []),
    "shard a number": (_set("shard", 3), ["run: field 'shard' is 3, expected str or null"]),
    "products not a list": (_set("products", "atlas-a2"), ["run: field 'products' is 'atlas-a2', expected list"]),
    "complete null": (_set("complete", None), ["run: field 'complete' is None, expected bool"]),
    "suite_version a number": (_set("suite_version", 1.0), ["run: field 'suite_version' is 1.0, expected str"]),
    "unknown run field": (_set("colour", "red"), ["run: unknown field 'colour'"]),
    "schema_version 99": (_set("schema_version", 99), ["run: schema_version 99 is not one of 1, 2"]),
    "schema_version 0": (_set("schema_version", 0), ["run: schema_version 0 is not one of 1, 2"]),
    "schema_version true": (_set("schema_version", True), ["run: field 'schema_version' is True, expected int"]),
    "schema_version 1": (_set("schema_version", 1), []),
    "incidents not strings": (_set("incidents", ["x", 3]), ["run: incidents must be strings"]),
    "incidents not a list": (_set("incidents", "x"), ["run: field 'incidents' is 'x', expected list"]),
    "shard 0/3": (_set("shard", "0/3"), ["run: shard '0/3' is not K/N with 1 <= K <= N <= 100000"]),
    "shard ' 1/3'": (_set("shard", " 1/3"), ["run: shard ' 1/3' is not K/N with 1 <= K <= N <= 100000"]),
    "shard 3/3": (_set("shard", "3/3"), []),
    "record not an object": (_set("records.1", ["b"]), ["records[1]: not an object"]),
    "record missing key": (_del("records.1.key"), ["records[1]: missing field 'key'"]),
    "first record not an object, second bad": (lambda d: (_set("records.0", 5)(d), _set("records.1.outcome", "x")(d)),
                                               ["records[0]: not an object", "records[1]: outcome 'x' not one of "
                                                "passed, failed, skipped, xfailed, xpassed"]),
    "record missing fault (optional)": (lambda d: [r.pop("fault") for r in d["records"]], []),
    "record logTarget of v1": (_set("records.0.logTarget", True), []),
    "record expect a string": (_set("records.0.expect", "0"), ["records[0]: field 'expect' is '0', expected int"]),
    "record reduction a float": (_set("records.0.reduction", 1.0),
                                 ["records[0]: field 'reduction' is 1.0, expected int or null"]),
    "record unknown field": (_set("records.0.colour", "red"), ["records[0]: unknown field 'colour'"]),
    "record outcome": (_set("records.1.outcome", "maybe"),
                       ["records[1]: outcome 'maybe' not one of passed, failed, skipped, xfailed, xpassed"]),
    "record kind": (_set("records.0.kind", "speed"),
                    ["records[0]: kind 'speed' not one of numbers, rejection, determinism"]),
    "record kind missing": (_del("records.0.kind"),
                            ["records[0]: missing field 'kind'", "records[0]: kind None not one of numbers, "
                                                                 "rejection, determinism"]),
    "duplicate key": (_set("records.1.key", "a"), ["records[1]: duplicate key 'a'"]),
    "metric not a number": (_set("records.0.metrics.max_ulp", "lots"),
                            ["records[0].metrics: field 'max_ulp' is 'lots', expected num"]),
    "metric a bool": (_set("records.0.metrics.rmse", True), ["records[0].metrics: field 'rmse' is True, expected num"]),
    "metric count a float": (_set("records.0.metrics.n", 6.0), ["records[0].metrics: field 'n' is 6.0, expected int"]),
    "metric standard a number": (_set("records.0.metrics.standard", 1),
                                 ["records[0].metrics: field 'standard' is 1, expected str"]),
    "metric unknown": (_set("records.0.metrics.speed", 1), ["records[0].metrics: unknown field 'speed'"]),
    "metrics null": (_set("records.0.metrics", None), []),
    "metrics partial": (_set("records.0.metrics", {"max_ulp": "inf"}), []),
    "non-finite metrics as strings": (_set("records.0.metrics", {"max_ulp": "inf", "mean_ulp": "nan",
                                                                 "max_abs": "-inf", "max_rel": 1}), []),
    "metrics a list": (_set("records.0.metrics", [1]), ["records[0]: field 'metrics' is [1], expected dict or null"]),
    "counts wrong": (_set("counts.passed", 0), ["run: counts do not match the records"]),
    "counts missing an outcome": (lambda d: d["counts"].pop("xpassed"), ["run: counts do not match the records"]),
    "counts wrong, with another error": (lambda d: (_set("counts.passed", 0)(d), _set("colour", 1)(d)),
                                         ["run: unknown field 'colour'"]),
    "records not a list": (_set("records", {}), ["run: field 'records' is {}, expected list"]),
    "tolerances_hash a sha256": (_set("tolerances_hash", "0123456789abcdef" * 4), []),
    "tolerances_hash empty": (_set("tolerances_hash", ""), []),
    "tolerances_hash 63 digits": (_set("tolerances_hash", "a" * 63), [_NOT_SHA % ("a" * 27, "a" * 28)]),
    "tolerances_hash not hex": (_set("tolerances_hash", "g" * 64), [_NOT_SHA % ("g" * 27, "g" * 28)]),
    "tolerances_hash X": (_set("tolerances_hash", "X" * 64), [_NOT_SHA % ("X" * 27, "X" * 28)]),
    "tolerances_hash upper case": (_set("tolerances_hash", "A" * 64), [_NOT_SHA % ("A" * 27, "A" * 28)]),
    "protections": (_set("protections", {"writes": "landlock abi 7"}), []),
    "protections not strings": (_set("protections", {"writes": 7}), ["run: protections must map names to strings"]),
    "timing_baseline": (_set("timing_baseline", {"spec": "a:B", "options": {"k": "v"}}), []),
    "timing_baseline extra key": (_set("timing_baseline", {"spec": "a:B", "options": {}, "x": 1}), [_TB]),
    "timing_baseline no options": (_set("timing_baseline", {"spec": "a:B"}), [_TB]),
    "timing_baseline spec a number": (_set("timing_baseline", {"spec": 1, "options": {}}), [_TB]),
    "timing_baseline options a list": (_set("timing_baseline", {"spec": "a", "options": []}), [_TB]),
    "timing_baseline option a number": (_set("timing_baseline", {"spec": "a", "options": {"k": 1}}), [_TB]),
    "worst element not an object": (_set("records.1.worst", [3]), ["records[1].worst[0]: not an object"]),
    "worst: a non-object, then a bad unit": (_set("records.1.worst", [3, {**_ELEMENT, "unit": "ulps"}]),
                                             ["records[1].worst[0]: not an object",
                                              "records[1].worst[1]: unit 'ulps' not one of ulp, abs"]),
    "worst in ulps": (_set("records.1.worst", [_ELEMENT]), []),
    "worst in abs": (_set("records.1.worst", [{**_ELEMENT, "unit": "abs"}]), []),
    "an earlier error, then a worst element's": (
        lambda d: (_set("colour", 1)(d), _set("records.1.worst", [{**_ELEMENT, "extra": 1}])(d)),
        ["run: unknown field 'colour'", "records[1].worst[0]: unknown field 'extra'"]),
    "outputs not objects": (_set("records.1.outputs", {"out": 3}),
                            ["records[1].outputs: 'out' is 3, not an object of metrics"]),
    "outputs' metrics": (_set("records.1.outputs", {"out": {"n": 1.5}, "t": {"x": 1}}),
                         ["records[1].outputs.'out': field 'n' is 1.5, expected int",
                          "records[1].outputs.'t': unknown field 'x'"]),
    "outputs' metrics valid": (_set("records.1.outputs", {"out": {"n": 1, "max_ulp": "inf"}}), []),
    "timing off its schema": (_set("records.1.timing", {}), [f"records[1].{p}" for p in _timing_problems({})]),
    "an earlier error, then timing's": (lambda d: (_set("colour", 1)(d), _set("records.1.timing", {})(d)),
                                        ["run: unknown field 'colour'"]
                                        + [f"records[1].{p}" for p in _timing_problems({})]),
    "an earlier error, then interleaved's": (lambda d: (_set("colour", 1)(d), _set("records.1.interleaved", {})(d)),
                                             ["run: unknown field 'colour'"]
                                             + [f"records[1].{p}" for p in _pair_problems({})]),
    "interleaved off its schema": (_set("records.1.interleaved", {}), [f"records[1].{p}" for p in _pair_problems({})]),
}


@pytest.mark.parametrize("name", list(SCHEMA))
def test_validate_names_every_departure(name: str) -> None:
    mutate, errors = SCHEMA[name]
    assert _bad(mutate) == errors


def test_validate_the_top_level() -> None:
    for doc in ([], "x", None, 3):
        assert results.validate(doc) == ["top level: not an object"]
    assert results.validate({}) == [f"run: missing field '{f}'" for f, (_, req) in results.RUN_FIELDS.items() if req]


def test_long_values_are_cut_in_messages() -> None:
    errors = _bad(_set("records.0.layout", ["x" * 200]))
    assert errors == [f"records[0]: field 'layout' is ['{'x' * 27}...{'x' * 28}'], expected str"]


# _is: each type, and what it must not take
IS = [
    (("num",), [0, -3, 2.5, "inf", "-inf", "nan", 1e308], [True, False, "1.0", "Inf", None, [1]]),
    (("int",), [0, -1, 10 ** 20], [True, 1.0, "1", None]),
    (("str",), ["", "x"], [1, None, b"x"]),
    (("bool",), [True, False], [0, 1, None, "true"]),
    (("null",), [None], [0, "", False]),
    (("list",), [[], [1]], [(), {}, "x"]),
    (("dict",), [{}, {"a": 1}], [[], "x"]),
    (("str", "null"), ["x", None], [0, False]),
]


@pytest.mark.parametrize("types,yes,no", IS, ids=["-".join(t[0]) for t in IS])
def test_each_schema_type(types, yes, no) -> None:
    assert [v for v in yes if not results._is(v, types)] == []
    assert [v for v in no if results._is(v, types)] == []


# -- building blocks ----------------------------------------------------------------------------
@pytest.mark.parametrize("value,want", [
    (float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf"), (np.float32("-inf"), "-inf"),
    (np.float16("nan"), "nan"), (0.5, 0.5), (np.float32(0.25), 0.25), (np.float64(-0.0), -0.0),
    (np.int64(3), 3), (np.uint8(7), 7), (3, 3), (True, True), ("x", "x"), (None, None), (1e308, 1e308),
])
def test_jsonable_number(value, want) -> None:
    got = results.jsonable_number(value)
    assert got == want and type(got) is type(want)
    if isinstance(want, float):
        assert math.copysign(1, got) == math.copysign(1, want)


@pytest.mark.parametrize("value,want", [(None, None), ("inf", math.inf), ("-inf", -math.inf), (2, 2.0), (0.5, 0.5)])
def test_number(value, want) -> None:
    got = results.number(value)
    assert got == want and (want is None or type(got) is float)
    assert math.isnan(results.number("nan"))


class _Case:
    id, op, product, out_dtype, out_shape = "C", "FakeOp", "atlas-a2", "float16", None
    dtypes, layout, values, expect = {"x": "float16", "w": None}, "strided", "tiny", 161001
    shapes = {"x": (2, 3), "w": None}
    attrs = {"reduction": 2, "width": float("inf"), "flag": False}


def test_case_fields() -> None:
    assert results.case_fields(_Case(), "rejection", "node::id") == {
        "key": "node::id", "case": "C", "kind": "rejection", "op": "FakeOp", "product": "atlas-a2",
        "dtypes": {"x": "float16", "w": None}, "out_dtype": "float16", "reduction": 2,
        "attrs": {"reduction": 2, "width": "inf", "flag": False}, "shapes": {"x": [2, 3], "w": None},
        "out_shape": None, "layout": "strided", "values": "tiny", "expect": 161001}
    c = _Case()
    c.attrs, c.out_shape = {"flag": True}, (2, 3)
    f = results.case_fields(c, "numbers", "k")
    assert f["reduction"] is None and f["out_shape"] == [2, 3]
    # a float attribute may be NaN or infinite (a rejection case's C float): strict JSON holds it as
    # the string results.number reads back, like a metric
    c.attrs = {"reduction": 1, "width": float("nan"), "lo": float("-inf"), "flag": True}
    f = results.case_fields(c, "numbers", "k")
    assert f["attrs"] == {"reduction": 1, "width": "nan", "lo": "-inf", "flag": True}
    json.dumps(f, allow_nan=False)
    assert results.number(f["attrs"]["lo"]) == float("-inf")


def test_make_record() -> None:
    fields = {**results.case_fields(_Case(), "numbers", "k"), "status": 0, "reproduce": None, "fault": None,
              "logTarget": True, "max_ulp": np.float64("inf"), "n": np.int64(6), "standard": "cann", "other": 1}
    r = results.make_record(fields, "failed", "why")
    assert {k: r[k] for k in ("key", "case", "kind", "op", "status", "reproduce", "fault", "reduction")} == {
        "key": "k", "case": "C", "kind": "numbers", "op": "FakeOp", "status": 0, "reproduce": None, "fault": None,
        "reduction": 2}
    assert r["attrs"] == {"reduction": 2, "width": "inf", "flag": False} and r["shapes"] == {"x": [2, 3], "w": None}
    assert list(r) == [k for k in results.RECORD_FIELDS if k not in ("logTarget", "outcome", "reason", "metrics",
                                                                      *results.OPTIONAL_WRITTEN)] + ["outcome", "reason", "metrics"]
    assert (r["outcome"], r["reason"], r["metrics"]) == ("failed", "why", {"standard": "cann", "n": 6, "max_ulp": "inf"})
    assert type(r["metrics"]["n"]) is int
    r = results.make_record({"key": "k"}, "skipped", None)
    assert r["metrics"] is None and r["status"] is None and r["outcome"] == "skipped"


def test_make_record_writes_timing_and_interleaved_only_where_given_as_copies() -> None:
    """A timed case's timing record and the baseline's interleaved verdict go into its record as
    they came (copies: the record never shares a dict with the fields it was made from); a record
    without them has neither key (issue 21, mut4: survivors of make_record)."""
    timing = {"status": "timed", "clock": "device", "median_s": 1e-05}
    inter = {"verdict": "SAME", "ratio": 1.0}
    r = results.make_record({"key": "k", "timing": timing, "interleaved": inter}, "passed", None)
    assert (r["timing"], r["interleaved"]) == (timing, inter) and list(r)[-2:] == ["timing", "interleaved"]
    assert r["timing"] is not timing and r["interleaved"] is not inter
    r = results.make_record({"key": "k", "timing": timing}, "passed", None)
    assert r["timing"] == timing and "interleaved" not in r
    r = results.make_record({"key": "k", "interleaved": inter}, "passed", None)
    assert r["interleaved"] == inter and "timing" not in r
    r = results.make_record({"key": "k", "timing": {}, "interleaved": None}, "passed", None)
    assert "timing" not in r and "interleaved" not in r


WORST = {"index": [1, 2], "inputs": {"self": 0.5, "weight": None}, "golden": 0.0, "lo": -1e-45, "hi": 1e-45,
         "got": float("nan"), "error": float("inf"), "unit": "abs", "why": "mismatch"}


def test_make_record_writes_the_worst_elements_only_where_given() -> None:
    """A numbers failure's worst elements are data in its record, numbers made JSON-safe; a
    record without them has no `worst` key at all (passing records stay as they were)."""
    r = results.make_record({"key": "k", "worst": [WORST]}, "failed", "why")
    assert list(r)[-1] == "worst"
    assert r["worst"] == [{**WORST, "got": "nan", "error": "inf"}]
    assert "worst" not in results.make_record({"key": "k", "worst": []}, "failed", "why")
    assert "worst" not in results.make_record({"key": "k"}, "passed", None)


def test_make_record_writes_outputs_timing_and_interleaved_only_where_given() -> None:
    """Several outputs' metrics (each made JSON-safe, only METRICS kept), the timing record and the
    baseline's interleaved record go into the record as given; absent or empty, no key at all."""
    outputs = {"gradInput": {"n": np.int64(4), "max_ulp": np.float64("nan"), "other": 1},
               "gradWeight": {"standard": "cann", "max_abs": float("-inf")}}
    timing = {"median_us": 3.5, "rounds": 10}
    interleaved = {"baseline": {"median_us": 3.0}, "verdict": "same"}
    r = results.make_record({"key": "k", "outputs": outputs, "timing": timing, "interleaved": interleaved},
                            "passed", None)
    assert r["outputs"] == {"gradInput": {"n": 4, "max_ulp": "nan"}, "gradWeight": {"standard": "cann", "max_abs": "-inf"}}
    assert type(r["outputs"]["gradInput"]["n"]) is int
    assert r["timing"] == timing and r["timing"] is not timing            # a copy: the record is its own
    assert r["interleaved"] == interleaved and r["interleaved"] is not interleaved
    assert list(r)[-3:] == ["outputs", "timing", "interleaved"]
    for empty in ({}, {"outputs": {}, "timing": {}, "interleaved": {}}, {"outputs": None, "timing": None}):
        r = results.make_record({"key": "k", **empty}, "passed", None)
        assert not {"outputs", "timing", "interleaved"} & set(r), r

def test_a_worst_element_of_a_sum_is_written_with_inputs_null() -> None:
    """An element that is a sum of several terms has no single input values behind it
    (element_values gives None): its record says so with `inputs: null` (docs/results-schema.md)."""
    summed = {**WORST, "inputs": None, "got": 1.5}
    r = results.make_record({"key": "k", "worst": [summed]}, "failed", "why")
    assert r["worst"] == [{**summed, "error": "inf"}]


@pytest.mark.parametrize("change, error", [
    ({}, None),
    ({"unit": "ulps"}, "unit 'ulps' not one of ulp, abs"),
    ({"inputs": [1]}, "field 'inputs' is [1], expected dict or null"),
    ({"golden": "x"}, "field 'golden' is 'x', expected num"),
    ({"extra": 1}, "unknown field 'extra'"),
    ({"index": None}, "field 'index' is None, expected list"),
])
def test_worst_elements_are_validated(change, error) -> None:
    rec = results.make_record({**results.case_fields(_Case(), "numbers", "k"), "worst": [WORST]}, "failed", "w")
    rec["worst"] = [{**rec["worst"][0], **change}, "not an object"]
    doc = results.make_document({"schema_version": 2}, [rec])
    errors = [e for e in results.validate(doc) if ".worst[" in e]
    want = ["records[0].worst[1]: not an object"] + ([f"records[0].worst[0]: {error}"] if error else [])
    assert sorted(errors) == sorted(want)


def test_machine() -> None:
    m = results.machine()
    assert set(m) == {"platform", "python", "numpy", "hostname"} and all(isinstance(v, str) and v for v in m.values())
    assert m["numpy"] == np.__version__ and m["python"].count(".") == 2


def test_count_outcomes() -> None:
    assert results.count_outcomes([]) == {o: 0 for o in results.OUTCOMES}
    assert results.count_outcomes([{"outcome": "failed"}, {"outcome": "failed"}, {"outcome": "xpassed"}]) == {
        "passed": 0, "failed": 2, "skipped": 0, "xfailed": 0, "xpassed": 1}
    assert results.count_outcomes([{"outcome": "odd"}])["odd"] == 1


def test_make_document() -> None:
    doc = results.make_document({"backend": {}, "shard": "1/2"}, [rec("b"), rec("a", "skipped")])
    assert list(doc) == ["schema_version", "suite_version", "backend", "shard", "counts", "complete",
                         "incomplete", "incidents", "records"]
    assert (doc["schema_version"], doc["suite_version"]) == (2, suite.__version__)
    assert [r["key"] for r in doc["records"]] == ["a", "b"] and doc["counts"]["skipped"] == 1
    assert (doc["complete"], doc["incomplete"], doc["incidents"]) == (True, None, [])
    doc = results.make_document({}, iter([]), "killed", ("x", "y"))
    assert (doc["complete"], doc["incomplete"], doc["incidents"]) == (False, "killed", ["x", "y"])


@pytest.mark.parametrize("fields,done", [({}, True), ({"complete": True}, True), ({"complete": False}, False),
                                         ({"complete": None}, True)])
def test_is_complete(fields, done) -> None:
    assert results.is_complete(fields) is done


# -- the file -----------------------------------------------------------------------------------
def test_one_line_per_record(tmp_path: Path) -> None:
    doc = results.make_document({"backend": {"spec": "x"}}, [rec("b", max_ulp=None), rec("a", max_ulp="inf")])
    text = results.dumps(doc).decode()
    lines = text.splitlines()
    assert lines[0] == "{" and lines[1] == ' "schema_version": 2,' and lines[-3:-1] == [lines[-3], " ]"]
    assert lines[-1] == "}" and text.endswith("}\n")
    assert lines[-4].startswith('  {"key":"a",') and lines[-4].endswith(",") and '"max_ulp":"inf"' in lines[-4]
    assert lines[-3].startswith('  {"key":"b",') and lines[-3].endswith('"fault":null}')
    assert lines[-5] == ' "records": ['
    assert json.loads(text) == doc and text.count('"records"') == 1 and text.count('"key":"a"') == 1
    empty = results.make_document({"backend": {}}, [])
    assert results.dumps(empty).decode() == json.dumps(empty, indent=1) + "\n"
    results.write(tmp_path / "r.json", doc)
    assert (tmp_path / "r.json").read_bytes() == text.encode()


def test_a_nan_that_is_not_a_string_is_never_written() -> None:
    doc = results.make_document({}, [dict(rec("a"), metrics={"max_ulp": float("nan")})])
    with pytest.raises(ValueError):
        results.dumps(doc)
    with pytest.raises(ValueError):
        results.dumps(dict(doc, records=[], incomplete=float("inf")))
    with pytest.raises(ValueError):
        results.dumps(dict(doc, records=[rec("a")], incomplete=float("-inf")))


def test_read_round_trip_and_refusals(tmp_path: Path) -> None:
    doc = run(rec("a", max_ulp="inf"), rec("b"))
    results.write(tmp_path / "r.json", doc)
    assert results.read(tmp_path / "r.json") == doc
    assert results.read(str(tmp_path / "r.json")) == doc
    bad = copy.deepcopy(doc)
    for i in range(6):
        bad[f"extra{i}"] = i
    (tmp_path / "six.json").write_text(json.dumps(bad))
    with pytest.raises(ResultsError) as e:
        results.read(tmp_path / "six.json")
    assert str(e.value) == (f"{tmp_path / 'six.json'}: not a results.json of schema 2: run: unknown field 'extra0'; "
                            "run: unknown field 'extra1'; run: unknown field 'extra2'; run: unknown field 'extra3'; "
                            "run: unknown field 'extra4' (and 1 more)")
    del bad["extra5"]
    (tmp_path / "five.json").write_text(json.dumps(bad))
    with pytest.raises(ResultsError) as e:
        results.read(tmp_path / "five.json")
    assert str(e.value).endswith("run: unknown field 'extra4'")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_read_refuses_what_json_has_not(tmp_path: Path, literal: str) -> None:
    """Python's json reads NaN and Infinity; a results.json holding one passed validation, then
    crashed `report merge` with a traceback when it wrote the merged file."""
    text = results.dumps(run(rec("a", max_ulp=0.5))).decode().replace('"max_ulp":0.5', f'"max_ulp":{literal}')
    (tmp_path / "r.json").write_text(text)
    with pytest.raises(ResultsError) as e:
        results.read(tmp_path / "r.json")
    assert str(e.value) == (f"{tmp_path / 'r.json'}: not JSON this suite reads: {literal} is not a JSON value "
                            f"(write a non-finite number as the string \"nan\", \"inf\" or \"-inf\")")


def test_the_schema_tables_agree() -> None:
    assert set(results.METRIC_TYPES) == set(results.METRICS)
    assert results.KINDS == ("numbers", "rejection", "determinism")
    assert (results.SCHEMA_VERSION, results.READABLE_VERSIONS) == (2, (1, 2))
    assert RUN["shard"] is None and results.validate(run()) == []


@pytest.mark.parametrize("value, ok", [
    ("ab" * 32, True), ("", True),                  # a sha256, or "" (no table)
    ("abc", False),                                 # hex, but not 64 digits
    ("X" * 64, False), ("AB" * 32, False),          # 64 characters, not lowercase hex
])
def test_tolerances_hash_is_a_sha256(value: str, ok: bool) -> None:
    errors = _bad(_set("tolerances_hash", value))
    from suite.common.jsonfile import short
    assert errors == ([] if ok else [f"run: tolerances_hash {short(value)} is not a sha256 (64 lowercase hex digits) or \"\""])


def test_protections_map_names_to_strings() -> None:
    assert _bad(_set("protections", {"seccomp": "on", "rlimit": "8 GiB"})) == []
    assert _bad(_set("protections", {"seccomp": 3})) == ["run: protections must map names to strings"]


TB = "run: timing_baseline must be {\"spec\": str, \"options\": {str: str}}"


@pytest.mark.parametrize("value, ok", [
    ({"spec": "pkg:Base", "options": {}}, True),
    ({"spec": "pkg:Base", "options": {"device": "1"}}, True),
    ({"spec": "pkg:Base"}, False),                                       # options missing
    ({"spec": "pkg:Base", "options": {}, "extra": 1}, False),
    ({"spec": 3, "options": {}}, False),
    ({"spec": "pkg:Base", "options": ["device=1"]}, False),
    ({"spec": "pkg:Base", "options": {"device": 1}}, False),
    ({"spec": 3, "options": ["x"]}, False),
])
def test_timing_baseline_is_a_spec_and_string_options(value: Any, ok: bool) -> None:
    assert _bad(_set("timing_baseline", value)) == ([] if ok else [TB])
