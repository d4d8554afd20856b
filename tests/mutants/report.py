"""The kill table: every mutant (the gallery's generic ones and every operator's own), run
in-process over the fixed case subset.

`python -m tests.mutants.report` regenerates it in docs/mutants.md (between its two markers) and
prints it; `--scale` does the same for the scale mutants' table; `--print` only prints."""
from __future__ import annotations

from functools import lru_cache
from typing import List, NamedTuple, Sequence

from suite.cases.model import Case
from tests.mutants import harness, registry

BEGIN, END = "<!-- kill table: python -m tests.mutants.report -->", "<!-- end of kill table -->"
SCALE_BEGIN = "<!-- scale table: python -m tests.mutants.report --scale -->"
SCALE_END = "<!-- end of scale table -->"


class Row(NamedTuple):
    mutant: str
    description: str
    kills: int                 # killing cases in the subset
    kinds: str                 # kinds of check that failed
    example: str               # one killing case id ("" if none)


def judged_on(m, cases: Sequence[Case]) -> List[Case]:
    """The cases that judge a mutant: its operators' (an operator's mutant runs the control on
    every other operator, which passes them), or all for a generic one."""
    return [c for c in cases if m.operators is None or c.op in m.operators]


@lru_cache(maxsize=None)
def outcome(name: str) -> harness.Outcome:
    """The mutant `name` over the subset (cached: the tests and the table share it)."""
    m = registry.by_name(name)
    return harness.run_backend(m(), judged_on(m, harness.subset()))


def kill_table() -> List[Row]:
    rows = []
    for m in registry.gallery_mutants():
        o = outcome(m.__name__)
        ids = o.killing_cases
        rows.append(Row(m.__name__, m.description, len(ids), ", ".join(o.kinds()),
                        min(ids, key=lambda i: (len(i), i)) if ids else ""))
    return rows


def markdown(rows: List[Row]) -> str:
    killed = sum(1 for r in rows if r.kills)
    generic = {m.__name__ for m in registry.all_mutants() if m.operators is None}
    lines = [f"Subset: {len(harness.subset())} of the {len(harness.small_cases())} small cases "
             f"(pairwise covering, the same for every mutant). Killed: {killed} of {len(rows)} "
             f"({killed / len(rows):.0%}): {sum(r.mutant in generic for r in rows)} generic, "
             f"{sum(r.mutant not in generic for r in rows)} of the operators' own "
             f"(judged on their operator's cases).",
             "",
             "| mutant | defect | killing cases | failed checks | example case |",
             "| --- | --- | ---: | --- | --- |"]
    for r in rows:
        lines.append(f"| `{r.mutant}` | {r.description} | {r.kills} | {r.kinds} | `{r.example}` |")
    return "\n".join(lines)


def scale_table() -> List[Row]:
    """Each scale mutant over the default run's scale cases, smallest first, up to its first
    failure (the case that kills it); the huge tier's mutant is listed with no kill."""
    from tests.mutants.scale import HUGE_ONLY, SCALE_MUTANTS
    cases = sorted(harness.scale_cases(), key=lambda c: (c.elements, c.id))
    rows = []
    for m in SCALE_MUTANTS:
        kill = None
        if m.__name__ not in HUGE_ONLY:
            for c in cases:
                o = harness.run_backend(m(), [c])
                if o.failures:
                    kill = (c.id, ", ".join(o.kinds()))
                    break
        rows.append(Row(m.__name__, m.description, int(kill is not None), kill[1] if kill else "",
                        kill[0] if kill else ""))
    return rows


def scale_markdown(rows: List[Row]) -> str:
    lines = [f"Scale mutants: {sum(r.kills for r in rows)} of {len(rows)} killed by the default run "
             f"(each passes every small case).", "",
             "| mutant | defect | failed check | first killing case (smallest) |", "| --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| `{r.mutant}` | {r.description} | {r.kinds or 'huge tier only'} | "
                     f"{'`' + r.example + '`' if r.example else '`--scale huge`'} |")
    return "\n".join(lines)


def write_docs(table: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace what lies between the markers in docs/mutants.md with `table`."""
    path = harness.ROOT / "docs" / "mutants.md"
    text = path.read_text()
    head, sep, rest = text.partition(begin)
    _, sep2, tail = rest.partition(end)
    if not (sep and sep2):
        raise SystemExit(f"{path}: the markers {begin!r} and {end!r} are missing")
    path.write_text(f"{head}{begin}\n\n{table}\n\n{end}{tail}")


if __name__ == "__main__":
    import sys
    scale = "--scale" in sys.argv
    text = scale_markdown(scale_table()) if scale else markdown(kill_table())
    if "--print" not in sys.argv:
        write_docs(text, *((SCALE_BEGIN, SCALE_END) if scale else (BEGIN, END)))
    print(text)
