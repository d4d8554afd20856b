"""Tables over a run's records: per operator x dtype x product counts and worst ulp error, shape
classes for the coverage grid, and the plain-text and Markdown renderings (terminal, summary.md)."""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from suite.report.results import number
from suite.report.timing import timing_lines
from suite.report import interleaved

LARGE = 4096                       # output elements from which a case counts as "large"


def dtype_label(r: Mapping) -> str:
    ins = [d for d in r["dtypes"].values() if d is not None]
    head = "/".join(dict.fromkeys(ins)) or "-"
    out = r.get("out_dtype")
    return head if out is None or [out] == list(dict.fromkeys(ins)) else f"{head}->{out}"


def shape_class(r: Mapping) -> str:
    """empty, large, broadcast, or rank N (of the output), first that applies."""
    shapes = [s for s in r["shapes"].values() if s is not None]
    out = r.get("out_shape")
    every = shapes + ([out] if out is not None else [])
    if any(0 in s for s in every):
        return "empty"
    if out is not None and math.prod(out) >= LARGE:
        return "large"
    if len({tuple(s) for s in shapes}) > 1:
        return "broadcast"
    return f"rank {len(out if out is not None else (shapes[0] if shapes else []))}"


def shape_classes() -> List[str]:
    return [f"rank {i}" for i in range(9)] + ["broadcast", "empty", "large"]


class Group:
    __slots__ = ("passed", "failed", "skipped", "xfailed", "xpassed", "worst")

    def __init__(self) -> None:
        self.passed = self.failed = self.skipped = self.xfailed = self.xpassed = 0
        self.worst: Optional[float] = None

    def add(self, r: Mapping) -> None:
        setattr(self, r["outcome"], getattr(self, r["outcome"]) + 1)
        u = number((r.get("metrics") or {}).get("max_ulp"))
        if u is not None and (self.worst is None or u > self.worst or math.isnan(u)):
            self.worst = u

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped + self.xfailed + self.xpassed


def by(records: Iterable[Mapping], key) -> "OrderedDict[Any, Group]":
    groups: Dict[Any, Group] = {}
    for r in records:
        groups.setdefault(key(r), Group()).add(r)
    return OrderedDict(sorted(groups.items(), key=lambda kv: tuple(str(x) for x in kv[0])))


def op_dtype_product(r: Mapping) -> Tuple[str, str, str]:
    return r["op"], dtype_label(r), r["product"]


def fmt_ulp(u: Optional[float]) -> str:
    return "-" if u is None else f"{u:.3g} ulp"


def terminal_lines(records: List[Mapping], key=op_dtype_product) -> List[str]:
    """One line per group of `key` (default operator x dtype x product), columns aligned."""
    rows = []
    for k, g in by(records, key).items():
        extra = "".join(f" {n} {name}" for name, n in (("xfailed", g.xfailed), ("xpassed", g.xpassed)) if n)
        rows.append((*k, f"{g.passed} passed {g.failed} failed {g.skipped} skipped{extra}",
                     f"worst {fmt_ulp(g.worst)}"))
    if not rows:
        return []
    n = len(rows[0]) - 1
    widths = [max(len(r[i]) for r in rows) for i in range(n)]
    return ["  ".join(r[i].ljust(widths[i]) for i in range(n)) + "  " + r[n] for r in rows]


def within_standard(records: Iterable[Mapping]) -> List[str]:
    """The passed determinism records whose operator is not deterministic on their product by its
    contract (judged within standard, not bit for bit): one line per operator and product, so a
    reader never takes them for bit-identical runs."""
    groups: Dict[Tuple[str, str], int] = {}
    for r in records:
        if r.get("kind") == "determinism" and r["outcome"] == "passed" and \
                str(r.get("reason") or "").startswith("not deterministic on "):
            groups[(r["op"], r["product"])] = groups.get((r["op"], r["product"]), 0) + 1
    return [f"{op} on {prod}: {n} determinism test{'s' if n != 1 else ''} judged within standard, not bit "
            f"for bit (not deterministic on {prod} by its contract)" for (op, prod), n in sorted(groups.items())]


def status_lines(doc: Mapping) -> List[str]:
    """Markdown paragraphs for a run that did not finish and for incidents outside any case: first,
    so that nobody mistakes a partial table for a result."""
    out = []
    if doc.get("complete", True) is False:
        out += [f"**INCOMPLETE RUN**: {doc.get('incomplete') or 'the run did not finish'}. The counts below "
                f"cover only the cases that finished; `report diff` and `report merge` refuse this file "
                f"without --allow-incomplete.", ""]
    incidents = doc.get("incidents") or []
    if incidents:
        out += [f"**Incidents outside any case ({len(incidents)}), which fail the run:**", ""]
        out += [f"- {x}" for x in incidents] + [""]
    return out


def _md_row(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def markdown(doc: Mapping, max_failures: int = 200) -> str:
    """summary.md: the run, a table per operator x dtype x product, then every failure's reproducer."""
    recs = doc["records"]
    c = doc["counts"]
    be = doc["backend"]
    lines = [f"# aclnn conformance: backend `{be.get('name') or be.get('spec')}`",
             "",
             f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped, {c['xfailed']} xfailed, "
             f"{c['xpassed']} xpassed; products {', '.join(doc['products'])}; suite {doc['suite_version']}, "
             f"goldens `{doc['manifest_hash'][:12]}`" + (f", shard {doc['shard']}" if doc.get("shard") else ""),
             ""] + [line for line in status_lines(doc)] + [
             _md_row(["operator", "dtype", "product", "passed", "failed", "skipped", "xfailed", "xpassed",
                      "worst ulp"]),
             _md_row(["---"] * 3 + ["---:"] * 6)]
    for (op, dt, prod), g in by(recs, op_dtype_product).items():
        lines.append(_md_row([op, dt, prod, g.passed, g.failed, g.skipped, g.xfailed, g.xpassed,
                              "-" if g.worst is None else f"{g.worst:.3g}"]))
    within = within_standard(recs)
    if within:
        lines += [""] + [f"- {x}" for x in within]
    lines += timing_lines(recs, _md_row) + interleaved.lines(doc, _md_row)
    failed = [r for r in recs if r["outcome"] == "failed"]
    if failed:
        lines += ["", f"## Failures ({len(failed)})", ""]
        for r in failed[:max_failures]:
            lines.append(f"- `{r['case']}` ({r['kind']}): {r.get('reason') or ''}")
            if r.get("reproduce"):
                lines.append(f"  `{r['reproduce']}`")
        if len(failed) > max_failures:
            lines.append(f"- ... and {len(failed) - max_failures} more (see results.json)")
    xp = [r for r in recs if r["outcome"] == "xpassed"]
    if xp:
        lines += ["", f"## Known failures that now pass ({len(xp)}): delete them from the list", ""]
        lines += [f"- `{r['case']}` ({r['kind']})" for r in xp[:max_failures]]
    return "\n".join(lines) + "\n"
