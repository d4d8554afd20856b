"""The kill table: every mutant in the gallery, run in-process over the fixed case subset.

`python -m tests.mutants.report` prints it as Markdown (docs/mutants.md carries a copy)."""
from __future__ import annotations

from functools import lru_cache
from typing import List, NamedTuple

from tests.mutants import harness
from tests.mutants.gallery import BY_NAME, ISSUE2, MUTANTS


class Row(NamedTuple):
    mutant: str
    description: str
    kills: int                 # killing cases in the subset
    kinds: str                 # kinds of check that failed
    example: str               # one killing case id ("" if none)


@lru_cache(maxsize=None)
def outcome(name: str) -> harness.Outcome:
    """The mutant `name` over the subset (cached: the tests and the table share it)."""
    return harness.run_backend(BY_NAME[name](), harness.subset())


def kill_table() -> List[Row]:
    rows = []
    for m in MUTANTS:
        o = outcome(m.__name__)
        ids = o.killing_cases
        rows.append(Row(m.__name__, m.description, len(ids), ", ".join(o.kinds()),
                        min(ids, key=lambda i: (len(i), i)) if ids else ""))
    return rows


def markdown(rows: List[Row]) -> str:
    killed = sum(1 for r in rows if r.kills)
    lines = [f"Subset: {len(harness.subset())} of the {len(harness.small_cases())} small cases "
             f"(pairwise covering, the same for every mutant). Killed: {killed} of {len(rows)} "
             f"({killed / len(rows):.0%}). Issue 2's five are marked *.",
             "",
             "| mutant | defect | killing cases | failed checks | example case |",
             "| --- | --- | ---: | --- | --- |"]
    issue2 = {m.__name__ for m in ISSUE2}
    for r in rows:
        star = "*" if r.mutant in issue2 else ""
        lines.append(f"| `{r.mutant}`{star} | {r.description} | {r.kills} | {r.kinds} | `{r.example}` |")
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


if __name__ == "__main__":
    import sys
    if "--scale" in sys.argv:
        print(scale_markdown(scale_table()))
    else:
        print(markdown(kill_table()))
