"""The pytest side of the reports (suite/plugin/report.py), driven in pytest's own process, so that
what it writes to the terminal, what a run that judged nothing says, and how sharding and known
failures change the collected items are checked line by line (the end-to-end runs of
tests/test_empty_runs.py and tests/test_plugin.py see the same from outside, in a process of
their own, where a mutation run cannot follow them)."""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from suite import plugin
from suite.cases.load import load_cases
from suite.plugin import report, terminal
from suite.plugin.report import Reporter
from suite.report import formats, knownfail, shard, summary

ROOT = Path(__file__).resolve().parents[1]
CASES, _ = load_cases([ROOT / "cases" / "mse_loss_backward.yaml"])
A2 = [c for c in CASES if c.product == "atlas-a2"]
NUMBERS = "suite/conformance/test_numerics.py::test_results"
REC = {"op": "MseLossBackward", "dtypes": {"gradOutput": "float32"}, "product": "atlas-a2", "metrics": None}


def _reporter(*, backend=None, records=(), cases=(), **state):
    st = SimpleNamespace(**{"incidents": [], "error": None, "info": None, "cases": list(cases), "against": None, "double": None,
                            **state})
    opt = SimpleNamespace(report_dir=None, shard=None, known_failures=None, baseline=None, backend=backend)
    config = SimpleNamespace(option=opt, stash={plugin.STATE: st}, rootpath=ROOT,
                             pluginmanager=SimpleNamespace(getplugin=lambda name: None))
    rep = Reporter(config)
    rep.records = {f"k{i}": {**REC, "key": f"k{i}", **r} for i, r in enumerate(records)}
    config.stash[report.REPORTER] = rep
    return rep


class Terminal:
    """What pytest_terminal_summary writes: ('line', text) and ('section', title) in order."""

    def __init__(self):
        self.out = []
        self.markup = {}                  # text -> the markup it was written with (red, bold, yellow)

    def write_line(self, text, **markup):
        self.out.append(("line", text))
        self.markup[text] = markup

    def section(self, title, **markup):
        self.out.append(("section", title))
        self.markup[title] = markup

    def lines(self):
        return [t for k, t in self.out if k == "line"]


def _summary(rep):
    term = Terminal()
    terminal.pytest_terminal_summary(term, rep.config)
    return term


# -- a run that ran no conformance case says where pytest ran and what it selected ---------------
def test_a_run_with_no_record_says_where_it_ran_and_the_three_folders_most_selected():
    case_id = CASES[0].id
    rep = _reporter()
    rep.selected = ["tests/test_a.py::t1", "tests/test_a.py::t2[x]", "tests/test_b.py::t3",
                    f"{NUMBERS}[{case_id}]", "suite/conformance/test_numerics.py::plain",
                    "docs/x.py::t", "benchmarks/y.py::t", f"no/such/file.py::t[{case_id}]"]
    assert rep.empty_run() == (
        f"no conformance case ran: pytest ran in {os.getcwd()} (rootdir {ROOT}) and selected 8 tests "
        f"(3 under tests, 2 under suite, 1 under docs), 1 of them conformance cases; run it in the project "
        f"folder, or name suite/conformance")
    rep.selected = None                    # nothing collected at all
    assert rep.empty_run() == (
        f"no conformance case ran: pytest ran in {os.getcwd()} (rootdir {ROOT}) and selected 0 tests, 0 of them "
        f"conformance cases; run it in the project folder, or name suite/conformance")
    rep.selected = ["top.py::a", "top.py::b[x y]"]        # test files in the folder pytest ran in
    assert "selected 2 tests (2 under top.py), 0 of them" in rep.empty_run()
    assert _reporter(records=[{"outcome": "skipped"}]).empty_run() is None


@pytest.mark.parametrize("path,kind", [
    ("suite/conformance/test_numerics.py", "numbers"), ("suite/conformance/test_status.py", "rejection"),
    ("suite/conformance/test_determinism.py", "determinism"), ("tests/test_report_shard.py", None),
    ("no/such/file.py", None)])
def test_a_node_id_is_a_case_when_its_module_says_its_case_kind(path, kind):
    rep = _reporter()
    assert rep._kind_of(path) == kind
    assert rep.is_case_id(f"{path}::test_x[{CASES[0].id}]") is (kind is not None)
    assert rep.is_case_id(f"{path}::test_x") is False           # no case parameter


def test_a_module_that_names_its_kind_by_a_string_is_read_too(tmp_path):
    (tmp_path / "test_mine.py").write_text("import x\nCASE_KIND = 'Numbers'\n", encoding="utf-8")
    (tmp_path / "test_bad.py").write_bytes(b"CASE_KIND = 'numbers'\n\xff\xfe")
    rep = _reporter()
    rep.config.rootpath = tmp_path
    assert rep._kind_of("test_mine.py") == "numbers" and rep._kind_of("test_bad.py") is None


# -- what the terminal shows at the end ----------------------------------------------------------
def test_every_case_skipped_is_an_error_line_that_names_the_first_reason():
    rep = _reporter(records=[{"outcome": "skipped", "reason": "no status capability"},
                             {"outcome": "skipped", "reason": "too little memory"}])
    term = _summary(rep)
    line = "ERROR: every one of the 2 cases was skipped, so none was judged (the first: no status capability)"
    assert ("line", line) in term.out and term.markup[line] == {"red": True, "bold": True}
    rep = _reporter(records=[{"outcome": "skipped", "reason": None}])
    assert "ERROR: every one of the 1 cases was skipped, so none was judged (the first: )" in _summary(rep).lines()
    for other in ("passed", "failed", "xfailed"):
        rep = _reporter(records=[{"outcome": "skipped", "reason": "r"}, {"outcome": other, "reason": "r"}])
        assert not any(t.startswith("ERROR") for t in _summary(rep).lines()), other


@pytest.mark.parametrize("backend,report_dir,error", [
    (None, None, False), ("x:Y", None, True), (None, "reports", True)])
def test_no_case_run_is_an_error_line_when_a_conformance_run_was_asked_for(backend, report_dir, error):
    rep = _reporter(backend=backend)
    rep.dir = Path(report_dir) if report_dir else None
    rep.selected = []
    lines = _summary(rep).lines()
    assert (f"ERROR: {rep.empty_run()}" in lines) is error, lines
    rep.interrupts.count = 1                       # an interrupted run says so, not this
    assert not any(t.startswith("ERROR") for t in _summary(rep).lines())


def test_setup_errors_incidents_and_unexcused_known_failures_are_written_in_full():
    rep = _reporter(backend="x:Y", records=[{"outcome": "passed", "reason": None}])
    rep.setup_errors = ["backend x:Y failed to start: boom", "another"]
    rep.state().incidents = ["own close"]
    rep.incidents = ["gw1: its close"]
    rep.unexcused = [f"case{i}" for i in range(23)]
    term = Terminal()
    terminal.pytest_terminal_summary(term, rep.config)
    out = term.out
    assert out[:2] == [("line", "ERROR: backend x:Y failed to start: boom"), ("line", "ERROR: another")]
    assert term.markup["ERROR: another"] == {"red": True, "bold": True}
    i = out.index(("section", "aclnn conformance: incidents outside any case (they fail the run)"))
    assert out[i + 1:i + 3] == [("line", "own close"), ("line", "gw1: its close")]
    assert term.markup[out[i][1]] == {"red": True}
    j = out.index(("section", "aclnn conformance: 23 known failures not excused (they passed in --baseline)"))
    assert out[j + 1:j + 22] == [("line", f"case{i}") for i in range(20)] + [("line", "... and 3 more")]
    assert term.markup[out[j][1]] == {"yellow": True}
    rep.unexcused = rep.unexcused[:21]
    lines = _summary(rep).lines()
    assert "case19" in lines and "case20" not in lines and "... and 1 more" in lines
    rep.unexcused = rep.unexcused[:20]
    lines = _summary(rep).lines()
    assert "case19" in lines and not any(t.startswith("... and") for t in lines)


def test_the_per_operator_table_and_the_reports_line_follow_the_records(tmp_path):
    recs = [{"outcome": o, "reason": None, "metrics": {"max_ulp": 0.5}} for o in ("passed", "failed")]
    rep = _reporter(records=recs)
    rep.config.option.verbose = 1                   # -v: the full table, as summary.md has it
    term = _summary(rep)
    table = summary.terminal_lines(list(rep.records.values())) + summary.within_standard(rep.records.values())
    i = term.out.index(("section", "aclnn conformance: per operator, dtype and product"))
    assert term.out[i + 1:] == [("line", t) for t in table]
    rep.dir = tmp_path
    assert _summary(rep).out[-1] == ("line", f"reports: {tmp_path}/{formats.file_list()}")
    assert _summary(_reporter()).out == []          # no record: no table
    assert terminal.pytest_terminal_summary(Terminal(), SimpleNamespace(stash={})) is None


def _records(ops, dtypes, products, outcome="passed", reason=None):
    return [{"outcome": outcome, "reason": reason, "op": op, "product": p, "dtypes": {"self": d}, "out_dtype": d,
             "metrics": {"max_ulp": 0.5}} for op in ops for d in dtypes for p in products]


def test_by_default_the_table_is_a_line_per_operator_and_product_and_the_failed_groups_dtypes():
    """It was a line per operator, dtype and product, 485 lines for the default run (issue 42,
    item 14): now one per operator and product, then the dtypes of only the groups with a failure."""
    recs = _records(["A", "B"], ["float32", "float16", "bfloat16"], ["p1", "p2"]) \
        + _records(["A"], ["int8"], ["p1"], outcome="failed")
    rep = _reporter(records=recs)
    rep.config.option.verbose = 0
    term = _summary(rep)
    sections = [t for k, t in term.out if k == "section"]
    assert sections == ["aclnn conformance: per operator and product (-v: and dtype)",
                        "aclnn conformance: where cases failed, per dtype"], sections
    lines = term.lines()
    per_op = lines[:4]
    assert [line.split()[:2] for line in per_op] == [["A", "p1"], ["A", "p2"], ["B", "p1"], ["B", "p2"]]
    assert per_op[0].split()[2:8] == ["3", "passed", "1", "failed", "0", "skipped"]
    detail = lines[4:]
    assert [line.split()[:3] for line in detail] == [["A", "bfloat16", "p1"], ["A", "float16", "p1"],
                                                     ["A", "float32", "p1"], ["A", "int8", "p1"]], detail


def test_skips_are_counted_by_reason_in_the_summary_without_rs():
    recs = _records(["A"], ["float32"], ["p1", "p2", "p3"], outcome="skipped", reason="no bfloat16 here") \
        + _records(["A"], ["float16"], ["p1"], outcome="skipped", reason="too little memory") \
        + _records(["B"], ["float32"], ["p1"])
    for i in range(terminal.REASONS):
        recs += _records(["C"], [f"d{i}"], ["p1"], outcome="skipped", reason=f"reason {i}")
    rep = _reporter(records=recs)
    rep.config.option.verbose = 0
    term = _summary(rep)
    i = term.out.index(("section", f"aclnn conformance: {4 + terminal.REASONS} skipped, by reason"))
    lines = [t for _, t in term.out[i + 1:]]
    assert lines[:2] == ["      3  no bfloat16 here", "      1  too little memory"], lines
    assert len(lines) == terminal.REASONS + 1 and lines[-1] == "... and 2 more reasons (-rs lists every skip)"


# -- sharding and known failures change what runs -------------------------------------------------
class Item:
    def __init__(self, case, nodeid=None):
        self.callspec = SimpleNamespace(params={"case": case})
        self.nodeid = nodeid or f"{NUMBERS}[{getattr(case, 'id', case)}]"
        self.marks = []

    def add_marker(self, mark):
        self.marks.append(mark)


def _collect(rep, items):
    gone = []
    rep.config.hook = SimpleNamespace(pytest_deselected=lambda items: gone.extend(items))
    report.pytest_collection_modifyitems(rep.config, items)
    return gone


def test_a_shard_keeps_its_own_cases_and_every_item_that_is_not_a_case():
    cases = CASES[:40]
    rep = _reporter(cases=cases)
    rep.shard = (2, 3)
    where = shard.assign((c.id for c in cases), 3)
    plain = SimpleNamespace(nodeid="tests/test_x.py::t")               # no callspec
    other = Item("not a case")                                          # a parameter that is no Case
    items = [plain, other] + [Item(c) for c in cases]
    before = list(items)
    gone = _collect(rep, items)
    assert items == [plain, other] + [i for i in before[2:] if where[i.callspec.params["case"].id] == 2]
    assert gone == [i for i in before[2:] if where[i.callspec.params["case"].id] != 2] and gone
    rep.shard = (1, 1)
    items = list(before)
    assert _collect(rep, items) == [] and items == before                # nothing dropped: no deselect call


def test_a_known_failure_is_marked_xfail_unless_it_passed_in_the_baseline():
    a, b, c = CASES[:3]
    rep = _reporter(cases=CASES[:3])
    rep.known = [knownfail.Entry((a.id, b.id), "slow path", "gitee#1", True, "k.yaml:1")]
    items = [Item(a), Item(b), Item(c), Item("not a case")]
    rep.baseline = {items[1].nodeid: "passed"}
    _collect(rep, items)
    (mark,) = items[0].marks
    assert mark.name == "xfail" and mark.kwargs == {"reason": "known failure: slow path (gitee#1)", "strict": True}
    assert items[1].marks == [] and rep.unexcused == [items[1].nodeid]
    assert items[2].marks == [] and items[3].marks == []


# -- the run's fields, the reports at the start and at the end ------------------------------------
INFO = SimpleNamespace(name="ref", capabilities={"status", "determinism"}, products=("atlas-training", "atlas-a2"),
                       deterministic=False)


def _run_reporter(tmp_path, **state):
    golden = tmp_path / "golden"
    golden.mkdir(exist_ok=True)
    (tmp_path / "tol.yaml").write_text("standards: {}\n")
    fields = dict(info=INFO, products=["atlas-a2", "atlas-inference", "atlas-training"], backend_opts={"device": "1"},
                  manifest_hash="a" * 64, golden_dir=golden, tolerances_hash="b" * 64,
                  tolerance_path=tmp_path / "tol.yaml", protections={"writes": "confined"})
    fields.update(state)
    rep = _reporter(backend="pkg.mod:Be", **fields)
    rep.config.option.standard, rep.config.option.shard = "strict", "1/2"
    return rep


def test_the_run_fields_name_the_backend_its_products_and_what_the_run_judged_by(tmp_path):
    from suite.report import results
    rep = _run_reporter(tmp_path)
    run = rep.run_fields()
    assert run == {"backend": {"spec": "pkg.mod:Be", "options": {"device": "1"}, "name": "ref",
                               "capabilities": ["determinism", "status"], "products": ["atlas-training", "atlas-a2"],
                               "deterministic": False},
                   "products": ["atlas-a2", "atlas-training"], "standard_override": "strict",
                   "manifest_hash": "a" * 64, "tolerances_hash": "b" * 64, "machine": results.machine(),
                   "shard": "1/2", "protections": {"writes": "confined"}}
    assert run["protections"] is not rep.state().protections
    # a worker's backend, handed over at its end, is the one named
    rep.backend = {"name": "gw0's", "products": ["atlas-a2"]}
    assert rep.run_fields()["backend"] == {"spec": "pkg.mod:Be", "options": {"device": "1"}, "name": "gw0's",
                                           "products": ["atlas-a2"]}
    assert rep.run_fields()["products"] == ["atlas-a2"]
    rep.config.option.backend = None
    assert rep.run_fields()["backend"]["spec"] == "reference"
    # a run timed against a baseline backend names it (results.json's run-level timing_baseline)
    from suite.plugin.baseline import Options
    rep.state().against = Options("pkg:B", {"seed": "1"}, 0.1, 0.01)
    assert rep.run_fields()["timing_baseline"] == {"spec": "pkg:B", "options": {"seed": "1"}}


def test_no_backend_made_names_the_spec_and_every_product_the_run_asked_for(tmp_path):
    rep = _run_reporter(tmp_path, info=None)
    run = rep.run_fields()
    assert run["backend"] == {"spec": "pkg.mod:Be", "options": {"device": "1"}}
    assert run["products"] == ["atlas-a2", "atlas-inference", "atlas-training"]


def test_hashes_not_pinned_are_read_from_the_files_and_a_manifest_that_cannot_be_is_unavailable(tmp_path,
                                                                                                 monkeypatch):
    from suite.common.digest import file_sha256
    from suite.golden.store import GoldenStore
    rep = _run_reporter(tmp_path, manifest_hash=None, tolerances_hash=None)
    (tmp_path / "golden" / "manifest.json").write_bytes((ROOT / "golden" / "manifest.json").read_bytes())
    run = rep.run_fields()
    assert run["tolerances_hash"] == file_sha256(tmp_path / "tol.yaml")
    assert run["manifest_hash"] == GoldenStore(ROOT / "golden").manifest_hash() != ""

    def broken(self):
        raise RuntimeError("the store broke")
    monkeypatch.setattr(GoldenStore, "manifest_hash", broken)
    assert rep.run_fields()["manifest_hash"] == "unavailable"      # the reports are written all the same


def test_the_reports_say_in_progress_at_the_start_and_the_journal_goes_only_with_a_finished_run(tmp_path):
    from suite.report import journal, results
    for incomplete in (None, "stopped early after 1 cases: x"):
        d = tmp_path / f"r{incomplete is None}"
        d.mkdir()
        rep = _run_reporter(tmp_path)
        rep.records = {}
        rep.dir = d
        rep.state().incidents = ["own close"]
        rep.start()
        doc = results.read(d / "results.json")
        assert doc["complete"] is False and doc["incomplete"] == journal.IN_PROGRESS and doc["records"] == []
        assert doc["backend"] == rep.run_fields()["backend"] and doc["incidents"] == []
        assert rep.journal is not None and (d / journal.JOURNAL).exists()
        fields = {**results.case_fields(CASES[0], "numbers", "k1"), "status": None}
        rep.add(SimpleNamespace(aclnn=fields, failed=False, passed=True, skipped=False, when="call"))
        assert journal.recover(d / journal.JOURNAL)["records"][0]["key"] == "k1"
        assert rep.finish(incomplete) == d
        doc = results.read(d / "results.json")
        assert doc["incomplete"] == incomplete and doc["complete"] is (incomplete is None)
        assert [r["key"] for r in doc["records"]] == ["k1"] and doc["incidents"] == ["own close"]
        assert doc == rep.document(incomplete)
        assert (d / journal.JOURNAL).exists() is (incomplete is not None)


# -- a record from every report that finishes a case, and from a worker that died ----------------
def _report(nodeid, when="call", outcome="passed", aclnn=None, longrepr=None, wasxfail=None):
    r = SimpleNamespace(nodeid=nodeid, when=when, passed=outcome == "passed", failed=outcome == "failed",
                        skipped=outcome == "skipped", longrepr=longrepr)
    if aclnn is not None:
        r.aclnn = aclnn
    if wasxfail is not None:
        r.wasxfail = wasxfail
    return r


# xdist's report for a worker that died mid-test is "failed" with when "???" (dsession.py), which
# outcome_of does not take as the end of a case's test: add() says "failed" itself
@pytest.mark.parametrize("when", ["call", "???"])
def test_a_failed_report_with_no_record_is_rebuilt_from_its_node_id(when):
    case = CASES[5]
    rep = _reporter(cases=CASES[:10])
    nodeid = f"{NUMBERS}[{case.id}]"
    rep.add(_report(nodeid, when=when, outcome="failed", longrepr="worker 'gw0' crashed while running it"))
    rec = rep.records[nodeid]
    assert rec["outcome"] == "failed" and rec["case"] == case.id and rec["kind"] == "numbers"
    assert rec["fault"] == "process died" and rec["op"] == case.op and rec["key"] == nodeid
    assert rec["reason"] == (f"{case.id}: the test process died while running it "
                             f"(worker 'gw0' crashed while running it)")
    # not a conformance case, a case not in the session, a module with no kind: no record
    for other in ("tests/test_x.py::t", f"{NUMBERS}[no-such-case]", f"tests/test_report_shard.py::t[{case.id}]"):
        rep.add(_report(other, when=when, outcome="failed", longrepr="x"))
        assert other not in rep.records
    rep.add(_report(f"{NUMBERS}[{CASES[6].id}]", outcome="passed"))     # passed, no record: nothing
    assert len(rep.records) == 1


@pytest.mark.parametrize("outcome,note,wasxfail,expected", [
    ("passed", None, None, ("passed", None)),
    ("passed", "within standard", None, ("passed", "within standard")),
    ("failed", None, None, ("failed", "its message")),
    ("passed", None, "known", ("xpassed", "known")),
])
def test_a_record_takes_its_outcome_and_reason_from_the_report(outcome, note, wasxfail, expected):
    rep = _reporter()
    fields = {"key": "k", "case": "c", "status": None, "message": "its message", "note": note}
    rep.add(_report("k", outcome=outcome, aclnn=fields, wasxfail=wasxfail, longrepr="first line\nsecond"))
    assert (rep.records["k"]["outcome"], rep.records["k"]["reason"]) == expected
    rep.add(_report("k2", when="setup", outcome="passed", aclnn={**fields, "key": "k2"}))
    assert "k2" not in rep.records                    # the setup of a test that goes on


def test_a_failure_with_no_message_takes_the_first_line_of_pytests_report():
    rep = _reporter()
    rep.add(_report("k", outcome="failed", aclnn={"key": "k", "message": None}, longrepr="first line\nsecond"))
    rep.add(_report("k2", outcome="failed", aclnn={"key": "k2"}, longrepr=""))
    assert rep.records["k"]["reason"] == "first line" and rep.records["k2"]["reason"] == ""


# -- the options, read once at the session's start ------------------------------------------------
def _config_with(tmp_path, **opts):
    opt = SimpleNamespace(**{"report_dir": None, "shard": None, "known_failures": None, "baseline": None,
                             "backend": None, **opts})
    st = SimpleNamespace(incidents=[], error=None, info=None, cases=CASES[:4], products=["atlas-a2"])
    return SimpleNamespace(option=opt, stash={plugin.STATE: st}, rootpath=ROOT,
                           pluginmanager=SimpleNamespace(getplugin=lambda name: None))


def test_the_options_are_read_into_the_reporter(tmp_path):
    from suite.report import results
    recs = [results.make_record({**results.case_fields(CASES[i], "numbers", k), "status": None}, o, None)
            for i, k, o in ((0, "a", "passed"), (1, "b", "failed"))]
    results.write(tmp_path / "base.json", results.make_document(_run_doc(), recs))
    (tmp_path / "known.yaml").write_text(f"- cases: '{CASES[0].id}'\n  reason: r\n")
    rep = Reporter(_config_with(tmp_path, report_dir=str(tmp_path / "out"), shard="2/3",
                                known_failures=str(tmp_path / "known.yaml"), baseline=str(tmp_path / "base.json")))
    assert rep.dir == tmp_path / "out" and (tmp_path / "out").is_dir() and rep.shard == (2, 3)
    assert [e.patterns for e in rep.known] == [(CASES[0].id,)]
    assert rep.baseline == {"a": "passed", "b": "failed"}
    assert (rep.records, rep.incidents, rep.setup_errors, rep.unexcused, rep.interrupted) == ({}, [], [], [], [])
    assert rep.backend is None and rep.journal is None and rep.selected is None and rep.interrupts.count == 0
    plain = Reporter(_config_with(tmp_path))
    assert (plain.dir, plain.shard, plain.known, plain.baseline) == (None, None, [], {})


def _run_doc():
    return {"backend": {"spec": "reference", "options": {}}, "products": ["atlas-a2"], "standard_override": None,
            "manifest_hash": "", "tolerances_hash": "", "machine": {}, "shard": None, "protections": {}}


@pytest.mark.parametrize("opts,line", [
    ({"shard": "3/2"}, "--shard '3/2': need 1 <= K <= N <= "),
    ({"known_failures": "{tmp}/absent.yaml"}, "--known-failures: {tmp}/absent.yaml"),
    ({"baseline": "{tmp}/absent.json"}, "--baseline: {tmp}/absent.json"),
    ({"report_dir": "{tmp}/file/sub"}, "--report-dir {tmp}/file/sub: cannot write there"),
])
def test_a_bad_option_is_one_usage_error_line(tmp_path, opts, line):
    (tmp_path / "file").write_text("")
    opts = {k: v.format(tmp=tmp_path) for k, v in opts.items()}
    with pytest.raises(pytest.UsageError) as e:
        Reporter(_config_with(tmp_path, **opts))
    assert str(e.value).startswith(line.format(tmp=tmp_path)) and "\n" not in str(e.value)
    assert e.value.__cause__ is None and (e.value.__suppress_context__ or e.value.__context__ is None)


def test_a_worker_does_not_check_the_report_folder_the_controller_writes(tmp_path):
    (tmp_path / "file").write_text("")
    config = _config_with(tmp_path, report_dir=str(tmp_path / "file" / "sub"))
    config.workerinput = {}
    assert Reporter(config).dir == tmp_path / "file" / "sub"


def test_a_known_failure_pattern_that_matches_no_case_of_the_products_run_is_warned_about(tmp_path):
    (tmp_path / "known.yaml").write_text(f"- cases: ['{A2[0].id}', 'Nothing-*']\n  reason: r\n"
                                         f"- cases: '{A2[3].id}'\n  reason: r\n")
    config = _config_with(tmp_path, known_failures=str(tmp_path / "known.yaml"))
    config.stash[plugin.STATE].cases = [A2[0], SimpleNamespace(id=A2[3].id, product="atlas-training")]
    warned = []
    config.issue_config_time_warning = lambda w, stacklevel: warned.append((str(w), stacklevel))
    report.pytest_configure(config)
    assert isinstance(config.stash[report.REPORTER], Reporter)
    known = tmp_path / "known.yaml"
    assert warned == [(f"--known-failures {known}:1: pattern 'Nothing-*' matches no case of the case files for "
                       f"products atlas-a2; delete it", 2),
                      (f"--known-failures {known}:3: pattern '{A2[3].id}' matches no case of the case files for "
                       f"products atlas-a2; delete it", 2)]
    config.workerinput = {}                                # a worker leaves the warnings to the controller
    warned.clear()
    report.pytest_configure(config)
    assert warned == []


# -- what the workers hand over, and what the controller learns of the collection -----------------
def test_the_collector_takes_each_report_and_what_pytest_selected():
    rep = _reporter()
    col = report._Collector(rep)
    fields = {"key": "k", "case": "c", "status": None}
    col.pytest_runtest_logreport(_report("k", aclnn=fields))
    assert rep.records["k"]["outcome"] == "passed"
    session = SimpleNamespace(config=rep.config, items=[SimpleNamespace(nodeid="a"), SimpleNamespace(nodeid="b")])
    col.pytest_collection_finish(session)
    assert rep.selected == ["a", "b"]
    rep.selected = None
    rep.config.pluginmanager = SimpleNamespace(getplugin=lambda name: object() if name == "dsession" else None)
    col.pytest_collection_finish(session)                 # the controller of xdist collects nothing itself
    assert rep.selected is None
    col.pytest_xdist_node_collection_finished(None, ["a", "b"])
    col.pytest_xdist_node_collection_finished(None, ["a"])
    assert rep.selected == ["a", "b"]
    col.pytest_xdist_node_collection_finished(None, ["a", "b", "c"])
    assert rep.selected == ["a", "b", "c"]
    col.pytest_xdist_node_collection_finished(None, ["x", "y", "z"])
    assert rep.selected == ["a", "b", "c"]


def test_a_workers_backend_incidents_setup_error_and_signals_reach_the_controller():
    rep = _reporter()
    col = report._Collector(rep)
    out = {report.BACKEND_KEY: {"name": "be"}, report.INCIDENTS_KEY: ["closed badly", "exit 3"],
           report.SETUP_KEY: "backend failed to start", report.INTERRUPTED_KEY: "interrupted by SIGTERM after 2 cases"}
    col.pytest_testnodedown(SimpleNamespace(workeroutput=out, gateway=SimpleNamespace(id="gw1")), None)
    col.pytest_testnodedown(SimpleNamespace(workeroutput=dict(out, **{report.BACKEND_KEY: None})), None)
    assert rep.backend == {"name": "be"}
    assert rep.incidents == ["gw1: closed badly", "gw1: exit 3", "worker: closed badly", "worker: exit 3"]
    assert rep.setup_errors == ["backend failed to start"]            # once, though both said it
    assert rep.interrupted == ["gw1: interrupted by SIGTERM after 2 cases", "worker: interrupted by SIGTERM after 2 cases"]
    quiet = _reporter()
    report._Collector(quiet).pytest_testnodedown(SimpleNamespace(), "it died")     # no workeroutput at all
    assert (quiet.backend, quiet.incidents, quiet.setup_errors, quiet.interrupted) == (None, [], [], [])


def test_the_session_start_registers_the_collector_and_writes_the_first_reports(tmp_path, monkeypatch):
    from suite.report import journal
    for worker in (False, True):
        rep = _run_reporter(tmp_path)
        registered, installed = [], []
        rep.config.pluginmanager = SimpleNamespace(register=lambda p, name: registered.append((p, name)),
                                                   getplugin=lambda name: None)      # no xdist
        monkeypatch.setattr(rep.interrupts, "install", lambda: installed.append(1))
        d = tmp_path / f"w{worker}"
        d.mkdir()
        rep.dir = d
        if worker:
            rep.config.workerinput = {}
        report.pytest_sessionstart(SimpleNamespace(config=rep.config))
        ((col, name),) = registered
        assert isinstance(col, report._Collector) and col.rep is rep and name == "aclnn-report-collector"
        assert installed == [1]
        assert (d / "results.json").exists() is (not worker) and (rep.journal is None) is worker
        if not worker:
            rep.finish(None)
            assert not (d / journal.JOURNAL).exists()


E_OK = pytest.ExitCode.OK
INCOMPLETE = [
    # (what, pytest's status, the reporter's and session's state, the reason)
    ("a worker's setup error first", E_OK,
     {"setup_errors": ["gw0's"], "own_error": "own"}, "the session could not start: gw0's"),
    ("the own setup error", E_OK, {"own_error": "own"}, "the session could not start: own"),
    ("signals", E_OK, {"signals": 2}, "interrupted by SIGTERM, and 1 more signal after 1 cases"),
    ("a worker's signal", E_OK, {"worker_signals": ["gw0: x", "gw1: y"]},
     "a worker was interrupted after 1 cases (gw0: x)"),
    ("-x", pytest.ExitCode.TESTS_FAILED, {"shouldfail": "stopping after 1 failures"},
     "stopped early after 1 cases: stopping after 1 failures"),
    ("the suite's own stop", pytest.ExitCode.INTERRUPTED, {"shouldstop": "device lost"},
     "stopped early after 1 cases: device lost"),
    ("a worker's stop, on xdist", E_OK, {"dsession_stop": "gw0 lost its device"},
     "stopped early after 1 cases: gw0 lost its device"),
    ("a stop and an internal error", pytest.ExitCode.INTERNAL_ERROR, {"shouldstop": "x"}, "pytest hit an internal error"),
    ("Ctrl-C", pytest.ExitCode.INTERRUPTED, {}, "interrupted (Ctrl-C or SIGTERM) after 1 cases"),
    ("pytest's usage error", pytest.ExitCode.USAGE_ERROR, {}, "the session could not start (usage error)"),
    ("finished", E_OK, {}, None),
    ("finished with failures", pytest.ExitCode.TESTS_FAILED, {}, None),
    ("no record", pytest.ExitCode.NO_TESTS_COLLECTED, {"records": False}, "no conformance case ran: "),
]


@pytest.mark.parametrize("what,status,kw,why", INCOMPLETE, ids=[r[0] for r in INCOMPLETE])
def test_why_a_run_did_not_finish(what, status, kw, why):
    import signal as _signal
    rep = _reporter(records=[{"outcome": "passed", "reason": None}] if kw.get("records", True) else [])
    rep.state().error = kw.get("own_error")
    rep.setup_errors = kw.get("setup_errors", [])
    rep.interrupts.count, rep.interrupts.first = kw.get("signals", 0), _signal.SIGTERM
    rep.interrupted = kw.get("worker_signals", [])
    dsession = SimpleNamespace(shouldstop=kw.get("dsession_stop", False))
    rep.config.pluginmanager = SimpleNamespace(getplugin=lambda name: dsession if name == "dsession" else None)
    session = SimpleNamespace(config=rep.config, exitstatus=status, shouldfail=kw.get("shouldfail", False),
                              shouldstop=kw.get("shouldstop", False))
    got = report._incomplete(session, rep)
    assert got == why if not why or not why.endswith(": ") else got.startswith(why), got


def test_a_test_module_is_read_as_utf_8_whatever_the_locale_says(tmp_path, monkeypatch):
    """A machine whose locale's encoding is ASCII (no UTF-8 mode): a module with a non-ASCII comment
    is still read, and its kind found."""
    import io
    (tmp_path / "test_mine.py").write_text("# réseau\nCASE_KIND = Kind.NUMBERS\n", encoding="utf-8")
    monkeypatch.setattr(io, "text_encoding", lambda encoding, stacklevel=2: encoding or "ascii")
    rep = _reporter()
    rep.config.rootpath = tmp_path
    assert rep._kind_of("test_mine.py") == "numbers"


def test_pytest_help_lists_the_report_options_in_the_suites_group_with_their_metavars():
    """`pytest --help` (what a user reads): the four options under aclnn-conformance, each with the
    placeholder the docs write and the facts its line must give."""
    groups = {}

    class Group:
        def __init__(self):
            self.opts = {}

        def addoption(self, name, **attrs):
            self.opts[name] = attrs

    parser = SimpleNamespace(getgroup=lambda name: groups.setdefault(name, Group()))
    report.pytest_addoption(parser)
    assert list(groups) == ["aclnn-conformance"]
    opts = groups["aclnn-conformance"].opts
    assert {k: v["metavar"] for k, v in opts.items()} == {"--report-dir": "DIR", "--known-failures": "FILE",
                                                          "--shard": "K/N", "--baseline": "RESULTS"}
    assert all(v.get("default") is None for v in opts.values())
    helps = {k: " ".join(v["help"].split()) for k, v in opts.items()}
    assert formats.file_list() in helps["--report-dir"] and "DIR" in helps["--report-dir"]
    assert all(w in helps["--known-failures"] for w in ("YAML", "xfail", "XPASS", "strict"))
    assert "K-th of N" in helps["--shard"] and "deselect" in helps["--shard"]
    assert all(w in helps["--baseline"] for w in ("results.json", "--known-failures", "not excused", "regression"))
