"""The journal is what is left of a killed run: `recover` keeps every finished record, drops only
the line the kill cut short, and refuses anything else that is not a record, naming the line."""
from __future__ import annotations

import json

import pytest

from suite.report import journal
from suite.report.results import ResultsError
from tests.reportkit import sample_record as _record

RUN = {"backend": {"spec": "reference", "options": {}}, "products": ["atlas-a2"], "standard_override": None,
       "manifest_hash": "0" * 64, "machine": {}, "shard": None}


def _write(tmp_path, lines, newline_at_end=True):
    path = tmp_path / journal.JOURNAL
    text = "\n".join(lines) + ("\n" if newline_at_end else "")
    path.write_text(text)
    return path


def _head():
    return json.dumps({"journal": journal.VERSION, "run": RUN})


@pytest.fixture
def valid_record(tmp_path):
    """A record the schema accepts (so the tests below fail for what they claim, not the schema)."""
    journal.recover(_write(tmp_path, [_head(), json.dumps(_record("a"))]))
    return _record


def test_every_finished_record_is_recovered_and_the_run_is_marked_killed(tmp_path, valid_record):
    path = _write(tmp_path, [_head(), json.dumps(valid_record("a")), json.dumps(valid_record("b", "failed"))])
    doc = journal.recover(path)
    assert [r["key"] for r in doc["records"]] == ["a", "b"]
    assert doc["complete"] is False and "2 finished cases recovered" in doc["incomplete"]


def test_only_the_line_the_kill_cut_short_is_dropped(tmp_path, valid_record):
    cut = json.dumps(valid_record("b"))[:40]
    doc = journal.recover(_write(tmp_path, [_head(), json.dumps(valid_record("a")), cut], newline_at_end=False))
    assert [r["key"] for r in doc["records"]] == ["a"]


@pytest.mark.parametrize("where", ["middle", "last, with its newline"])
def test_a_line_that_is_not_json_is_refused_with_its_number(tmp_path, valid_record, where):
    lines = [_head(), json.dumps(valid_record("a")), "garbage{"]
    if where == "middle":
        lines.append(json.dumps(valid_record("b")))
    with pytest.raises(ResultsError, match=rf"{journal.JOURNAL}:3: not a JSON line"):
        journal.recover(_write(tmp_path, lines))


@pytest.mark.parametrize("line", ['["a list"]', '{"no": "key"}', '{"key": 7}'])
def test_a_json_line_that_is_not_a_record_is_refused(tmp_path, valid_record, line):
    with pytest.raises(ResultsError, match=rf"{journal.JOURNAL}:3: not a record"):
        journal.recover(_write(tmp_path, [_head(), json.dumps(valid_record("a")), line]))


@pytest.mark.parametrize("head", ['{"journal": 2, "run": {}}', '{"journal": 1}', '{"journal": 1, "run": []}', "[]"])
def test_a_journal_must_start_with_its_header(tmp_path, head):
    with pytest.raises(ResultsError, match=rf"{journal.JOURNAL}:1: not a journal of version 1"):
        journal.recover(_write(tmp_path, [head, json.dumps(_record("a"))]))


def test_an_empty_or_missing_journal_is_refused(tmp_path):
    with pytest.raises(ResultsError, match="no journal"):
        journal.recover(tmp_path / journal.JOURNAL)
    with pytest.raises(ResultsError, match="empty journal"):
        journal.recover(_write(tmp_path, [""]))


def test_a_record_the_schema_refuses_is_not_recovered(tmp_path):
    bad = dict(_record("a"), outcome="green")
    with pytest.raises(ResultsError, match="does not make a valid results.json"):
        journal.recover(_write(tmp_path, [_head(), json.dumps(bad)]))


def test_the_last_record_of_a_key_wins(tmp_path, valid_record):
    doc = journal.recover(_write(tmp_path, [_head(), json.dumps(valid_record("a", "failed")),
                                            json.dumps(valid_record("a"))]))
    assert [(r["key"], r["outcome"]) for r in doc["records"]] == [("a", "passed")]
