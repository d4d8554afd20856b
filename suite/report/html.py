"""report.html: one self-contained page (inline CSS and SVG, no scripts, no network) that leads
with the verdict and the failures grouped by what they share (suite/report/lead.py), then the
summary tables, a histogram of worst ulp errors per dtype, a coverage grid and every failure (in
the groups' order)."""
from __future__ import annotations

import html
import math
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from suite.report import groups, lead, summary, verdict
from suite.report.timing import timing_html
from suite.report import accuracy, interleaved, perfplot

# Histogram bins of a case's worst ulp error: upper edges (inclusive); then "> last" and "inf/nan".
EDGES = (0.0, 0.5, 1.0, 2.0, 4.0, 16.0, 256.0, 65536.0)
COLORS = {"passed": "#3a9d3a", "failed": "#d33c3c", "mixed": "#e08a2c", "skipped": "#c9c9c9",
          "xfailed": "#9b7fd1", "none": "#f4f4f4"}

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1350px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f0f0f0}
td.l,th.l{text-align:left}tr.bad td{background:#fde8e8}
.meta{color:#555;font-size:13px}.grid td{text-align:center;min-width:54px;font-size:12px}
.legend span{display:inline-block;padding:2px 8px;margin-right:6px;font-size:12px;border:1px solid #aaa}
code{font-size:12px;background:#f6f6f6;padding:1px 3px}li{margin:4px 0;font-size:13px}
"""


def _e(x: object) -> str:
    return html.escape(str(x))


def bin_of(u: float) -> int:
    if math.isnan(u) or math.isinf(u):
        return len(EDGES) + 1
    for i, edge in enumerate(EDGES):
        if u <= edge:
            return i
    return len(EDGES)


def bin_labels() -> List[str]:
    short = lambda e: f"{e / 1024:g}k" if e >= 1024 else f"{e:g}"  # noqa: E731
    labels = ["0"] + [f"≤{short(e)}" for e in EDGES[1:]]
    return labels + [f">{short(EDGES[-1])}", "inf/nan"]


def histogram_svg(title: str, counts: Sequence[int], width: int = 420, height: int = 170) -> str:
    """A bar chart of `counts` over the ulp bins, labelled, as inline SVG."""
    labels = bin_labels()
    top = max(counts) or 1
    pad_l, pad_b, pad_t = 8, 34, 34       # pad_t: a count over the tallest bar stays under the title
    bw = (width - pad_l * 2) / len(counts)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{_e(title)}"><rect width="100%" height="100%" fill="#fff" stroke="#ddd"/>',
             f'<text class="title" x="{width / 2}" y="15" font-size="13" text-anchor="middle">{_e(title)}</text>']
    for i, c in enumerate(counts):
        h = (height - pad_b - pad_t) * c / top
        x = pad_l + i * bw
        y = height - pad_b - h
        color = "#3a9d3a" if i <= 2 else ("#e08a2c" if i <= 4 else "#d33c3c")
        parts.append(f'<rect class="bar" x="{x + 2:.1f}" y="{y:.1f}" width="{bw - 4:.1f}" height="{h:.1f}" '
                     f'fill="{color}"><title>{_e(labels[i])} ulp: {c} cases</title></rect>')
        if c:
            parts.append(f'<text class="count" x="{x + bw / 2:.1f}" y="{y - 3:.1f}" font-size="10" '
                         f'text-anchor="middle">{c}</text>')
        parts.append(f'<text x="{x + bw / 2:.1f}" y="{height - pad_b + 13}" font-size="10" '
                     f'text-anchor="middle">{_e(labels[i])}</text>')
    parts.append(f'<text x="{width / 2}" y="{height - 4}" font-size="10" text-anchor="middle" fill="#555">'
                 f'worst error per case, ulp of the output dtype</text></svg>')
    return "".join(parts)


def ulp_histograms(records: Sequence[Mapping]) -> Dict[str, List[int]]:
    out: Dict[str, List[int]] = {}
    for r in records:
        u = summary.record_worst(r)             # over every output of a call with several
        if u is None or r["kind"] != "numbers" or r["outcome"] == "skipped":
            continue
        out.setdefault(r.get("out_dtype") or "-", [0] * (len(EDGES) + 2))[bin_of(u)] += 1
    return dict(sorted(out.items()))


def _cell_state(g: Optional[summary.Group]) -> str:
    if g is None or g.total == 0:
        return "none"
    if g.failed:
        return "failed" if not (g.passed or g.xpassed) else "mixed"
    if g.passed or g.xpassed:
        return "passed"
    return "xfailed" if g.xfailed else "skipped"


def coverage_table(records: Sequence[Mapping]) -> str:
    """Shape classes (rows) x dtype and reduction (columns): counts, colored by how they fared."""
    recs = [r for r in records if r["kind"] == "numbers"]
    # (an operator without a reduction attribute has records with reduction null: "-", no label;
    # a reduction reads by its name, reduction=mean, where the operator names its codes)
    cells = summary.by(recs, lambda r: (summary.shape_class(r), r.get("out_dtype") or "-", groups.reduction_label(r)))
    cols: List[Tuple[str, str]] = sorted({(k[1], k[2]) for k in cells})
    rows = summary.shape_classes()
    extra = sorted({k[0] for k in cells} - set(rows))
    head = "".join(f"<th>{_e(d)}" + ("" if red == "-" else f"<br>{_e(red)}") + "</th>" for d, red in cols)
    lines = [f'<table class="grid"><tr><th class="l">shape class</th>{head}</tr>']
    for sc in rows + extra:
        tds = []
        for d, red in cols:
            g = cells.get((sc, d, red))
            state = _cell_state(g)
            text = "" if g is None else (f"{g.passed + g.xpassed}/{g.total}" + (f"<br>{g.failed} fail" if g.failed else ""))
            tds.append(f'<td class="cov {state}" style="background:{COLORS[state]}" '
                       f'title="{_e(sc)} {_e(d)} {_e(red)}: {state}">{text}</td>')
        lines.append(f'<tr><th class="l">{_e(sc)}</th>{"".join(tds)}</tr>')
    lines.append("</table>")
    legend = "".join(f'<span style="background:{COLORS[s]}">{label}</span>' for s, label in
                     (("passed", "all passed"), ("mixed", "some failed"), ("failed", "all failed"),
                      ("skipped", "skipped only"), ("xfailed", "known failures only"), ("none", "not exercised")))
    return f'<div class="legend">{legend}</div>' + "".join(lines)


def render(doc: Mapping) -> str:
    recs = doc["records"]
    be = doc["backend"]
    c = doc["counts"]
    rows = []
    for (op, dt, prod), g in summary.by(recs, summary.op_dtype_product).items():
        cls = ' class="bad"' if g.failed else ""
        rows.append(f"<tr{cls}><td class=l>{_e(op)}</td><td class=l>{_e(dt)}</td><td class=l>{_e(prod)}</td>"
                    f"<td>{g.passed}</td><td>{g.failed}</td><td>{g.skipped}</td><td>{g.xfailed}</td>"
                    f"<td>{g.xpassed}</td><td>{_e(g.worst_text(''))}</td></tr>")
    hists = "".join(histogram_svg(f"{d}: {sum(cs)} cases", cs) + " " for d, cs in ulp_histograms(recs).items())
    failed = groups.in_group_order(recs)
    fl = "".join(f"<li><code>{_e(r['case'])}</code> ({_e(r['kind'])}): {_e(lead.message(r))}"
                 + (f"<br><code>{_e(r['reproduce'])}</code>" if r.get("reproduce") else "") + "</li>"
                 for r in failed[:500])
    more = f"<p>... and {len(failed) - 500} more (see results.json)</p>" if len(failed) > 500 else ""
    m = doc["machine"]
    banner = lead.banner(doc)
    if doc.get("complete", True) is False:
        banner += (f'<p class="bad"><b>INCOMPLETE RUN</b>: {_e(doc.get("incomplete") or "the run did not finish")}. '
                   f"The counts cover only the cases that finished.</p>")
    if doc.get("incidents"):
        banner += ("<p class=\"bad\"><b>Incidents outside any case, which fail the run:</b></p><ul>"
                   + "".join(f"<li>{_e(x)}</li>" for x in doc["incidents"]) + "</ul>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>aclnn conformance: {_e(be.get('name') or be.get('spec'))}</title>
<style>{CSS}{lead.CSS}</style></head><body>
<h1>aclnn conformance: backend <code>{_e(be.get('name') or be.get('spec'))}</code></h1>
{banner}{lead.failure_groups(doc) or ''}<p class="meta">{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped, {c['xfailed']} xfailed,
{c['xpassed']} xpassed. Products: {_e(', '.join(doc['products']))}. Suite {_e(doc['suite_version'])},
goldens <code>{_e(doc['manifest_hash'][:12])}</code>{', shard ' + _e(doc['shard']) if doc.get('shard') else ''}.
Backend options: <code>{_e(verdict.options_text(be.get('options')))}</code>. Machine: {_e(m.get('hostname'))}, {_e(m.get('platform'))},
Python {_e(m.get('python'))}, numpy {_e(m.get('numpy'))}.</p>
<h2>Per operator, dtype and product</h2>
<table><tr><th class=l>operator</th><th class=l>dtype</th><th class=l>product</th><th>passed</th><th>failed</th>
<th>skipped</th><th>xfailed</th><th>xpassed</th><th>worst ulp</th></tr>
{''.join(rows)}</table>
<h2>Worst ulp error per case, by output dtype</h2>
<div>{hists or '<p>No numeric results.</p>'}</div>
<h2>Coverage: shape class × dtype × reduction (numeric cases)</h2>
{coverage_table(recs)}
{timing_html(recs, _e)}{perfplot.plot_html(recs, _e)}{interleaved.section_html(doc, _e)}{accuracy.section_html(doc, _e)}<h2>Failures ({len(failed)})</h2>
<ul>{fl or '<li>none</li>'}</ul>{more}
</body></html>
"""
