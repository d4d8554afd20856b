"""summary.md: what a CI step summary shows. Like report.html it leads with the verdict (PASS or
FAIL and why, suite/report/verdict.py) and the failures grouped by what they share, largest group
first, each with its count, every failing output with its worst error, its worst element, message
and one reproducer (suite/report/groups.py); then the tables, and every failure in the groups'
order."""
from __future__ import annotations

from typing import Any, Iterable, List, Mapping

from suite.report import groups as G
from suite.report import accuracy, interleaved, summary, verdict
from suite.report.results import number
from suite.report.timing import timing_lines

MAX_GROUPS = 40           # groups shown at the top; every failure is listed after the tables


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


def _n(v: object, digits: int = 6) -> str:
    x = number(v)
    return "-" if x is None else f"{x:.{digits}g}"


def verdict_line(doc: Mapping) -> str:
    """`**PASS**`, or `**FAIL**: 3 failed; 1 incident outside any case`: report.html's banner word."""
    ok, why = verdict.verdict(doc)
    return "**PASS**" if ok else "**FAIL**: " + "; ".join(why)


def _element(g: G.FailureGroup) -> str:
    """The group's worst element with its numbers (its output named, for a call with several), or
    what came back when there is none."""
    w = g.worst()
    if w is None:
        return f"no element judged: {g.came_back()}, in case `{g.example()['case']}`"
    e, r, name = w
    unit = "ulp" if e.get("unit") == "ulp" else "absolute"
    return (f"worst element{'' if name is None else ' of ' + name} `{list(e.get('index') or [])}`: got "
            f"{_n(e.get('got'))}, golden {_n(e.get('golden'))}, window [{_n(e.get('lo'))}, {_n(e.get('hi'))}], "
            f"error {_n(e.get('error'), 4)} {unit}" + (f" ({e['why']})" if e.get("why") else "")
            + f", in case `{r['case']}`")


def group_lines(doc: Mapping) -> List[str]:
    """The failures grouped by what they share, largest first (none: no lines)."""
    gs = G.group_failures(doc["records"])
    if not gs:
        return []
    lines = [f"## Failures by what they share: {sum(g.count for g in gs)} in {len(gs)} "
                 f"group{'s' if len(gs) != 1 else ''}", ""]
    for i, g in enumerate(gs[:MAX_GROUPS], 1):
        lab = g.labels
        lines.append(f"{i}. **{g.count} failure{'s' if g.count != 1 else ''}**: " + " · ".join(
            [lab["operator"]] + [lab[k] for k in G.LABELS[1:] if lab[k] != "-"]))
        outs = g.failing_outputs()
        if outs:
            lines.append(f"   - failing output{'s' if len(outs) > 1 else ''}: "
                         + ", ".join(f"{n} (worst {_n(u, 4)} ulp)" for n, u in outs.items()))
        r = g.example()
        lines += [f"   - {_element(g)}", f"   - {G.message(r)}"]
        if r.get("reproduce"):
            lines.append(f"   - `{r['reproduce']}`")
    rest = gs[MAX_GROUPS:]
    if rest:
        lines.append(f"\n... and {len(rest)} more groups ({sum(g.count for g in rest)} failures), listed below")
    return lines


def markdown(doc: Mapping, max_failures: int = 200) -> str:
    """summary.md: the verdict, the run, the failures by group, a table per operator x dtype x
    product, then every failure with its reproducer."""
    recs = doc["records"]
    c = doc["counts"]
    be = doc["backend"]
    lines = [f"# aclnn conformance: backend `{be.get('name') or be.get('spec')}`", "", verdict_line(doc), "",
             f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped, {c['xfailed']} xfailed, "
             f"{c['xpassed']} xpassed; products {', '.join(doc['products'])}; suite {doc['suite_version']}, "
             f"goldens `{doc['manifest_hash'][:12]}`" + (f", shard {doc['shard']}" if doc.get("shard") else ""),
             ""] + status_lines(doc) + group_lines(doc) + [
             "", "## Per operator, dtype and product", "",
             _md_row(["operator", "dtype", "product", "passed", "failed", "skipped", "xfailed", "xpassed",
                      "worst ulp"]),
             _md_row(["---"] * 3 + ["---:"] * 6)]
    for (op, dt, prod), g in summary.by(recs, summary.op_dtype_product).items():
        lines.append(_md_row([op, dt, prod, g.passed, g.failed, g.skipped, g.xfailed, g.xpassed,
                              g.worst_text("")]))
    within = summary.within_standard(recs)
    if within:
        lines += [""] + [f"- {x}" for x in within]
    lines += timing_lines(recs, _md_row) + interleaved.lines(doc, _md_row) + accuracy.lines(doc, _md_row)
    failed = G.in_group_order(recs)
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
