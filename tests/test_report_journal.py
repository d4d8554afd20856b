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


def test_a_blank_line_between_records_is_skipped_not_the_end(tmp_path, valid_record):
    doc = journal.recover(_write(tmp_path, [_head(), json.dumps(valid_record("a")), "", "  ",
                                            json.dumps(valid_record("b"))]))
    assert [r["key"] for r in doc["records"]] == ["a", "b"]


def test_only_the_last_line_may_be_cut_short_when_the_journal_has_no_final_newline(tmp_path, valid_record):
    """A kill cuts the last line only: garbage before it is refused even when the file ends mid-line."""
    lines = [_head(), "garbage{", json.dumps(valid_record("a"))[:40]]
    with pytest.raises(ResultsError, match=rf"{journal.JOURNAL}:2: not a JSON line"):
        journal.recover(_write(tmp_path, lines, newline_at_end=False))


def test_a_journal_that_cannot_be_read_is_refused_with_the_reason(tmp_path):
    path = tmp_path / journal.JOURNAL
    path.write_bytes(b"\xff\xfe not utf-8\n")
    with pytest.raises(ResultsError, match=rf"{journal.JOURNAL}: cannot read: .*codec can't decode"):
        journal.recover(path)


def test_the_journal_is_read_as_utf8_whatever_the_locale(tmp_path, valid_record, monkeypatch):
    """The run writes its journal in UTF-8; a machine whose locale encoding is another (Windows'
    cp1252, a latin-1 locale) reads it back the same. Python takes the locale's encoding for a
    read that names none through io.text_encoding, which stands in for such a locale here."""
    import io
    real = io.text_encoding
    monkeypatch.setattr(io, "text_encoding", lambda enc, *a: "latin-1" if enc is None else real(enc, *a))
    run = dict(RUN, backend={"spec": "réference", "options": {}})
    path = tmp_path / journal.JOURNAL
    path.write_text(json.dumps({"journal": journal.VERSION, "run": run}, ensure_ascii=False) + "\n"
                    + json.dumps(valid_record("a")) + "\n", encoding="utf-8")
    assert journal.recover(path)["backend"]["spec"] == "réference"


def test_a_schema_refusal_names_the_first_five_errors(tmp_path):
    bad = [json.dumps(dict(_record(str(i)), outcome="green")) for i in range(7)]
    with pytest.raises(ResultsError, match="does not make a valid results.json: ") as e:
        journal.recover(_write(tmp_path, [_head()] + bad))
    named = str(e.value).split("valid results.json: ", 1)[1].split("; ")
    assert [n.split(":")[0] for n in named] == [f"records[{i}]" for i in range(5)]
    assert all("outcome 'green' not one of" in n for n in named)


def test_the_writer_flushes_each_record_as_a_line_recover_reads_back(tmp_path, valid_record):
    """What the run writes (Journal) is what recover reads: the header with the run, then one line per
    record, on disk as soon as it is added (a SIGKILL right after loses nothing)."""
    j = journal.Journal(tmp_path, RUN)
    assert j.path == tmp_path / journal.JOURNAL
    j.add(valid_record("a"))
    j.add(valid_record("b", "failed"))
    lines = j.path.read_text(encoding="utf-8").split("\n")        # before close: flushed
    assert lines[-1] == "" and json.loads(lines[0]) == {"journal": journal.VERSION, "run": RUN}
    assert [json.loads(x) for x in lines[1:-1]] == [valid_record("a"), valid_record("b", "failed")]
    doc = journal.recover(j.path)
    assert [(r["key"], r["outcome"]) for r in doc["records"]] == [("a", "passed"), ("b", "failed")]
    j.close(remove=False)
    j.add(valid_record("c"))                                    # after close: nothing more is written
    assert [r["key"] for r in journal.recover(j.path)["records"]] == ["a", "b"]


def test_the_writer_writes_strict_json_and_close_removes_the_journal_only_when_told(tmp_path):
    j = journal.Journal(tmp_path, RUN)
    with pytest.raises(ValueError):
        j.add({"key": "k", "x": float("nan")})                  # JSON has no NaN: results.jsonable_number first
    assert j.path.read_text(encoding="utf-8").count("\n") == 1
    j.close(remove=True)
    assert not j.path.exists()
    j.close(remove=True)                                        # twice: nothing left to close or remove
    kept = journal.Journal(tmp_path, dict(RUN, machine={"hostname": "réseau"}))
    kept.close(remove=False)
    assert json.loads(kept.path.read_bytes().decode("utf-8").split("\n")[0])["run"]["machine"] == {"hostname": "réseau"}


def test_the_journal_is_written_and_read_as_utf8_in_an_ascii_locale(tmp_path, valid_record):
    """A run on a machine whose locale is not UTF-8 (here: C, with Python's UTF-8 mode and locale
    coercion off, so the locale's encoding is ASCII) writes and recovers a non-ASCII run field: the
    writer escapes non-ASCII characters (json's ensure_ascii), so its lines are ASCII in any locale."""
    import os
    import subprocess
    import sys
    code = ("import json, sys; from suite.report import journal; "
            "j = journal.Journal(sys.argv[1], json.loads(sys.argv[2])); j.add(json.loads(sys.argv[3])); "
            "j.close(remove=False); print(journal.recover(j.path)['backend']['spec'] == 'r\\u00e9ference')")
    env = dict(os.environ, LC_ALL="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    run = dict(RUN, backend={"spec": "réference", "options": {}})
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path), json.dumps(run), json.dumps(valid_record("a"))],
                       env=env, capture_output=True, text=True)
    assert (r.returncode, r.stdout.strip()) == (0, "True"), r.stderr
    assert journal.recover(tmp_path / journal.JOURNAL)["backend"]["spec"] == "réference"
