"""report.html's plot of GB/s against bytes moved for the timed cases (issue 24, item 3): inline
SVG, no script (the page has none). One series per operator and output dtype (a host clock's
cases a series of their own, labelled: a host clock times launches, not kernels; in a run timed
against a baseline, the baseline's points too, open circles), bytes on a log
axis (the timing set spans decades), GB/s linear from 0, and each product's peak as a line where
a record carries one (its source beside it, "unverified" where it has none). Why a plot beside the
table: GB/s rising with size and flattening below the peak is the memory-bound kernel's shape; a
point off that curve, or above the peak (a cache), is seen at once."""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
W, H = 940, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 310, 30, 48     # the plot area's margins; the legend is on the right


def _points(records: Sequence[Mapping[str, Any]]) -> Tuple[Dict[str, List[Tuple[int, float, str]]], Dict[Tuple[float, str], None], int]:
    """series name -> [(bytes, GB/s, key)], the peaks carried (GB/s, source), and how many timing
    fields were not timed."""
    series: Dict[str, List[Tuple[int, float, str]]] = {}
    peaks: Dict[Tuple[float, str], None] = {}
    skipped = 0
    for r in records:
        t = r.get("timing")
        if not isinstance(t, dict):
            continue
        base = (r.get("interleaved") or {}).get("baseline")
        for prefix, suffix, tt in (("", "", t), ("baseline: ", " (baseline)", base)):
            if not isinstance(tt, dict):
                continue
            if "status" in tt or not isinstance(tt.get("gbps"), (int, float)) or not tt.get("bytes"):
                skipped += not prefix
                continue
            name = prefix + f"{r.get('op')} {r.get('out_dtype') or '-'}" + (
                " (host clock)" if tt.get("clock") != "device" else "")
            series.setdefault(name, []).append((int(tt["bytes"]), float(tt["gbps"]), str(r["key"]) + suffix))
            if tt.get("clock") == "device" and isinstance(tt.get("peak_gbps"), (int, float)):
                peaks[(float(tt["peak_gbps"]), str(tt.get("peak_source") or "unverified"))] = None
    return dict(sorted(series.items())), peaks, skipped


def _size(b: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            return f"{b / scale:g} {unit}"
    return f"{b:g} B"


def _nice(top: float) -> float:
    """A round tick step giving 4..8 ticks up to `top`."""
    step = 10 ** math.floor(math.log10(top / 5))
    for m in (1, 2, 5, 10):
        if top / (m * step) <= 8:
            return m * step
    return 10 * step


def gbps_svg(records: Sequence[Mapping[str, Any]], escape: Callable[[Any], str]) -> str:
    """The plot, or "" when no record carries a measured timing."""
    series, peaks, _ = _points(records)
    if not series:
        return ""
    allb = [b for pts in series.values() for b, _, _ in pts]
    lo, hi = math.floor(math.log10(min(allb))), math.ceil(math.log10(max(allb)))
    hi = max(hi, lo + 1)
    top = max([g for pts in series.values() for _, g, _ in pts] + [p for p, _ in peaks]) * 1.1
    step = _nice(top)
    top = math.ceil(top / step) * step
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    x = lambda b: LEFT + pw * (math.log10(b) - lo) / (hi - lo)        # noqa: E731
    y = lambda g: TOP + ph * (1 - g / top)                            # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gbps" width="{W}" height="{H}" role="img" '
           f'aria-label="GB/s against bytes moved"><rect width="100%" height="100%" fill="#fff" stroke="#ddd"/>',
           f'<text class="title" x="{LEFT}" y="18" font-size="13">GB/s against bytes moved per launch (median of '
           f'the rounds)</text>']
    for k in range(lo, hi + 1):
        out.append(f'<line x1="{x(10 ** k):.1f}" y1="{TOP}" x2="{x(10 ** k):.1f}" y2="{TOP + ph}" stroke="#eee"/>'
                   f'<text x="{x(10 ** k):.1f}" y="{TOP + ph + 15}" font-size="10" text-anchor="middle">'
                   f'{_size(10 ** k)}</text>')
    g = 0.0
    while g <= top + 1e-9:
        out.append(f'<line x1="{LEFT}" y1="{y(g):.1f}" x2="{LEFT + pw}" y2="{y(g):.1f}" stroke="#eee"/>'
                   f'<text x="{LEFT - 6}" y="{y(g) + 3:.1f}" font-size="10" text-anchor="end">{g:g}</text>')
        g += step
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>'
               f'<text x="{LEFT + pw / 2}" y="{H - 10}" font-size="11" text-anchor="middle" fill="#555">bytes moved '
               f'per launch (inputs and outputs, log scale)</text>'
               f'<text x="14" y="{TOP + ph / 2}" font-size="11" text-anchor="middle" fill="#555" '
               f'transform="rotate(-90 14 {TOP + ph / 2})">GB/s</text>')
    for p, source in peaks:
        out.append(f'<line class="peak" x1="{LEFT}" y1="{y(p):.1f}" x2="{LEFT + pw}" y2="{y(p):.1f}" '
                   f'stroke="#555" stroke-dasharray="6 3"/><text x="{LEFT + 4}" y="{y(p) - 4:.1f}" font-size="10">'
                   f'peak {p:g} GB/s ({escape(source)})</text>')
    legend_y = TOP + 4
    kinds = sorted({n.replace("baseline: ", "", 1) for n in series})   # a baseline shares its kernel's colour
    for i, (name, pts) in enumerate(series.items()):
        color = COLORS[kinds.index(name.replace("baseline: ", "", 1)) % len(COLORS)]
        pts = sorted(pts)
        if len(pts) > 1:
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="'
                       + " ".join(f"{x(b):.1f},{y(v):.1f}" for b, v, _ in pts) + '"/>')
        hollow = name.startswith("baseline: ")             # the baseline's points: open circles
        fill = "#fff" if hollow else color
        # Earlier series drawn larger, later ones smaller on top: two series on the same point
        # (float16 and bfloat16 move the same bytes) show as a ring around a dot, not one dot.
        radius = 3 + 0.8 * (len(series) - 1 - i)
        for b, v, key in pts:
            out.append(f'<circle class="pt" cx="{x(b):.2f}" cy="{y(v):.2f}" r="{radius:.1f}" fill="{fill}" stroke="{color}" '
                       f'data-key="{escape(key)}" data-series="{escape(name)}" data-bytes="{b}" data-gbps="{v!r}">'
                       f'<title>{escape(key)}: {_size(b)}, {v:.4g} GB/s</title></circle>')
        ly = legend_y + 18 * i
        out.append(f'<circle cx="{W - RIGHT + 16}" cy="{ly + 6}" r="4" fill="{fill}" stroke="{color}"/>'
                   f'<text class="series" x="{W - RIGHT + 26}" y="{ly + 10}" font-size="11">{escape(name)}</text>')
    if not peaks:
        ny = legend_y + 18 * len(series) + 14
        out.append(f'<text x="{W - RIGHT + 12}" y="{ny}" font-size="10" fill="#555">peak: unverified</text>'
                   f'<text x="{W - RIGHT + 12}" y="{ny + 13}" font-size="10" fill="#555">(no product figure with '
                   f'a source: no line)</text>')
    out.append("</svg>")
    return "".join(out)


def plot_html(records: Sequence[Mapping[str, Any]], escape: Callable[[Any], str]) -> str:
    """report.html's plot section: the SVG, or the line saying why there is none; "" for a run in
    which no record carries `timing` (no --timing: the page is as it was)."""
    if not any(isinstance(r.get("timing"), dict) for r in records):
        return ""
    svg = gbps_svg(records, escape)
    if svg:
        return f"<div>{svg}</div>\n"
    _, _, skipped = _points(records)
    return f'<p class="meta">No GB/s plot: no case was timed ({skipped} not timed).</p>\n'
