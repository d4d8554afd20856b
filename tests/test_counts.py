"""The case and test counts the README and docs/ state are the ones the suite gives today.

Counts go stale silently: a case file gains a matrix and every "13,679 cases" in the prose is
wrong. So each count is written in one marked form, a link to the table of docs/figures.md whose
title names what it counts, e.g. ``[13,679 cases](docs/figures.md#counts "cases.total")``; this
test measures each label (``aclnn-conform cases list --count``, the case loader's tiers, and
``pytest --collect-only``) and fails on a marked figure that differs, on a label it does not know,
and on a current count written out without the mark (a copy nobody would update).
"""
from __future__ import annotations

import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures.md"

# A marked count: [<number> <words>](<path>figures.md#counts "<label>")
MARKED = re.compile(r"\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]*figures\.md#counts)\s+\"(?P<label>[^\"]+)\"\)")
# A row of the counts table: | `label` | number | ...
ROW = re.compile(r"^\|\s*`(?P<label>[a-z]+\.[a-z]+)`\s*\|\s*(?P<number>[\d,]+)\s*\|", re.M)
NUMBER = re.compile(r"\d[\d,]*")


def markdown_files() -> List[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _number(text: str) -> int:
    m = NUMBER.search(text)
    if not m:
        raise ValueError(f"no number in {text!r}")
    return int(m.group(0).replace(",", ""))


def marked_figures(text: str) -> Iterator[Tuple[int, str, str]]:
    """(line, label, text) of every marked count and every row of the counts table."""
    for m in MARKED.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group("label"), m.group("text")
    for m in ROW.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group("label"), m.group("number")


def unmarked(text: str, values: Dict[str, int]) -> Iterator[Tuple[int, str]]:
    """(line, figure) for each current count of four or more digits written outside the mark."""
    bare = ROW.sub("", MARKED.sub("", text))
    wanted = {v for v in values.values() if v >= 1000}
    for m in re.finditer(r"(?<![\w.,^-])\d{1,3}(?:,\d{3})+(?![\w,]|\.\d)|(?<![\w.,^-])\d{4,}(?![\w,]|\.\d)", bare):
        if _number(m.group(0)) in wanted:
            yield bare.count("\n", 0, m.start()) + 1, m.group(0)


def problems(files: Dict[str, str], values: Dict[str, int]) -> List[str]:
    """Every way the pages' counts disagree with `values` (label -> measured count)."""
    out = []
    for name, text in files.items():
        for line, label, figure in marked_figures(text):
            if label not in values:
                out.append(f"{name}:{line}: {figure!r} is marked {label!r}, which is no count this test "
                           f"measures ({', '.join(sorted(values))})")
            elif _number(figure) != values[label]:
                out.append(f"{name}:{line}: {figure!r} ({label}) but it is {values[label]:,} today")
        for line, figure in unmarked(text, values):
            out.append(f"{name}:{line}: {figure} is a current count written without the mark: "
                       f"link it to docs/figures.md#counts with its label")
    return out


def _tests_collected(*args: str) -> int:
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        *args, "suite/conformance"], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    m = re.search(r"^(\d+) tests? collected", r.stdout, re.M)
    assert r.returncode == 0 and m, r.stdout[-2000:] + r.stderr[-2000:]
    return int(m.group(1))


@lru_cache(maxsize=1)
def measured() -> Dict[str, int]:
    """Each label's count, by the commands docs/figures.md names for it."""
    r = subprocess.run([sys.executable, "-m", "suite.cli", "cases", "list", "--count"], cwd=ROOT,
                       capture_output=True, text=True, timeout=HANG_S)
    m = re.search(r"^\s*(\d+)\s+total$", r.stdout, re.M)
    assert r.returncode == 0 and m, r.stdout[-2000:] + r.stderr[-2000:]

    from suite.cases import load as cases_load
    from suite.cases import model as cases_model
    from suite.common.home import data_root
    from suite.golden import source as golden_source

    cases = cases_load.load_cases([data_root() / "cases"])[0]
    huge = [c for c in cases if c.tier == "huge"]
    # What --scale small runs: every rejection, and the numbers cases whose data is committed.
    small = [c for c in cases if c.tier != "huge" and (c.expect != cases_model.NUMBERS or golden_source.is_stored(c))]
    values = {"cases.total": int(m.group(1)), "cases.small": len(small),
              "cases.scale": len(cases) - len(small) - len(huge), "cases.huge": len(huge),
              "tests.default": _tests_collected(), "tests.small": _tests_collected("--scale", "small")}
    values["tests.scale"] = values["tests.default"] - values["tests.small"]
    assert values["cases.total"] == len(cases), "the CLI and the loader disagree on the cases"
    return values


def test_the_counts_table_names_every_count() -> None:
    assert FIGURES.is_file(), "docs/figures.md, which holds the counts table, is missing"
    rows = {m.group("label") for m in ROW.finditer(FIGURES.read_text(encoding="utf-8"))}
    assert rows >= set(measured()), f"docs/figures.md's counts table lacks {sorted(set(measured()) - rows)}"


def test_the_readme_states_its_counts_in_the_marked_form() -> None:
    found = {label for _, label, _ in marked_figures((ROOT / "README.md").read_text(encoding="utf-8"))}
    assert found, "README.md states no marked count: the test would check nothing there"


def test_every_count_in_the_readme_and_docs_is_current() -> None:
    files = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in markdown_files()}
    bad = problems(files, measured())
    assert not bad, "\n".join(bad)


def test_the_checker_sees_a_wrong_an_unknown_and_an_unmarked_count() -> None:
    values = {"cases.total": 13679, "tests.small": 17599, "cases.huge": 11}
    page = ('The files expand to [13,679 cases](figures.md#counts "cases.total") and\n'
            '[17,598 tests](figures.md#counts "tests.small") run small, [9 of them](figures.md#counts "cases.hug").\n'
            "A copy: 17,599 tests, and 13679 again; 1.17599 and 17,5990 and v13679 are not counts.\n"
            "| `cases.huge` | 12 | `aclnn-conform cases list --count` |\n")
    bad = problems({"p.md": page}, values)
    assert len(bad) == 5, bad
    assert "p.md:2: '17,598 tests' (tests.small) but it is 17,599 today" in bad
    assert any("'cases.hug', which is no count" in b for b in bad)
    assert sum("without the mark" in b for b in bad) == 2
    assert "p.md:4: '12' (cases.huge) but it is 11 today" in bad
    assert not problems({"p.md": page.replace("17,598", "17,599").replace("cases.hug\"", "cases.huge\"")
                         .replace("[9 of", "[11 of").replace("| 12 |", "| 11 |")
                         .replace("A copy: 17,599 tests, and 13679 again; ", "")}, values)
