"""summary.md's timing table (pytest --timing, docs/timing.md): one row per timed case, its clock
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


def timing_lines(records: Iterable[Mapping[str, Any]], row) -> List[str]:
    """The Markdown section (empty when no record carries `timing`); `row` renders a table row."""
    timed = [r for r in records if isinstance(r.get("timing"), dict)]
    if not timed:
        return []
    lines = ["", f"## Timing ({len(timed)} cases)", "",
             row(["case", "clock", "cache", "median", "min", "IQR", "GB/s", "% of peak"]),
             row(["---"] * 3 + ["---:"] * 5)]
    for r in timed:
        t = r["timing"]
        if "status" in t:
            lines.append(row([f"`{r['case']}`", t["status"], "-", "-", "-", "-", "-", t.get("reason", "")]))
            continue
        lines.append(row([f"`{r['case']}`", clock_label(t), t.get("cache"), fmt_seconds(t.get("median_s")),
                          fmt_seconds(t.get("min_s")), fmt_seconds(t.get("iqr_s")),
                          f"{t['gbps']:.4g}" if isinstance(t.get("gbps"), (int, float)) else "-", peak_cell(t)]))
    return lines
