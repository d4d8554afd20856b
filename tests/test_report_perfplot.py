"""report.html's plot of GB/s against bytes moved (suite/report/perfplot.py; issue 24, item 3):
inline SVG, no script; one series per operator and dtype on a log x axis; the product's peak as a
line where a record carries one (marked unverified where its source is); absent, with a line that
says why, when nothing was timed. The points are read back from the SVG itself: each one's data
and its position are the record's bytes and GB/s."""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from typing import List, Optional

import pytest

from suite.perf.record import TimingRecord
from suite.report import html
from tests.test_report_html import doc_of, rec

NS = {"s": "http://www.w3.org/2000/svg"}


def timed(key: str, nbytes: int, gbps: float, *, out_dtype: str = "float32", op: Optional[str] = None,
          peak: Optional[float] = None, source: Optional[str] = None, clock: str = "device") -> dict:
    median = nbytes / gbps / 1e9
    t = TimingRecord.of_rounds([median] * 5, clock=clock, source="simulated", cache="cold", launches=100,
                               nbytes=nbytes, peak_gbps=peak, peak_source=source).to_json()
    r = rec(key, out_dtype=out_dtype, timing=t)
    if op:
        r["op"] = op
    return r


def plot_of(page: str) -> Optional[ET.Element]:
    m = re.search(r'<svg[^>]*class="gbps".*?</svg>', page, re.S)
    return None if m is None else ET.fromstring(m.group(0))


RECS = [timed("a1", 1_000, 0.5), timed("a2", 100_000, 40.0), timed("a3", 10_000_000, 300.0),
        timed("h1", 10_000, 2.0, out_dtype="float16"), timed("h2", 1_000_000, 80.0, out_dtype="float16")]


def points(svg: ET.Element) -> List[ET.Element]:
    return svg.findall(".//s:circle[@class='pt']", NS)


def test_the_points_are_the_records_figures_on_a_log_x_axis() -> None:
    page = html.render(doc_of(RECS))
    assert "<script" not in page.lower()
    svg = plot_of(page)
    assert svg is not None
    pts = points(svg)
    got = {p.get("data-key"): (int(p.get("data-bytes")), float(p.get("data-gbps"))) for p in pts}
    assert got == {r["key"]: (r["timing"]["bytes"], pytest.approx(r["timing"]["gbps"], rel=1e-6)) for r in RECS}
    # Position: x linear in log10(bytes), y linear in GB/s (downwards), the same scale for every point.
    xs = {p.get("data-key"): float(p.get("cx")) for p in pts}
    ys = {p.get("data-key"): float(p.get("cy")) for p in pts}
    per_decade = (xs["a2"] - xs["a1"]) / 2
    assert per_decade > 20
    for r in RECS:
        assert xs[r["key"]] - xs["a1"] == pytest.approx(per_decade * math.log10(r["timing"]["bytes"] / 1_000), abs=0.2)
    per_gbps = (ys["a1"] - ys["a3"]) / (300.0 - 0.5)
    for r in RECS:
        assert ys["a1"] - ys[r["key"]] == pytest.approx(per_gbps * (r["timing"]["gbps"] - 0.5), abs=0.2)
    # One series per operator and dtype: a legend entry each, and one colour per series.
    legend = [t.text for t in svg.findall(".//s:text[@class='series']", NS)]
    op = RECS[0]["op"]
    assert legend == [f"{op} float16", f"{op} float32"]
    colours = {p.get("data-series"): set() for p in pts}
    for p in pts:
        colours[p.get("data-series")].add(p.get("fill"))
    assert all(len(c) == 1 for c in colours.values()) and len({c.pop() for c in colours.values()}) == 2
    assert svg.find(".//s:line[@class='peak']", NS) is None
    assert "peak: unverified" in "".join(svg.itertext())


def test_a_known_peak_is_a_line_and_an_unsourced_one_is_marked_unverified() -> None:
    recs = [timed("a", 1_000_000, 100.0, peak=1200.0, source="a cited sheet"), timed("b", 10_000_000, 900.0,
                                                                                     peak=1200.0, source="a cited sheet")]
    svg = plot_of(html.render(doc_of(recs)))
    line = svg.find(".//s:line[@class='peak']", NS)
    assert line is not None and "peak 1200 GB/s (a cited sheet)" in "".join(svg.itertext())
    ys = {p.get("data-key"): float(p.get("cy")) for p in points(svg)}
    per_gbps = (ys["a"] - ys["b"]) / 800.0
    assert ys["a"] - float(line.get("y1")) == pytest.approx(per_gbps * 1100.0, abs=0.2)   # at 1200 GB/s
    unsourced = [timed("a", 1_000_000, 100.0, peak=1200.0)]
    assert "peak 1200 GB/s (unverified)" in "".join(plot_of(html.render(doc_of(unsourced))).itertext())


def test_host_clock_cases_are_their_own_series_and_get_no_peak() -> None:
    recs = [timed("d", 1_000_000, 100.0), timed("h", 1_000_000, 3.0, clock="host", peak=1200.0, source="s")]
    svg = plot_of(html.render(doc_of(recs)))
    series = {p.get("data-key"): p.get("data-series") for p in points(svg)}
    assert series["h"].endswith("(host clock)") and not series["d"].endswith("(host clock)")
    assert svg.find(".//s:line[@class='peak']", NS) is None


@pytest.mark.parametrize("records, line", [
    ([rec("x", timing={"status": "not timed", "reason": "no hook"}), rec("y", timing={"status": "not timed",
                                                                                       "reason": "no hook"})],
     "No GB/s plot: no case was timed (2 not timed)"),
])
def test_absent_with_a_line_when_nothing_was_timed(records, line: str) -> None:
    page = html.render(doc_of(records))
    assert plot_of(page) is None and line in page
    plain = html.render(doc_of([rec("z")]))               # a run without --timing: no timing section at all
    assert plot_of(plain) is None and "GB/s" not in plain


def test_a_run_timed_against_a_baseline_plots_the_baselines_points_too() -> None:
    from suite.perf import gate, pair
    r = timed("a", 1_000_000, 100.0)
    base = timed("a", 1_000_000, 125.0)["timing"]
    b, c = TimingRecord.from_json(base), TimingRecord.from_json(r["timing"])
    r["interleaved"] = pair.make(base, gate.compare(b, c), 0.1, 0.01)
    svg = plot_of(html.render(doc_of([r])))
    got = {p.get("data-key"): (p.get("data-series"), float(p.get("data-gbps"))) for p in points(svg)}
    assert got["a"] == (f"{r['op']} float32", pytest.approx(100.0))
    assert got["a (baseline)"] == (f"baseline: {r['op']} float32", pytest.approx(125.0))


CLIPPED = """<script>
(function () {
  var out = [];
  document.querySelectorAll('svg.gbps').forEach(function (svg) {
    var s = svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.right > s.right + 0.5 || r.left < s.left - 0.5 || r.bottom > s.bottom + 0.5 || r.top < s.top - 0.5)
        out.push(t.textContent);
    });
  });
  var pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify({clipped: out, plots: document.querySelectorAll('svg.gbps').length,
                                    scrollWidth: document.documentElement.scrollWidth, vw: innerWidth});
  document.body.appendChild(pre);
})();
</script>"""


def test_in_a_browser_no_text_of_the_plot_is_cut_off(tmp_path, monkeypatch) -> None:
    """Headless Chromium at 1400x900: every label and legend entry of the plot lies inside it (the
    longest operator names, a baseline's series, the peak note), and the page does not scroll
    sideways. Skips where no browser is installed (tests/test_report_html_browser.py)."""
    from suite.perf import gate, pair
    from tests import test_report_html_browser as browser
    recs = []
    for i, n in enumerate((64_000, 1_600_000, 16_000_000)):
        for dt in ("float32", "float16", "bfloat16"):
            r = timed(f"bce-{dt}-{i}", n, 10.0 * (i + 1), out_dtype=dt, op="BinaryCrossEntropyBackward")
            base = timed("x", n, 12.0 * (i + 1))["timing"]
            r["interleaved"] = pair.make(base, gate.compare(TimingRecord.from_json(base),
                                                            TimingRecord.from_json(r["timing"])), 0.1, 0.01)
            recs.append(r)
    monkeypatch.setattr(browser, "MEASURE", CLIPPED)
    m = browser.measure(html.render(doc_of(recs, timing_baseline={"spec": "simulated", "options": {}})), tmp_path)
    assert m["plots"] == 1 and m["clipped"] == [], m
    assert m["scrollWidth"] <= m["vw"], m
