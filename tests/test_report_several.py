"""Every failing output of a call with several, in every report (issue 42, item 5): a backend
whose aclnnNLLLoss gets only totalWeightOut wrong, and one that gets both outputs wrong
(tests/mutants/nll_loss.py, NllTotalWeightOff and NllBothOutputsOff), run for real. The terminal's
failure message, the end-of-run table, results.json (`outputs`, `failed_outputs`), summary.md and
report.html each name every failing output with its worst error; a failed determinism test judged
within standard keeps the first output's metrics where a single output's are."""
from __future__ import annotations

import re

import pytest

from suite.report import groups, results, summary
from tests.reportkit import ROOT, run_suite, sample_record

NLL = "--cases=" + str(ROOT / "cases" / "nll_loss.yaml")
# Two numbers cases (mean and sum) and their determinism tests, judged within standard on atlas-a2.
SLICE = "atlas-a2 and 4x5.4.5 and tint64 and ignore0 and wfloat32-to-float32 and (sum or mean)"
TOTAL = "totalWeightOut"


def _run(tmp_path_factory, backend: str):
    d = tmp_path_factory.mktemp(backend)
    p = run_suite([NLL, "--backend", f"tests.mutants.nll_loss:{backend}", "-k", SLICE, f"--report-dir={d}",
                   "suite/conformance"])
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    doc = results.read(d / "results.json")
    assert doc["counts"]["failed"] == len(doc["records"]) == 4, [r["key"] for r in doc["records"]]
    return p.stdout, doc, (d / "summary.md").read_text(), (d / "report.html").read_text()


@pytest.fixture(scope="module")
def total_off(tmp_path_factory):
    return _run(tmp_path_factory, "NllTotalWeightOff")


@pytest.fixture(scope="module")
def both_off(tmp_path_factory):
    return _run(tmp_path_factory, "NllBothOutputsOff")


def _numbers(doc):
    return [r for r in doc["records"] if r["kind"] == "numbers"]


def test_only_the_second_output_wrong_is_named_with_its_worst_error_in_the_record(total_off):
    _, doc, _, _ = total_off
    for r in doc["records"]:
        big = r["outputs"][TOTAL]["max_ulp"]
        assert big > 1e6 and r["outputs"]["out"]["max_ulp"] <= 1, r["outputs"]
        assert list(r["failed_outputs"]) == [TOTAL] and r["failed_outputs"][TOTAL] == r["worst"]
        assert r["worst"][0]["error"] == big
        head = r["reason"].split(": ", 1)[1]
        assert f"{TOTAL} " in head and f"(worst error {big:.4g} ulp)" in head and not head.startswith("out ")
        # the determinism test judged within standard: out's metrics where a single output's are
        assert r["metrics"] == r["outputs"]["out"], r["kind"]


def test_only_the_second_output_wrong_shows_in_the_terminal_table_and_message(total_off):
    out, doc, _, _ = total_off
    big = max(r["outputs"][TOTAL]["max_ulp"] for r in doc["records"])
    # the line per operator and product, and the failed dtype's line below it
    for header in ("per operator and product", "where cases failed, per dtype"):
        table = out.split(header, 1)[1].split("\n", 1)[1].split("\n=")[0]      # its lines, to the next header
        (row,) = [x for x in table.splitlines() if x.startswith("NLLLoss")]
        assert row.endswith(f"worst out {max(r['outputs']['out']['max_ulp'] for r in doc['records']):.3g} ulp, "
                            f"{TOTAL} {big:.3g} ulp (failed)"), row
    assert re.search(rf"-sum-[^:]*: {TOTAL} float32\[\] fails standard 'cann' \(worst error [0-9.e+]+ ulp\)", out)
    assert f"    {TOTAL} index ():" in out


def test_only_the_second_output_wrong_shows_in_summary_md_and_report_html(total_off):
    _, doc, md, page = total_off
    big = max(r["outputs"][TOTAL]["max_ulp"] for r in doc["records"])
    (row,) = [x for x in md.splitlines() if x.startswith("| NLLLoss |")]
    assert row.endswith(f"{TOTAL} {big:.3g} (failed) |"), row
    assert f"<td>out {max(r['outputs']['out']['max_ulp'] for r in doc['records']):.3g}, {TOTAL} {big:.3g} " \
           f"(failed)</td>" in page
    outs = re.findall(r'<div class="fouts">(.*?)</div>', page)
    assert len(outs) == len(groups.group_failures(doc["records"])) == 4
    assert all(x.startswith(f"failing output: <b>{TOTAL}</b> (worst ") for x in outs), outs
    assert page.count(f'<div class="fworst">worst element of <b>{TOTAL}</b>') == 4


def test_both_outputs_wrong_name_both_everywhere(both_off):
    out, doc, md, page = both_off
    for r in doc["records"]:
        assert list(r["failed_outputs"]) == ["out", TOTAL] and r["worst"] == r["failed_outputs"]["out"]
        head = r["reason"].split(": ", 1)[1]
        for n in ("out", TOTAL):
            assert f"(worst error {r['outputs'][n]['max_ulp']:.4g} ulp)" in head
        assert head.index("out ") < head.index(f"; {TOTAL} ")
    assert re.search(rf"-mean-[^:]*: out float32\[\] fails standard [^\n]*; {TOTAL} float32\[\] fails standard", out)
    assert f"\n  {TOTAL}:\n" in out and "\n  out:\n" in out             # each output's numbers, under its name
    (row,) = [x for x in md.splitlines() if x.startswith("| NLLLoss |")]
    assert re.search(rf"\| out [0-9.e+]+ \(failed\), {TOTAL} [0-9.e+]+ \(failed\) \|$", row), row
    assert page.count(f'failing outputs: <b>out</b> (worst ') == 4 and f"<b>{TOTAL}</b> (worst " in page


def test_the_table_of_one_output_is_as_before():
    g = summary.Group()
    g.add({**sample_record("a"), "metrics": {"max_ulp": 0.41}})
    g.add({**sample_record("b", "failed"), "metrics": {"max_ulp": 3.0}})
    assert (g.worst, g.worst_text(), g.worst_text("")) == (3.0, "3 ulp", "3")
    assert summary.Group().worst_text() == "-"


def test_results_json_refuses_a_malformed_failed_outputs():
    rec = {**sample_record("a", "failed"), "failed_outputs": {"x": [{"index": []}]}}
    doc = {"schema_version": 2, "suite_version": "0", "backend": {}, "products": [], "standard_override": None,
           "manifest_hash": "", "machine": {}, "shard": None, "counts": results.count_outcomes([rec]),
           "records": [rec]}
    assert any(e.startswith("records[0].failed_outputs.'x'[0]: missing field 'golden'") for e in results.validate(doc))
    doc["records"][0]["failed_outputs"] = {"x": 3}
    assert results.validate(doc) == ["records[0].failed_outputs: 'x' is 3, not a list of elements"]
