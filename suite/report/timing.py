"""The timing table of summary.md and report.html (pytest --timing, docs/timing.md): one row per timed case, its clock
named with its source wherever it is shown, so a host clock is never read as the device's."""
from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Optional


def fmt_seconds(s: Optional[float]) -> str:
    """A duration in the unit that keeps it readable: ns, us, ms or s."""
    if not isinstance(s, (int, float)):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def clock_label(t: Mapping[str, Any]) -> str:
    return f"{t.get('clock')} ({t.get('source')})"


def peak_cell(t: Mapping[str, Any]) -> str:
    """% of the product's peak, or why there is none."""
    if t.get("clock") != "device":
        return "n/a (host clock)"
    if t.get("peak_fraction") is None:
        return t.get("peak_source") or "unverified"
    cell = f"{100 * t['peak_fraction']:.1f} %"
    return cell + " (above peak: cache-resident)" if t.get("cache_resident") else cell


HEADER = ["case", "clock", "cache", "median", "min", "IQR", "GB/s", "% of peak"]


def timing_rows(records: Iterable[Mapping[str, Any]]) -> List[List[str]]:
    """One row of HEADER's cells per record that carries `timing` (a not-timed one says why)."""
    rows = []
    for r in records:
        t = r.get("timing")
        if not isinstance(t, dict):
            continue
        if "status" in t:
            rows.append([r["case"], str(t["status"]), "-", "-", "-", "-", "-", str(t.get("reason", ""))])
            continue
        rows.append([r["case"], clock_label(t), str(t.get("cache")), fmt_seconds(t.get("median_s")),
                     fmt_seconds(t.get("min_s")), fmt_seconds(t.get("iqr_s")),
                     f"{t['gbps']:.4g}" if isinstance(t.get("gbps"), (int, float)) else "-", peak_cell(t)])
    return rows


def timing_lines(records: Iterable[Mapping[str, Any]], row) -> List[str]:
    """The Markdown section (empty when no record carries `timing`); `row` renders a table row."""
    rows = timing_rows(records)
    if not rows:
        return []
    return ["", f"## Timing ({len(rows)} cases)", "", row(HEADER), row(["---"] * 3 + ["---:"] * 5)] + [
        row([f"`{cells[0]}`", *cells[1:]]) for cells in rows]


def timing_html(records: Iterable[Mapping[str, Any]], escape) -> str:
    """report.html's section (empty when no record carries `timing`); `escape` escapes text."""
    rows = timing_rows(records)
    if not rows:
        return ""
    head = "".join(f"<th{' class=l' if i < 3 else ''}>{escape(h)}</th>" for i, h in enumerate(HEADER))
    body = "".join("<tr>" + "".join(f"<td{' class=l' if i < 3 else ''}>{escape(c)}</td>" for i, c in enumerate(cells))
                   + "</tr>" for cells in rows)
    return f"<h2>Timing ({len(rows)} cases)</h2>\n<table><tr>{head}</tr>\n{body}</table>\n"
