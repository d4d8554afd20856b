"""Known-failures files (suite/report/knownfail.py), in-process: which cases an entry excuses (the first
entry that lists a case decides its reason and strictness), which patterns are stale, and every
mistake in the file as one error naming file, line and field, the field never first in its entry."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest

from suite.report import knownfail
from suite.report.knownfail import Entry
from suite.common.yamlfile import FileError
from tests.core_helpers import marked_line


def _load(tmp_path: Path, text: str):
    path = tmp_path / "known.yaml"
    path.write_text(text)
    return path, knownfail.load_file(path)


def test_entries_as_read(tmp_path: Path) -> None:
    path, entries = _load(tmp_path, """\
- reason: "  mean divides in bfloat16  "
  cases: "Op-bfloat16-*-mean-*"
- strict: true
  issue: https://example.org/issues/12
  reason: fixed upstream
  cases: [Op-float32-a, "Op-float16-?"]
- cases: x
  reason: r
  issue: null
  strict: false
""")
    assert entries == [
        Entry(("Op-bfloat16-*-mean-*",), "mean divides in bfloat16", None, False, f"{path}:1"),
        Entry(("Op-float32-a", "Op-float16-?"), "fixed upstream", "https://example.org/issues/12", True, f"{path}:3"),
        Entry(("x",), "r", None, False, f"{path}:7"),
    ]
    assert entries[0].text == "mean divides in bfloat16"
    assert entries[1].text == "fixed upstream (https://example.org/issues/12)"


def test_an_empty_file_lists_nothing(tmp_path: Path) -> None:
    assert _load(tmp_path, "")[1] == [] and _load(tmp_path, "# nothing yet\n")[1] == []
    assert _load(tmp_path, "[]\n")[1] == []


ENTRIES = [Entry(("Op-*-mean-*",), "mean", None, False, "k:1"),
           Entry(("Op-float16-?", "Op-bf16-[ab]"), "short", "i", True, "k:3"),
           Entry(("*-mean-x",), "late", None, False, "k:6")]


@pytest.mark.parametrize("case_id,where", [
    ("Op-float16-a2-mean-2x3", "k:1"),
    ("Op-float16-a2-mean-x", "k:1"),             # two entries list it: the first decides
    ("Other-float16-a2-mean-x", "k:6"),
    ("Op-float16-a", "k:3"),
    ("Op-float16-ab", None),                     # ? is one character
    ("Op-bf16-b", "k:3"),
    ("Op-bf16-c", None),
    ("op-float16-a2-mean-2x3", None),            # case matters
    ("Op-float16-a2-sum-2x3", None),
    ("", None),
])
def test_match_takes_the_first_entry_that_lists_a_case(case_id: str, where: Optional[str]) -> None:
    e = knownfail.match(ENTRIES, case_id)
    assert (e.where if e else None) == where
    assert knownfail.match([], case_id) is None


def test_unused_patterns_are_named_with_their_entry() -> None:
    ids = ["Op-float16-a2-mean-2x3", "Op-bf16-a"]
    assert knownfail.unused(ENTRIES, ids) == [(ENTRIES[1], "Op-float16-?"), (ENTRIES[2], "*-mean-x")]
    assert knownfail.unused(ENTRIES, iter(ids)) == [(ENTRIES[1], "Op-float16-?"), (ENTRIES[2], "*-mean-x")]
    assert knownfail.unused(ENTRIES, []) == [(e, p) for e in ENTRIES for p in e.patterns]
    assert knownfail.unused([], ids) == []


# text with the bad line marked #< (none: the entry's first line) -> (field, the whole message)
BAD = {
    "not a list": ("cases: a #<\nreason: r\n", None, "a known-failures file is a list of entries"),
    "a scalar": ("just words #<\n", None, "a known-failures file is a list of entries"),
    "a mapping further down": ("# known failures of the fake backend\n\ncases: a #<\nreason: r\n", None,
                               "a known-failures file is a list of entries"),
    "entry not a mapping": ("- {cases: a, reason: r}\n- a* #<\n", None, "an entry is a mapping with cases and reason"),
    "unknown field": ("- cases: a\n  reason: r\n  owner: me #<\n", "owner",
                      "unknown field (known: cases, issue, reason, strict)"),
    "no reason": ("- {cases: a, reason: r}\n- cases: b #<\n  issue: i\n", "reason", "required"),
    "no cases": ("- issue: i #<\n  reason: r\n", "cases", "required"),
    "cases empty list": ("- reason: r\n  cases: [] #<\n", "cases", "a case id glob or a non-empty list of them"),
    "cases empty string": ("- reason: r\n  cases: '' #<\n", "cases", "a case id glob or a non-empty list of them"),
    "cases a number": ("- reason: r\n  cases: 3 #<\n", "cases", "a case id glob or a non-empty list of them"),
    "cases with a number": ("- reason: r\n  cases: [a, 3] #<\n", "cases", "a case id glob or a non-empty list of them"),
    "cases with an empty one": ("- reason: r\n  cases: [a, ''] #<\n", "cases",
                                "a case id glob or a non-empty list of them"),
    "reason blank": ("- cases: a\n  reason: '   ' #<\n", "reason", "a non-empty string"),
    "reason a number": ("- cases: a\n  reason: 12 #<\n", "reason", "a non-empty string"),
    "issue a number": ("- cases: a\n  reason: r\n  issue: 12 #<\n", "issue", "a link (string)"),
    "strict a word": ("- cases: a\n  reason: r\n  strict: yes please #<\n", "strict", "true or false"),
    "strict a number": ("- cases: a\n  reason: r\n  strict: 1 #<\n", "strict", "true or false"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_mistake_names_file_line_and_field(tmp_path: Path, name: str) -> None:
    text, field, message = BAD[name]
    path = tmp_path / "known.yaml"
    path.write_text(text)
    with pytest.raises(FileError) as e:
        knownfail.load_file(path)
    line = marked_line(text)
    assert (e.value.path, e.value.line, e.value.field) == (str(path), line, field)
    assert str(e.value) == f"{path}:{line}: " + (f"field '{field}': " if field else "") + message
