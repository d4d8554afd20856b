"""The interleaved timing section of summary.md and report.html (pytest --timing --timing-baseline,
docs/timing.md "Interleaved"): one row per case timed against the baseline, with the verdict the
run computed (suite/perf/pair.py), both medians, the ratio and p, or why it is UNKNOWN. Its own
section beside the timing table, because it says something the table cannot: that the candidate is
slower than a named baseline measured in the same window, not merely how fast it was."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

from suite.perf import gate
from suite.perf.pair import seconds

HEADER = ["case", "verdict", "baseline median", "candidate median", "ratio", "p", "why"]
ORDER = (gate.REGRESSION, gate.IMPROVED, gate.SAME, gate.UNKNOWN)


def rows(records: Iterable[Mapping[str, Any]]) -> List[List[str]]:
    """HEADER's cells per record that carries `interleaved`, regressions first."""
    out = []
    for r in records:
        v = r.get("interleaved")
        if not isinstance(v, dict):
            continue
        num = lambda x, f: "-" if not isinstance(x, (int, float)) else f(x)   # noqa: E731
        out.append([r["case"], str(v.get("verdict")), num(v.get("base_median_s"), seconds),
                    num(v.get("cand_median_s"), seconds), num(v.get("ratio"), lambda x: f"x{x:.3f}"),
                    num(v.get("p"), lambda x: f"{x:.2g}"), str(v.get("reason", ""))])
    rank = {k: i for i, k in enumerate(ORDER)}
    return sorted(out, key=lambda c: rank.get(c[1], len(ORDER)))


def _title(doc: Mapping[str, Any], found: List[List[str]], code: Callable[[str], str]) -> str:
    counts: Dict[str, int] = {k: sum(c[1] == k for c in found) for k in ORDER}
    spec = (doc.get("timing_baseline") or {}).get("spec", "?")
    return (f"Interleaved timing against the baseline {code(spec)} ({len(found)} cases: "
            + ", ".join(f"{n} {k}" for k, n in counts.items() if n) + ")")


def lines(doc: Mapping[str, Any], row: Callable[[List[Any]], str]) -> List[str]:
    """The Markdown section (empty when no record carries `interleaved`)."""
    found = rows(doc["records"])
    if not found:
        return []
    return ["", f"## {_title(doc, found, lambda s: f'`{s}`')}", "", row(HEADER),
            row(["---", "---"] + ["---:"] * 4 + ["---"])] + [row([f"`{c[0]}`", *c[1:]]) for c in found]


def section_html(doc: Mapping[str, Any], escape: Callable[[Any], str]) -> str:
    """report.html's section (empty when no record carries `interleaved`)."""
    found = rows(doc["records"])
    if not found:
        return ""
    left = (0, 1, 6)
    head = "".join(f"<th{' class=l' if i in left else ''}>{escape(h)}</th>" for i, h in enumerate(HEADER))
    body = "".join(f"<tr{' class=bad' if c[1] == gate.REGRESSION else ''}>"
                   + "".join(f"<td{' class=l' if i in left else ' style=white-space:nowrap'}>{escape(x)}</td>"
                             for i, x in enumerate(c))
                   + "</tr>" for c in found)
    title = _title(doc, found, lambda s: f"<code>{escape(s)}</code>")
    return f"<h2>{title}</h2>\n<table><tr>{head}</tr>\n{body}</table>\n"
