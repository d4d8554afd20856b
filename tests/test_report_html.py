"""report.html leads with the verdict (issue 23, item 4): a PASS/FAIL banner with the counts, the
backend and its options as key=value, then the failures grouped by what they share, largest group
first, each with its count, worst element and one reproducer; then the tables and the grid. These
tests read the generated page's structure with the standard library's html.parser (the layout in
a browser: tests/test_report_html_browser.py)."""
from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from typing import Dict, List, Optional

from suite.report import html, results
from tests.reportkit import sample_record

VOID = {"br", "meta", "img", "input", "hr", "link", "col", "area", "base", "wbr", "source"}


class Node:
    def __init__(self, tag: str, attrs: Dict[str, Optional[str]], parent: Optional["Node"]) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: List["Node"] = []
        self.parts: List[str] = []

    @property
    def classes(self) -> List[str]:
        return (self.attrs.get("class") or "").split()

    def text(self) -> str:
        return "".join(self.parts)

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()

    def find(self, pred) -> List["Node"]:
        return [n for n in self.walk() if pred(n)]


class Tree(HTMLParser):
    """A small DOM: every element in document order, each with the text inside it (its own and
    its descendants')."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#root", {}, None)
        self.order: List[Node] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        n = Node(tag, dict(attrs), self.cur)
        self.cur.children.append(n)
        self.order.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        n = self.cur
        while n is not None:
            n.parts.append(data)
            n = n.parent


def by_id(t: Tree, ident: str) -> Optional[Node]:
    found = [n for n in t.order if n.attrs.get("id") == ident]
    return found[0] if found else None


def groups_of(t: Tree) -> List[Node]:
    return [n for n in t.order if "fgroup" in n.classes]


def doc_of(records, **run) -> dict:
    base = {"backend": {"spec": "mykernels:Backend", "name": "mine", "options": {"factor": "2", "mode": "fast"}},
            "products": ["atlas-a2"], "standard_override": None, "manifest_hash": "ab" * 32,
            "machine": {"platform": "p", "python": "3", "numpy": "2", "hostname": "h"}, "shard": None}
    base.update(run)
    incomplete = base.pop("incomplete", None)
    incidents = base.pop("incidents", ())
    doc = results.make_document(base, records, incomplete, incidents)
    assert results.validate(doc) == [], results.validate(doc)
    return doc


def rec(key: str, outcome: str = "passed", **kw) -> dict:
    r = sample_record(key, outcome)
    r.update(case=key, **kw)
    if "reduction" in kw:
        r["attrs"] = {**r["attrs"], "reduction": kw["reduction"]}
    return r


def element(error: float, got: float = 1.5, index=(0, 1)) -> dict:
    return {"index": list(index), "inputs": None, "golden": 1.0, "lo": 0.99, "hi": 1.01, "got": got,
            "error": error, "unit": "ulp", "why": "over"}


def failing(key: str, error: float, **kw) -> dict:
    return rec(key, "failed", reason=f"{key}: 3 of 6 elements over", worst=[element(error)],
               reproduce=f"pytest 'suite/conformance/test_numerics.py::test_results[{key}]' --backend mine",
               metrics={k: 0 for k in results.METRICS} | {"standard": "cann", "max_ulp": error}, **kw)


FIRST = next(iter(sample_record("k")["shapes"]))        # the sample operator's first input


def mixed_run() -> dict:
    """Three failures under reduction 1 on [2], one under reduction 2, one of rank 3, and passes."""
    recs = [failing("a", 3.0, reduction=1), failing("b", 7.5, reduction=1), failing("c", 5.0, reduction=1),
            failing("d", 2.0, reduction=2),
            failing("e", 9.0, reduction=1, shapes={FIRST: [2, 3, 4]}, out_shape=[2, 3, 4]),
            rec("p1"), rec("p2"), rec("s1", "skipped", reason="not on this product"), rec("x1", "xfailed")]
    return doc_of(recs)


def test_the_verdict_banner_comes_first_then_the_failure_groups_then_the_tables():
    t = Tree(html.render(mixed_run()))
    banner, groups = by_id(t, "verdict"), by_id(t, "failure-groups")
    assert banner is not None and groups is not None
    pos = {id(n): i for i, n in enumerate(t.order)}
    first_table = next(n for n in t.order if n.tag in ("table", "svg"))
    first_h2 = next(n for n in t.order if n.tag == "h2")
    assert pos[id(banner)] < pos[id(groups)] < pos[id(first_table)]
    assert pos[id(groups)] < pos[id(first_h2)] or first_h2 in groups.walk()
    assert "fail" in banner.classes and re.search(r"\bFAIL\b", banner.text())


def test_banner_counts_are_the_records_and_options_read_key_value():
    doc = mixed_run()
    t = Tree(html.render(doc))
    banner = by_id(t, "verdict")
    shown = {n.attrs["data-outcome"]: int(n.text().split()[0]) for n in banner.find(lambda n: "count" in n.classes)}
    assert {k: shown[k] for k in doc["counts"]} == doc["counts"] == \
        {"passed": 2, "failed": 5, "skipped": 1, "xfailed": 1, "xpassed": 0}
    assert shown["errors"] == 0
    text = " ".join(banner.text().split())
    assert "factor=2" in text and "mode=fast" in text and "mine" in text
    assert "{'factor'" not in html.render(doc)


def test_groups_are_in_count_order_with_the_records_counts_worst_element_and_one_reproducer():
    doc = mixed_run()
    t = Tree(html.render(doc))
    gs = groups_of(t)
    counts = [int(g.attrs["data-count"]) for g in gs]
    assert counts == sorted(counts, reverse=True) == [3, 1, 1]
    assert sum(counts) == doc["counts"]["failed"]
    big = gs[0]
    assert re.search(r"\b3 failures\b", big.text())
    # the worst element of the three (b: 7.5 ulp), its numbers, and its case's reproducer, once
    worst = " ".join(n.text() for n in big.find(lambda n: "fworst" in n.classes))
    assert "7.5" in worst and "1.5" in worst and "[0, 1]" in worst
    repros = big.find(lambda n: "repro" in n.classes)
    assert len(repros) == 1 and "test_results[b]" in repros[0].text()
    # what the group shares, readable: the operator's reduction by name, the shape class
    labels = " ".join(big.find(lambda n: "flabels" in n.classes)[0].text().split())
    from suite import ops
    op = ops.get(doc["records"][0]["op"])
    assert op.reductions and f"reduction={op.reduction_name(1)}" in labels
    assert "rank 1" in labels and "atlas-a2" in labels and op.name in labels


def test_a_failure_without_elements_groups_by_its_status():
    """A wrong status or a crash has no worst element: the group says what came back instead."""
    r = rec("w", "failed", kind="rejection", expect=161002, status=0, reason="accepted a NULL self",
            reproduce="pytest 'x::test_rejection[w]' --backend mine", fault=None)
    crash = rec("c", "failed", kind="numbers", status=None, reason="backend process died", fault="signal 11 (SIGSEGV)",
                reproduce="pytest 'x::test_results[c]' --backend mine")
    t = Tree(html.render(doc_of([r, crash])))
    texts = [" ".join(g.text().split()) for g in groups_of(t)]
    assert len(texts) == 2
    assert any("status 0" in x and "161002" in x for x in texts)
    assert any("signal 11 (SIGSEGV)" in x for x in texts)
    shown = {n.attrs["data-outcome"]: int(n.text().split()[0])
             for n in by_id(t, "verdict").find(lambda n: "count" in n.classes)}
    assert shown["errors"] == 1 and shown["failed"] == 2


def test_a_passing_run_has_a_pass_banner_and_no_group_section():
    t = Tree(html.render(doc_of([rec("p1"), rec("p2"), rec("s", "skipped", reason="r")])))
    banner = by_id(t, "verdict")
    assert banner is not None and "pass" in banner.classes and re.search(r"\bPASS\b", banner.text())
    assert "FAIL" not in banner.text()
    assert by_id(t, "failure-groups") is None and not groups_of(t)


def test_what_else_fails_a_run_fails_the_banner():
    """The exit status's rules (suite/plugin/report.py exit_status): an incident, an unfinished run,
    and a run in which every case skipped fail it though no case failed."""
    for doc in (doc_of([rec("p")], incidents=["gw0: the backend's process exited 3 in close()"]),
                doc_of([rec("p")], incomplete="interrupted (Ctrl-C)"),
                doc_of([rec("s", "skipped", reason="r")]),
                doc_of([])):
        banner = by_id(Tree(html.render(doc)), "verdict")
        assert "fail" in banner.classes and "PASS" not in banner.text(), banner.text()


def test_html_in_a_record_comes_out_inert():
    evil = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    r = failing("k<u>", 4.0, reduction=1)
    r["reason"] = evil
    r["reproduce"] = "pytest 'x[" + evil + "]'"
    doc = doc_of([r], backend={"spec": "<script>s</script>", "name": "<i>n</i>", "options": {"<a>": evil}})
    page = html.render(doc)
    t = Tree(page)
    assert not t.root.find(lambda n: n.tag in ("script", "img", "i", "a", "u"))
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_records_of_several_outputs_and_other_attributes_group_by_the_operators_axes():
    """NLLLossBackward has an ignoreIndex and no reduction token of a fixed field: the group's
    labels are the record's attributes as the operator declares them."""
    from suite import ops
    op = ops.get("NLLLossBackward")
    base = failing("n1", 2.0, op=op.name)
    a = dict(copy.deepcopy(base), key="n1", case="n1", attrs={"reduction": 0, "ignoreIndex": -100})
    b = dict(copy.deepcopy(base), key="n2", case="n2", attrs={"reduction": 0, "ignoreIndex": 0})
    c = dict(copy.deepcopy(base), key="n3", case="n3", attrs={"reduction": 0, "ignoreIndex": 0})
    for r in (a, b, c):
        r["reduction"] = r["attrs"]["reduction"]
    gs = groups_of(Tree(html.render(doc_of([a, b, c]))))
    labels = [" ".join(g.find(lambda n: "flabels" in n.classes)[0].text().split()) for g in gs]
    assert [int(g.attrs["data-count"]) for g in gs] == [2, 1]
    assert "ignoreIndex=0" in labels[0] and "ignoreIndex=-100" in labels[1]
    assert "reduction=none" in labels[0]


def test_grid_columns_name_the_reduction():
    r = rec("p", reduction=1)
    from suite import ops
    op = ops.get(r["op"])
    page = html.coverage_table([r])
    assert "red. 1" not in page
    if op.reductions:
        assert f"reduction={op.reduction_name(1)}" in page


def test_no_bar_label_reaches_the_histograms_title():
    """The count above the tallest bar sat on the title's line (seen in Chromium): every count's
    text top (its baseline less its font size) lies below the title's baseline."""
    svg = html.histogram_svg("float16: 40 cases", [40, 3, 0, 1, 0, 0, 0, 0, 0, 0])
    title_y = float(re.search(r'<text[^>]* y="([\d.]+)"[^>]*>float16: 40 cases</text>', svg).group(1))
    counts = [(float(y), float(fs)) for y, fs in re.findall(r'<text[^>]*y="([\d.]+)" font-size="(\d+)"[^>]*>\d+</text>', svg)]
    assert counts
    assert all(y - fs >= title_y + 2 for y, fs in counts), (title_y, counts)


def test_a_groups_message_does_not_repeat_its_case_id():
    """A failure's reason starts with its case id; the group names the case once, beside the worst
    element, and the message follows without it (the failure list at the end likewise)."""
    r = failing("Op-float16-atlas-a2-mean-2x3-contiguous-uniform", 4.0, reduction=1)
    r["reason"] = f"{r['case']}: out float16[2, 3] fails standard 'cann'"
    page = html.render(doc_of([r]))
    (g,) = groups_of(Tree(page))
    why = g.find(lambda n: "fwhy" in n.classes)[0].text()
    assert why == "out float16[2, 3] fails standard 'cann'"
    assert f"{r['case']}: out" not in page
