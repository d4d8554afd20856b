"""summary.md leads with the verdict and the failures (issue 42, item 7), like report.html: the
PASS or FAIL word (the same verdict as the banner and the exit status, suite/report/verdict.py) on
the line after the title, then the failures grouped by what they share, largest group first, before
the tables; the full list of failures follows the tables in the groups' order, not alphabetically."""
from __future__ import annotations

from suite.report import lead, results, summarymd, verdict
from tests.reportkit import sample_record


def _doc(records, **run):
    return {"schema_version": 2, "suite_version": "0", "backend": {"name": "fake", "spec": "fake", "options": {}},
            "products": ["atlas-a2"], "standard_override": None, "manifest_hash": "0" * 64, "machine": {},
            "shard": None, "counts": results.count_outcomes(records), "complete": True, "incomplete": None,
            "incidents": [], "records": records, **run}


def _failed(key, product="atlas-a2", reason="fails standard 'cann': 3 elements over"):
    return {**sample_record(key, "failed"), "case": key, "product": product, "reason": f"{key}: {reason}",
            "reproduce": f"pytest '{key}'", "metrics": {"max_ulp": 9.0},
            "worst": [{"index": [1], "inputs": None, "golden": 1.0, "lo": 1.0, "hi": 1.0, "got": 2.0, "error": 9.0,
                       "unit": "ulp", "why": "gross"}]}


def _many_passed(n=120):
    return [{**sample_record(f"a{i:03d}"), "case": f"a{i:03d}", "metrics": {"max_ulp": 0.25}} for i in range(n)]


def test_a_failed_run_says_fail_and_why_on_the_line_after_the_title():
    doc = _doc(_many_passed() + [_failed("z1")], incidents=["gw0: the backend's process exited 3 in close()"])
    lines = summarymd.markdown(doc).splitlines()
    assert lines[0].startswith("# aclnn conformance") and lines[1] == ""
    assert lines[2] == "**FAIL**: 1 failed; 1 incident outside any case" == \
        "**FAIL**: " + "; ".join(verdict.verdict(doc)[1])


def test_a_passed_run_says_pass():
    lines = summarymd.markdown(_doc(_many_passed(3))).splitlines()
    assert lines[2] == "**PASS**" and "## Failures" not in "\n".join(lines)


def test_the_failures_come_first_grouped_largest_first_and_the_full_list_in_that_order():
    # 120 passing records sort before the failures; the larger group (atlas-a3, 3 cases) sorts after
    # the smaller (atlas-a2, 1 case) by key, yet leads.
    small = [_failed("m1", "atlas-a2")]
    large = [_failed(f"z{i}", "atlas-a3") for i in range(3)]
    text = summarymd.markdown(_doc(_many_passed() + small + large))
    lines = text.splitlines()
    groups_at = lines.index("## Failures by what they share: 4 in 2 groups")
    assert groups_at < 12 and groups_at < lines.index("## Per operator, dtype and product")
    first, second = [i for i, x in enumerate(lines) if x[:3] in ("1. ", "2. ")]
    assert lines[first].startswith("1. **3 failures**: ") and "atlas-a3" in lines[first]
    assert lines[second].startswith("2. **1 failure**: ") and "atlas-a2" in lines[second]
    assert lines[first + 1] == ("   - worst element `[1]`: got 2, golden 1, window [1, 1], error 9 ulp (gross), "
                                "in case `z0`")
    assert lines[first + 2] == "   - fails standard 'cann': 3 elements over" == "   - " + lead.message(large[0])
    assert lines[first + 3] == "   - `pytest 'z0'`"
    listed = [x.split("`")[1] for x in lines[lines.index("## Failures (4)"):] if x.startswith("- `")]
    assert listed == ["z0", "z1", "z2", "m1"]


def test_an_incomplete_run_still_says_why_before_the_failures():
    doc = _doc(_many_passed(2) + [_failed("z1")], complete=False, incomplete="interrupted")
    text = summarymd.markdown(doc)
    assert text.index("**FAIL**: 1 failed; the run did not finish: interrupted") < text.index("**INCOMPLETE RUN**") \
        < text.index("## Failures by what they share")
