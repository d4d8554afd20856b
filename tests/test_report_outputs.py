"""Reports of a real run: results.json (its records, metrics and hashes; the schema itself:
tests/test_report_results.py), summary.md, report.html, the terminal table,
--junitxml alongside, xdist, and sharding + merge on the real case files."""
from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET

import pytest

from suite.report import html
from suite.report import results
from suite.golden.store import GoldenStore
from tests.reportkit import ROOT, cli, comparable, run_suite

SLICE = "MseLossBackward and atlas-a2 and 2x3"          # numbers, determinism and rejection cases
MSE = "--cases=" + str(ROOT / "cases" / "mse_loss_backward.yaml")     # less to collect


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """One plain run of the slice with --report-dir and --junitxml."""
    d = tmp_path_factory.mktemp("plain")
    p = run_suite([MSE, "-k", SLICE, "--report-dir=" + str(d / "rep"), "--junitxml", str(d / "junit.xml")])
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return d, p, results.read(d / "rep" / "results.json")


def test_results_json_validates_and_holds_every_case(plain):
    d, p, doc = plain
    assert results.validate(doc) == []
    n = int(re.findall(r"(\d+) passed", p.stdout)[-1])
    assert len(doc["records"]) == n == doc["counts"]["passed"]
    kinds = {r["kind"] for r in doc["records"]}
    assert kinds == {"numbers", "determinism", "rejection"}
    assert doc["backend"]["name"] == "reference" and doc["backend"]["spec"] == "reference"
    assert doc["manifest_hash"] == GoldenStore(ROOT / "golden").manifest_hash() != ""
    assert doc["tolerances_hash"] == hashlib.sha256((ROOT / "cases" / "tolerances.yaml").read_bytes()).hexdigest()
    assert set(doc["machine"]) == {"platform", "python", "numpy", "hostname"}
    num = next(r for r in doc["records"] if r["kind"] == "numbers" and r["out_dtype"] == "float16"
               and r["shapes"]["self"] == [2, 3])
    assert num["op"] == "MseLossBackward" and num["product"] == "atlas-a2" and num["status"] == 0
    assert set(num["metrics"]) == set(results.METRICS) and 0 <= num["metrics"]["max_ulp"] <= 0.5
    rej = next(r for r in doc["records"] if r["kind"] == "rejection")
    assert rej["status"] == rej["expect"] != 0 and rej["metrics"] is None


def test_junitxml_still_written(plain):
    d, _, doc = plain
    suite_el = ET.parse(d / "junit.xml").getroot().find("testsuite")
    assert int(suite_el.get("tests")) == len(doc["records"])


def test_summary_md_and_terminal_table(plain):
    d, p, doc = plain
    md = (d / "rep" / "summary.md").read_text()
    assert "| MseLossBackward | float16 | atlas-a2 |" in md
    # the terminal's table: a line per operator and product (its dtypes only with -v or a failure)
    assert re.search(r"\nMseLossBackward\s+atlas-a2\s+\d+ passed 0 failed 0 skipped\s+worst 0\.\d+ ulp\n",
                     p.stdout), p.stdout[-2000:]
    assert "where cases failed, per dtype" not in p.stdout


def test_report_html_is_self_contained_with_pictures(plain):
    page = (plain[0] / "rep" / "report.html").read_text()
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and "<link" not in page
    assert page.count("<svg") == 3                               # a histogram per output dtype
    n_numbers = sum(1 for r in plain[2]["records"] if r["kind"] == "numbers")
    bars = [int(x) for x in re.findall(r"ulp: (\d+) cases", page)]
    assert sum(bars) == n_numbers
    assert 'class="cov passed"' in page and 'class="cov failed"' not in page
    for row in ("rank 2", "broadcast", "empty", "large"):
        assert f">{row}</th>" in page


def test_histogram_bins_and_coverage_colors():
    assert [html.bin_of(u) for u in (0.0, 0.3, 0.5, 0.9, 3.0, 1e9, float("inf"))] == [0, 1, 1, 2, 4, 8, 9]
    rec = {"kind": "numbers", "out_dtype": "float16", "reduction": 1, "shapes": {"a": [2, 3]},
           "out_shape": [2, 3], "outcome": "failed", "metrics": {"max_ulp": 3.0}, "dtypes": {"a": "float16"}}
    page = html.coverage_table([rec, dict(rec, outcome="passed", metrics={"max_ulp": 0.2})])
    assert 'class="cov mixed"' in page and "1 fail" in page


def test_xdist_gives_the_same_records(plain, tmp_path):
    p = run_suite([MSE, "-k", SLICE, "-n", "2", f"--report-dir={tmp_path}"])
    assert p.returncode == 0, p.stdout[-3000:]
    doc = results.read(tmp_path / "results.json")
    a, b = comparable(plain[2]["records"]), comparable(doc["records"])
    assert a == b
    assert doc["backend"] == plain[2]["backend"]             # info came back from the workers
    assert "MseLossBackward" in p.stdout.split("aclnn conformance: per operator")[1]


def _collected(out: str) -> tuple:
    ids = [line for line in out.splitlines() if "::" in line]
    m = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", out)
    return ids, int(m.group(2)), int(m.group(3))


def test_shards_partition_the_real_case_files():
    """Collect-only on every case: each test lands in exactly one of three shards."""
    seen, totals = [], set()
    for k in (1, 2, 3):
        p = run_suite(["--collect-only", "--shard", f"{k}/3"])
        ids, total, deselected = _collected(p.stdout)
        assert len(ids) == total - deselected and ids, p.stdout[-2000:]
        seen.append(set(ids))
        totals.add(total)
    (total,) = totals
    assert sum(map(len, seen)) == total == len(set().union(*seen))        # disjoint and complete
    assert max(map(len, seen)) - min(map(len, seen)) < 0.05 * total        # balanced
    # a case's tests (numbers, determinism) share a shard
    case = lambda i: i.split("[", 1)[1]                                     # noqa: E731
    owner = {}
    for k, ids in enumerate(seen):
        for i in ids:
            assert owner.setdefault(case(i), k) == k


def test_shards_merge_back_to_the_unsharded_run(plain, tmp_path):
    parts = []
    for k in (1, 2, 3):
        p = run_suite([MSE, "-k", SLICE, "--shard", f"{k}/3", "--report-dir=" + str(tmp_path / str(k))])
        assert p.returncode == 0, p.stdout[-3000:]
        parts.append(str(tmp_path / str(k) / "results.json"))
    out = tmp_path / "merged.json"
    m = cli(["report", "merge", *parts, "-o", str(out)])
    assert m.returncode == 0, m.stderr
    merged = results.read(out)
    assert comparable(merged["records"]) == comparable(plain[2]["records"])
    assert merged["counts"] == plain[2]["counts"] and merged["merged_from"] == ["1/3", "2/3", "3/3"]
    # the same unsharded run diffs clean against the merge
    # (the baseline lies outside the shards' protected report folders: trusted by name;
    # tests/test_report_trust.py proves the refusal)
    assert cli(["report", "diff", str(plain[0] / "rep" / "results.json"), str(out), "--trust-baseline"]).returncode == 0
