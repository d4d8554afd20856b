"""The run's verdict as the reports state it (suite/report/verdict.py): each reason it gives, the
counts the banner shows, and the backend's fields as a reader sees them. That the banner's PASS
is the exit status's 0 is tests/test_plugin_exit_status.py's."""
from __future__ import annotations

import pytest

from suite.report import verdict as V


def _doc(outcomes=(), incidents=None, complete=True, incomplete=None, faults=()):
    recs = [{"key": f"k{i}", "outcome": o, **({"fault": faults[i]} if i < len(faults) else {})}
            for i, o in enumerate(outcomes)]
    counts = {}
    for o in outcomes:
        counts[o] = counts.get(o, 0) + 1
    doc = {"counts": counts, "records": recs, "complete": complete, "incomplete": incomplete}
    if incidents is not None:
        doc["incidents"] = incidents
    return doc


@pytest.mark.parametrize("doc,why", [
    (_doc(["passed"]), []),
    (_doc(["passed", "xfailed", "xpassed", "skipped"]), []),
    (_doc(["xpassed"]), []),
    (_doc(["failed", "failed", "passed"]), ["2 failed"]),
    (_doc(["passed"], incidents=["a"]), ["1 incident outside any case"]),
    (_doc(["passed"], incidents=["a", "b"]), ["2 incidents outside any case"]),
    (_doc(["passed"], incidents=None), []),
    (_doc(["passed"], complete=False, incomplete="interrupted by SIGINT after 1 cases"),
     ["the run did not finish: interrupted by SIGINT after 1 cases"]),
    (_doc(["passed"], complete=False), ["the run did not finish: incomplete"]),
    ({**_doc(["passed"]), "complete": None}, []),                     # only false is unfinished
    ({k: v for k, v in _doc(["passed"]).items() if k != "complete"}, []),   # version 1: finished
    (_doc([]), ["no case ran"]),
    (_doc(["skipped", "skipped"]), ["nothing judged: every case skipped"]),
    (_doc(["failed"], incidents=["a"], complete=False, incomplete="x"),
     ["1 failed", "1 incident outside any case", "the run did not finish: x"]),
    (_doc([], incidents=["a"], complete=False, incomplete="no conformance case ran"),
     ["1 incident outside any case", "the run did not finish: no conformance case ran", "no case ran"]),
])
def test_each_reason_of_a_run_that_did_not_pass(doc, why):
    assert V.verdict(doc) == (not why, why)


def test_the_reasons_from_the_live_session_are_the_same():
    assert V.reasons({"failed": 1, "passed": 2}, 3, 0, None) == ["1 failed"]
    assert V.reasons({"skipped": 1}, 1, 0, None) == ["nothing judged: every case skipped"]
    assert V.reasons({"skipped": 1, "xfailed": 1}, 2, 0, None) == []
    # judged is the sum of the four outcomes that judged a case: none cancels another
    assert V.reasons({"passed": 1, "xpassed": 1}, 2, 0, None) == []
    assert V.reasons({"passed": 1, "failed": 1, "skipped": 1}, 3, 0, None) == ["1 failed"]
    assert V.reasons({}, 0, 3, "why") == ["3 incidents outside any case", "the run did not finish: why", "no case ran"]


def test_the_counts_add_the_faults_and_the_incidents_as_errors():
    doc = _doc(["passed", "failed", "failed", "skipped"], incidents=["x", "y"], faults=[None, "exit 0", "deadline"])
    assert V.counts(doc) == {"passed": 1, "failed": 2, "skipped": 1, "xfailed": 0, "xpassed": 0, "errors": 4}
    assert V.counts(_doc(["passed"]))["errors"] == 0


@pytest.mark.parametrize("options,text", [
    ({}, "none"), (None, "none"), ({"device": 1, "mode": "fast"}, "device=1 mode=fast"), ("raw", "raw"),
    (["a"], "['a']")])
def test_backend_options_read_as_the_command_line_takes_them(options, text):
    assert V.options_text(options) == text


def test_a_backend_change_names_each_field_that_differs_and_only_those():
    base = {"spec": "fake", "options": {}, "products": ["atlas-a2", "atlas-training"], "name": "n", "version": None}
    new = {"spec": "fake", "options": {"factor": 2}, "products": [], "name": "n", "version": "1.2", "extra": True}
    assert V.backend_change(base, new) == ("options none -> factor=2; products atlas-a2, atlas-training -> -; "
                                           "version - -> 1.2; extra - -> True")
    assert V.backend_change(base, dict(base)) == ""
