"""The results.json timing record (suite/perf/record.py): the figures derived from the round
medians, the round trip through JSON, and one clear error for each way a record can be wrong, also
through results.validate (a record's optional `timing` field)."""
from __future__ import annotations

import copy

import numpy as np

import pytest

from suite.perf import record
from suite.perf.record import NotTimed, TimingError, TimingRecord
from suite.report import results

from tests.reportkit import sample_record


def timed(**kw) -> TimingRecord:
    args = dict(clock="device", source="simulated", cache="cold", launches=50, nbytes=2_000_000,
                peak_gbps=1000.0, peak_source="simulated device")
    args.update(kw)
    return TimingRecord.of_rounds([4e-6, 1e-6, 2e-6, 3e-6, 5e-6], **args)


def test_the_figures_are_of_the_round_medians() -> None:
    r = timed()
    assert (r.median_s, r.min_s, r.iqr_s) == (3e-6, 1e-6, pytest.approx(2e-6))
    assert r.gbps == pytest.approx(2_000_000 / 3e-6 / 1e9)             # 666.7 GB/s
    assert r.peak_fraction == pytest.approx(r.gbps / 1000.0) and not r.cache_resident


def test_faster_than_the_peak_is_cache_resident() -> None:
    r = timed(peak_gbps=500.0)
    assert r.peak_fraction == pytest.approx(1.333, rel=1e-3) and r.cache_resident


def test_a_peak_without_a_source_is_unverified() -> None:
    assert timed(peak_source=None).peak_source == "unverified"


def test_without_a_peak_there_is_no_fraction_and_no_cache_claim() -> None:
    r = timed(peak_gbps=None, peak_source="ignored")
    assert (r.peak_gbps, r.peak_source, r.peak_fraction, r.cache_resident) == (None, None, None, False)


def test_json_round_trip() -> None:
    r = timed()
    assert TimingRecord.from_json(r.to_json()) == r
    assert record.read(r.to_json()) == r
    assert record.read({"status": "not timed", "reason": "no hook"}) == NotTimed("no hook")
    assert NotTimed("x").to_json() == {"status": "not timed", "reason": "x"}


BAD = [
    (lambda j: j.pop("rounds"), "timing: missing field 'rounds'"),
    (lambda j: j.update(extra=1), "timing: unknown field 'extra'"),
    (lambda j: j.update(clock="wall"), "timing: clock 'wall' is not one of device, host"),
    (lambda j: j.update(cache="hot"), "timing: cache 'hot' is not one of cold, warm"),
    (lambda j: j.update(rounds=[]), "timing: rounds must be a non-empty list of positive seconds"),
    (lambda j: j.update(rounds=[1e-6, -1e-6]), "timing: rounds must be a non-empty list of positive seconds"),
    (lambda j: j.update(launches=True), "timing: field 'launches' is True, expected int"),
    (lambda j: j.update(median_s="inf"), "timing: field 'median_s' is 'inf', expected a finite number"),
    (lambda j: j.update(median_s=float("nan")), "timing: field 'median_s' is nan, expected a finite number"),
    (lambda j: j.update(launches=0), "timing: launches must be >= 1 and bytes >= 0"),
    (lambda j: j.update(min_s=0.0), "timing: median_s and min_s must be > 0, iqr_s >= 0"),
]


@pytest.mark.parametrize("spoil,message", BAD, ids=[m for _, m in BAD])
def test_a_bad_record_is_one_line_naming_the_field(spoil, message: str) -> None:
    j = timed().to_json()
    spoil(j)
    with pytest.raises(TimingError) as e:
        TimingRecord.from_json(j)
    assert str(e.value) == message


def test_a_bad_not_timed_record_is_refused() -> None:
    for bad in ({"status": "timed", "reason": "r"}, {"status": "not timed"}, {"status": "not timed", "reason": 1}):
        with pytest.raises(TimingError):
            record.read(bad)
    assert record.problems([1]) == ["timing is list, not an object"]


def test_results_json_takes_a_timing_field_and_checks_it() -> None:
    doc = results.make_document({}, [])
    rec = sample_record("k")
    doc = {**doc, "records": [rec], "counts": results.count_outcomes([rec])}
    base_errors = results.validate(doc)              # the sample's run fields are not the point here
    for timing in (timed().to_json(), {"status": "not timed", "reason": "no timing hook"}):
        with_timing = copy.deepcopy(doc)
        with_timing["records"][0]["timing"] = timing
        assert results.validate(with_timing) == base_errors
    bad = copy.deepcopy(doc)
    bad["records"][0]["timing"] = {**timed().to_json(), "clock": "wall"}
    assert results.validate(bad) == base_errors + ["records[0].timing: clock 'wall' is not one of device, host"]


def test_make_record_carries_the_timing_field_and_leaves_it_out_otherwise() -> None:
    t = timed().to_json()
    assert results.make_record({"key": "k", "timing": t}, "passed", None)["timing"] == t
    assert "timing" not in results.make_record({"key": "k"}, "passed", None)


def test_exactly_the_peak_is_not_cache_resident() -> None:
    peak = 2**30 / 1e9                                   # 1 KiB in 2^-20 s
    kw = dict(clock="device", source="simulated", cache="cold", launches=1, nbytes=2**10, peak_source="s")
    at = TimingRecord.of_rounds([2.0**-20] * 5, peak_gbps=peak, **kw)
    assert at.peak_fraction == 1.0 and not at.cache_resident
    above = TimingRecord.of_rounds([2.0**-20] * 5, peak_gbps=float(np.nextafter(peak, 0)), **kw)
    assert above.peak_fraction > 1.0 and above.cache_resident
