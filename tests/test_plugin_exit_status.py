"""The run's exit status (suite/plugin/report.py exit_status) at and around every rule: it comes from the
suite's own records, signals and setup, and only ever makes a run less green than pytest said."""
from __future__ import annotations

import signal
from types import SimpleNamespace

import pytest

from suite import plugin
from suite.plugin import report
from suite.run.interrupts import Interrupts
from suite.plugin.report import REPORTER, Reporter, exit_status

E = pytest.ExitCode


class FakeReporter:
    """What exit_status reads of a Reporter; all_skipped is the real one."""

    all_skipped = Reporter.all_skipped

    def __init__(self, outcomes=("passed",), *, setup_errors=(), own_error=None, signals=0, worker_signals=(),
                 incidents=(), backend=None, empty=None):
        self.records = {f"k{i}": {"outcome": o, "reason": "why"} for i, o in enumerate(outcomes)}
        self.setup_errors = list(setup_errors)
        self._state = SimpleNamespace(error=own_error)
        self.interrupts = Interrupts()
        self.interrupts.count = signals
        self.interrupted = list(worker_signals)
        self._incidents = list(incidents)
        self.config = SimpleNamespace(option=SimpleNamespace(backend=backend))
        self._empty = empty
        self.dir = None

    def state(self):
        return self._state

    def all_incidents(self):
        return self._incidents

    def empty_run(self):
        return self._empty if not self.records else None


ROWS = [
    # (what, pytest's status, reporter, expected)
    ("all passed", E.OK, FakeReporter(), E.OK),
    ("one failed among passes", E.OK, FakeReporter(("passed", "failed")), E.TESTS_FAILED),
    ("pytest already says failed", E.TESTS_FAILED, FakeReporter(("failed",)), E.TESTS_FAILED),
    ("xfailed and passed", E.OK, FakeReporter(("passed", "xfailed")), E.OK),
    ("an incident, no failure", E.OK, FakeReporter(incidents=["closed badly"]), E.TESTS_FAILED),
    ("an incident, no tests", E.NO_TESTS_COLLECTED, FakeReporter((), incidents=["x"]), E.TESTS_FAILED),
    ("a worker's setup error", E.OK, FakeReporter(setup_errors=["no device"]), E.USAGE_ERROR),
    ("own setup error already raised", E.USAGE_ERROR, FakeReporter(setup_errors=["e"], own_error="e"), E.USAGE_ERROR),
    ("one signal, all passed", E.OK, FakeReporter(signals=1), E.INTERRUPTED),
    ("two signals, pytest saw none", E.OK, FakeReporter(signals=2), E.INTERRUPTED),
    ("a signal and a failure", E.TESTS_FAILED, FakeReporter(("failed",), signals=1), E.INTERRUPTED),
    ("a worker's signal", E.OK, FakeReporter(worker_signals=["gw0: interrupted"]), E.INTERRUPTED),
    ("a signal, nothing ran", E.NO_TESTS_COLLECTED, FakeReporter((), signals=1), E.INTERRUPTED),
    ("pytest's internal error stays", E.INTERNAL_ERROR, FakeReporter(signals=1), E.INTERNAL_ERROR),
    ("pytest's usage error stays", E.USAGE_ERROR, FakeReporter(), E.USAGE_ERROR),
    ("interrupted stays", E.INTERRUPTED, FakeReporter(), E.INTERRUPTED),
    ("backend named, nothing ran", E.OK, FakeReporter((), backend="x:Y", empty="no case"), E.USAGE_ERROR),
    ("backend named, no tests at all", E.NO_TESTS_COLLECTED, FakeReporter((), backend="x:Y", empty="no case"),
     E.USAGE_ERROR),
    ("no backend named, nothing ran (the project's own tests)", E.OK, FakeReporter((), empty="no case"), E.OK),
    ("no backend named, no tests", E.NO_TESTS_COLLECTED, FakeReporter((), empty="no case"), E.NO_TESTS_COLLECTED),
    ("every case skipped", E.OK, FakeReporter(("skipped", "skipped")), E.TESTS_FAILED),
    ("every case skipped, backend named", E.OK, FakeReporter(("skipped",), backend="x:Y"), E.TESTS_FAILED),
    ("one judged among skips", E.OK, FakeReporter(("skipped", "passed")), E.OK),
    ("one xfailed among skips", E.OK, FakeReporter(("skipped", "xfailed")), E.OK),
]


@pytest.mark.parametrize("what,status,rep,expected", ROWS, ids=[r[0] for r in ROWS])
def test_exit_status(what, status, rep, expected):
    assert exit_status(status, rep, None) == expected


# -- an incident reaches the exit status from wherever it happened (issue 20, item 10f) ------------
def test_every_incident_is_counted_the_processes_own_and_the_workers():
    """all_incidents (what exit_status and the reports read) is this process's and the workers'."""
    rep = SimpleNamespace(state=lambda: SimpleNamespace(incidents=["own close"]), incidents=["gw1: its close"])
    assert Reporter.all_incidents(rep) == ["own close", "gw1: its close"]


class _Host:
    """A backend process whose close() went wrong (host.close gives it back as one line)."""

    def close(self):
        return "the backend's process exited with code 0 during close() or its exit handlers"


def _config(stash, **worker):
    opt = SimpleNamespace(report_dir=None, shard=None, known_failures=None, baseline=None, backend="x:Y")
    return SimpleNamespace(option=opt, stash=stash, pluginmanager=SimpleNamespace(getplugin=lambda name: None),
                           **worker)


def _session(config):
    return SimpleNamespace(config=config, exitstatus=E.OK, shouldfail=False, shouldstop=False)


def _state():
    """What plugin.Conformance holds at the session's end: a runner whose host is still open."""
    return SimpleNamespace(_runner=SimpleNamespace(backend=None, host=_Host()), _closed=None, incidents=[],
                           policy=None, info=None, error=None, _baseline=None, against=None,
                           _accuracy=None, double=None)


@pytest.mark.parametrize("where", ["serial", "xdist worker"])
def test_an_incident_in_the_backends_close_fails_a_run_whose_every_case_passed(where):
    """The session's end as pytest runs it: the plugin closes the backend (its incident kept), a
    worker hands its incidents to the controller, and the controller's exit status is 1."""
    st = _state()
    st.close = lambda: plugin.Conformance.close(st)
    stash = {plugin.STATE: st}
    config = _config(stash) if where == "serial" else _config(stash, workerinput={}, workeroutput={})
    rep = stash[REPORTER] = Reporter(config)
    rep.records = {"k": {"outcome": "passed", "reason": None}}
    session = _session(config)
    plugin.pytest_sessionfinish(session)
    report.pytest_sessionfinish(session)
    assert st.incidents == [_Host().close()]
    if where == "xdist worker":
        assert session.exitstatus == E.OK          # a worker's own status is not the run's
        cstash = {plugin.STATE: SimpleNamespace(incidents=[], error=None, info=None)}
        controller = _config(cstash)
        rep = cstash[REPORTER] = Reporter(controller)
        rep.records = {"k": {"outcome": "passed", "reason": None}}
        node = SimpleNamespace(workeroutput=config.workeroutput, gateway=SimpleNamespace(id="gw0"))
        report._Collector(rep).pytest_testnodedown(node, None)
        assert rep.all_incidents() == [f"gw0: {_Host().close()}"]
        session = _session(controller)
        report.pytest_sessionfinish(session)
    assert session.exitstatus == E.TESTS_FAILED


# -- the report's banner says PASS exactly when the exit status is 0 -------------------------------
# suite/report/verdict.py (report.html's PASS/FAIL banner, read from results.json alone) and
# exit_status (read from the live session) state the same rules twice: a failed case, an incident,
# an unfinished run, no record, every case skipped. Each row is one way a run ends; the session's
# end runs as the plugin runs it (the real Reporter, _incomplete, exit_status, the document the
# reports are written from), and the two must agree.
from pathlib import Path

from suite.report import results as _results
from suite.report.verdict import verdict as _verdict

ROOT = Path(__file__).resolve().parents[1]

ENDINGS = [
    # (what, pytest's status, outcomes of the records, what else happened)
    ("all passed", E.OK, ("passed", "passed"), {}),
    ("one failed", E.TESTS_FAILED, ("passed", "failed"), {}),
    ("a failure pytest did not count", E.OK, ("passed", "failed"), {}),
    ("known failures and a known failure that passed", E.OK, ("passed", "xfailed", "xpassed"), {}),
    ("only known failures", E.OK, ("xfailed",), {}),
    ("an incident, every case passed", E.OK, ("passed",), {"incidents": ["closed badly"]}),
    ("an incident, no record", E.NO_TESTS_COLLECTED, (), {"incidents": ["closed badly"]}),
    ("-x after a failure", E.TESTS_FAILED, ("failed",), {"stop": "stopping after 1 failures"}),
    ("the suite's own stop, nothing failed", E.OK, ("passed",), {"stop": "the device was lost"}),
    ("one signal", E.INTERRUPTED, ("passed",), {"signals": 1}),
    ("two signals, pytest saw none", E.OK, ("passed",), {"signals": 2}),
    ("a worker's signal", E.OK, ("passed",), {"worker_signals": ["gw0: interrupted by SIGTERM"]}),
    ("a worker's setup error", E.OK, ("passed",), {"setup_errors": ["backend x failed to start"]}),
    ("the own setup error", E.USAGE_ERROR, (), {"own_error": "backend x failed to start"}),
    ("pytest's internal error", E.INTERNAL_ERROR, ("passed",), {}),
    ("pytest's usage error", E.USAGE_ERROR, (), {}),
    ("backend named, no record, the project's tests ran", E.OK, (), {}),
    ("backend named, nothing collected", E.NO_TESTS_COLLECTED, (), {}),
    ("no backend named, no record, the project's tests ran", E.OK, (), {"backend": None}),
    ("no backend named, nothing collected", E.NO_TESTS_COLLECTED, (), {"backend": None}),
    ("every case skipped", E.OK, ("skipped", "skipped"), {}),
    ("every case skipped, no backend named", E.OK, ("skipped",), {"backend": None}),
    ("one passed among skips", E.OK, ("skipped", "passed"), {}),
    ("one failed among skips", E.TESTS_FAILED, ("skipped", "failed"), {}),
]


def _end(status, outcomes, *, incidents=(), stop=None, signals=0, worker_signals=(), setup_errors=(),
         own_error=None, backend="x:Y"):
    """(exit status, results document) of a session that ends so, with --report-dir given."""
    st = SimpleNamespace(incidents=list(incidents), error=own_error, info=None)
    opt = SimpleNamespace(report_dir=None, shard=None, known_failures=None, baseline=None, backend=backend)
    config = SimpleNamespace(option=opt, stash={plugin.STATE: st}, rootpath=ROOT,
                             pluginmanager=SimpleNamespace(getplugin=lambda name: None))
    rep = Reporter(config)
    rep.dir = Path("reports")                       # the banner is only written with --report-dir
    rep.records = {f"k{i}": {"key": f"k{i}", "outcome": o, "reason": None} for i, o in enumerate(outcomes)}
    rep.setup_errors = list(setup_errors)
    rep.interrupts.count, rep.interrupts.first = signals, (signal.SIGTERM if signals else None)
    rep.interrupted = list(worker_signals)
    rep.selected = []
    session = SimpleNamespace(config=config, exitstatus=status, shouldfail=stop, shouldstop=False)
    incomplete = report._incomplete(session, rep)
    return exit_status(status, rep, incomplete), _results.make_document({}, rep.records.values(), incomplete,
                                                                          rep.all_incidents())


@pytest.mark.parametrize("what,status,outcomes,kw", ENDINGS, ids=[r[0] for r in ENDINGS])
def test_the_banner_says_pass_exactly_when_the_exit_status_is_0(what, status, outcomes, kw):
    code, doc = _end(status, outcomes, **kw)
    passed, why = _verdict(doc)
    assert passed == (code == E.OK), (what, int(code), why)
