"""The project carries its own contracts: no tracked file points outside the repository at the
team's old notes, and every relative link in the README and the docs leads to a file that exists."""
import re
import subprocess
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Built in two pieces so that this file does not match itself.
OUTSIDE = ".." + "/shared"
# The old notes' page names, as the project used to cite them (the directory "spec", a slash,
# then one of these names and ".md").
OLD_PAGES = re.compile(r"(?<![\w/.-])" + "spec" + r"/(?:\*|aclnn|precision|backend-contract|README|"
                       r"MseLossBackward|KlDivBackward)\.md")

FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
INLINE_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def tracked_files() -> List[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no list of tracked files")
    return [ROOT / p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def link_targets(text: str) -> Iterator[str]:
    """Targets of inline links, images and reference definitions, outside code blocks and spans."""
    text = CODE_SPAN.sub("", FENCE.sub("", text))
    for m in INLINE_LINK.finditer(text):
        yield m.group(1)
    for m in REFERENCE_DEF.finditer(text):
        yield m.group(1)


def broken_links(md: Path) -> List[Tuple[str, str]]:
    """(target, why) for each relative link of `md` that points at no file."""
    bad = []
    for target in link_targets(md.read_text(encoding="utf-8")):
        if SCHEME.match(target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0].split("?", 1)[0]
        resolved = (md.parent / path).resolve()
        if resolved.exists():
            continue
        try:
            rel = resolved.relative_to(ROOT).as_posix()
        except ValueError:
            bad.append((target, "points outside the repository"))
            continue
        bad.append((target, f"{rel} does not exist"))
    return bad


HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
HTML_ANCHOR = re.compile(r"<a\s[^>]*?(?:id|name)=\"([^\"]+)\"")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text (a link's words, a code span's content), lower
    case, without punctuation but hyphens and underscores, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(md: Path) -> set:
    """The anchors a page has: one per heading (a repeated one gets -1, -2, ...), and HTML ids."""
    text = FENCE.sub("", md.read_text(encoding="utf-8"))
    found, seen = set(), {}
    for m in HEADING.finditer(text):
        a = slug(m.group(1))
        n = seen.get(a, 0)
        seen[a] = n + 1
        found.add(a if n == 0 else f"{a}-{n}")
    return found | set(HTML_ANCHOR.findall(text))


def broken_anchors(md: Path) -> List[Tuple[str, str]]:
    """(target, why) for each link of `md` to a heading of a Markdown page (this one or another)
    that the page does not have."""
    bad = []
    for target in link_targets(md.read_text(encoding="utf-8")):
        if SCHEME.match(target) or "#" not in target:
            continue
        path, frag = target.split("#", 1)
        page = md if not path else (md.parent / path).resolve()
        if page.suffix != ".md" or not page.is_file():
            continue                         # (a missing page is broken_links' to say)
        if frag not in anchors(page):
            bad.append((target, f"{page.name} has no heading #{frag}"))
    return bad


def markdown_files() -> List[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_no_tracked_file_points_at_the_old_shared_notes() -> None:
    hits = []
    for f in tracked_files():
        if not f.is_file():
            continue
        data = f.read_bytes()
        if OUTSIDE.encode() in data:
            hits.append(f"{f.relative_to(ROOT)}: mentions {OUTSIDE}")
        if f.suffix in (".py", ".md", ".yaml", ".toml", ".c", ".h", ".txt") and b"\0" not in data:
            for m in OLD_PAGES.finditer(data.decode("utf-8", "replace")):
                hits.append(f"{f.relative_to(ROOT)}: cites {m.group(0)} (the in-project page is under docs/)")
    assert not hits, "\n".join(hits)


@pytest.mark.parametrize("md", markdown_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_point_at_files_that_exist(md: Path) -> None:
    bad = broken_links(md)
    assert not bad, "\n".join(f"{md.relative_to(ROOT)}: link {t!r}: {why}" for t, why in bad)


@pytest.mark.parametrize("md", markdown_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_to_a_heading_point_at_one_that_exists(md: Path) -> None:
    bad = broken_anchors(md)
    assert not bad, "\n".join(f"{md.relative_to(ROOT)}: link {t!r}: {why}" for t, why in bad)


def test_the_anchor_checker_sees_a_heading_missing(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# The page\n## Timing: `--timing` (issue 24)\n## Twice\n## Twice\n"
                                       "```\n# not a heading\n```\n<a id=\"kept\"></a>\n")
    md = tmp_path / "page.md"
    md.write_text("## Here\n[a](there.md#timing---timing-issue-24) [b](there.md#twice-1) [c](there.md#kept) "
                  "[d](#here) [e](there.md#timing) [f](there.md#not-a-heading) [g](#gone) [h](there.md#twice-2)\n")
    assert {t for t, _ in broken_anchors(md)} == {"there.md#timing", "there.md#not-a-heading", "#gone",
                                                 "there.md#twice-2"}


def test_the_case_files_section_names_every_operators_case_file() -> None:
    """docs/cases.md's "The case files" lists each operator's file (it once named 6 of 9)."""
    section = (ROOT / "docs/cases.md").read_text(encoding="utf-8").split("## The case files", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`cases/([a-z0-9_]+)\.yaml`", section))
    files = {p.stem for p in (ROOT / "cases").glob("*.yaml")} - {"tolerances", "hardware"}
    assert files and files <= named, f"case files docs/cases.md does not name: {sorted(files - named)}"


def test_the_operator_index_links_every_operator_page() -> None:
    index = (ROOT / "docs/operators/README.md").read_text(encoding="utf-8")
    linked = {t for t in link_targets(index)}
    pages = {p.name for p in (ROOT / "docs/operators").glob("*.md") if p.name != "README.md"}
    assert pages <= linked, f"operator pages missing from the index: {sorted(pages - linked)}"


def test_the_link_checker_sees_a_broken_link(tmp_path: Path) -> None:
    md = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("x")
    md.write_text("[ok](there.md#a) [gone](missing.md) ![img](nope.png) [web](https://example.org/x)\n"
                  "`[code](skipped.md)`\n```\n[fenced](skipped.md)\n```\n[ref]: also-missing.md\n")
    targets = list(link_targets(md.read_text()))
    assert "skipped.md" not in targets
    bad = {t for t, _ in broken_links(md)}
    assert bad == {"missing.md", "nope.png", "also-missing.md"}


def test_the_old_page_pattern_matches_what_it_should() -> None:
    assert OLD_PAGES.search("see " + "spec" + "/aclnn.md")
    assert OLD_PAGES.search("(" + "spec" + "/MseLossBackward.md)")
    assert not OLD_PAGES.search("docs/" + "spec" + "ial.md")
    assert not OLD_PAGES.search("the case's spec hash")


def _registered_options() -> List[str]:
    """Every option the suite's plugin adds to pytest (its four pytest_addoption hooks)."""
    from _pytest.config.argparsing import Parser

    from suite.plugin import accuracy, baseline, options, report
    p = Parser(_ispytest=True)
    for hook in (options.pytest_addoption, report.pytest_addoption, baseline.pytest_addoption,
                 accuracy.pytest_addoption):
        hook(p)
    return [name for o in p.getgroup("aclnn-conformance").options for name in o.names()]


def _documented_options(text: str) -> List[str]:
    """The options docs/running.md's option table names in its first column."""
    start = text.index("| option | meaning |")
    lines = text[start:].splitlines()[2:]
    rows = lines[:next((i for i, ln in enumerate(lines) if not ln.startswith("|")), len(lines))]
    return [m for ln in rows for m in re.findall(r"`(--[a-z-]+)", ln.split(" | ")[0])]


def test_every_option_of_the_suite_has_a_row_in_the_running_pages_table() -> None:
    """The words of `pytest --help` are data nobody tests word for word; what must hold is that a
    user finds each option on docs/running.md, and that the page names none that is gone."""
    registered = _registered_options()
    documented = _documented_options((ROOT / "docs" / "running.md").read_text())
    assert len(registered) >= 20 and len(set(documented)) == len(documented)
    assert sorted(set(registered) - set(documented)) == [], "options without a row on docs/running.md"
    assert sorted(set(documented) - set(registered)) == [], "rows of docs/running.md for no option"


def test_the_option_table_reader_sees_a_row_missing_or_left_over() -> None:
    page = ("| option | meaning |\n| --- | --- |\n| `--a X`, `--b=Y` | two |\n| `--c` | three |\n\n"
            "| `--later` | another table's row |\n")
    assert _documented_options(page) == ["--a", "--b", "--c"]
