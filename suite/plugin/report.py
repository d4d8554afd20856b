"""Pytest side of reports, known failures and sharding (registered by suite/plugin/__init__.py).

Records arrive on `report.aclnn` (set by the plugin's makereport hook, so they travel from xdist
workers); only the controller, or the only process, writes `--report-dir`."""
from __future__ import annotations

import os
import re
from pathlib import Path
from collections import Counter
from typing import Any, Dict, List, Optional

import pytest

from suite.report import compare, formats, journal, knownfail, results, shard, trust, verdict
from suite.common.digest import file_sha256
from suite.golden.store import GoldenStore
from suite.run.interrupts import Interrupts
from suite.plugin import accuracy, baseline
from suite.plugin.outcomes import outcome_of
from suite.common.yamlfile import FileError

REPORTER = pytest.StashKey["Reporter"]()
BACKEND_KEY = "aclnn_backend"             # workeroutput keys: the backend's info, from a worker,
INCIDENTS_KEY = "aclnn_incidents"         # what went wrong outside any case there,
SETUP_KEY = "aclnn_setup_error"           # why its session could not start,
INTERRUPTED_KEY = "aclnn_interrupted"     # and the signals it was sent
CASE_NODE = re.compile(r"(.+?\.py)::[^\[]+\[(.+)\]")   # a conformance test's node id: module, case id


_OPTIONS = (  # (option, metavar, help): words for a person, not the verdict: data, where no mutant is planted
    ("--report-dir", "DIR", f"write {formats.file_list()} for the run into DIR"),
    ("--known-failures", "FILE", "YAML list of expected failures (case id globs, each with a reason): they "
                                 "xfail; one that passes is XPASS, which fails the run if strict"),
    ("--shard", "K/N", "run the K-th of N deterministic, balanced parts of the cases; deselect the rest"),
    ("--baseline", "RESULTS", "results.json of the last accepted run: a --known-failures case that passed "
                              "there is not excused (its failure is a regression); the backend may not write "
                              "it, so `report diff` takes it as BASE (docs/ci-gate.md)"),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aclnn-conformance")
    for name, metavar, text in _OPTIONS:           # no default: argparse's is None
        g.addoption(name, metavar=metavar, help=text)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class Reporter:
    """One session's report state."""

    def __init__(self, config: pytest.Config) -> None:
        opt = config.option
        self.config = config
        # Before any backend process can start (the session's, or xdist's workers'): the start of
        # the window in which the run's backend could write (results.json `windows`)
        self.started_ns = trust.start_ns()
        self.ended_ns: Optional[int] = None           # set as the reports are written at the end
        self.dir = Path(opt.report_dir) if opt.report_dir else None
        try:
            self.shard = shard.parse(opt.shard) if opt.shard else None
        except shard.ShardError as e:
            raise pytest.UsageError(str(e)) from None
        try:
            self.known = knownfail.load_file(Path(opt.known_failures)) if opt.known_failures else []
        except FileError as e:
            raise pytest.UsageError(f"--known-failures: {e}") from None
        self.baseline: Dict[str, str] = {}            # key -> outcome in the baseline run
        if opt.baseline:
            try:
                base = results.read(Path(opt.baseline))
            except results.ResultsError as e:
                raise pytest.UsageError(f"--baseline: {e}") from None
            self.baseline = {r["key"]: r["outcome"] for r in base["records"]}
        self.unexcused: List[str] = []                # listed as known failures, but passed in the baseline
        why = None if self.dir is None or _is_worker(config) else formats.unwritable(self.dir)
        if why:
            raise pytest.UsageError(f"--report-dir {self.dir}: {why}")
        self.records: Dict[str, Dict[str, Any]] = {}
        self.backend: Optional[Dict[str, Any]] = None
        self.incidents: List[str] = []                # from workers (the own process's: state.incidents)
        self.setup_errors: List[str] = []             # from workers
        self.journal: Optional[journal.Journal] = None
        self._kinds: Dict[str, str] = {}
        self.interrupts = Interrupts()
        self.interrupted: List[str] = []              # from workers
        self.selected: Optional[List[str]] = None     # node ids of the tests that were to run

    def state(self):
        from suite.plugin import STATE
        return self.config.stash[STATE]

    def add(self, report: pytest.TestReport) -> None:
        fields = getattr(report, "aclnn", None)
        if fields is None and report.failed:
            fields = self._fields_of_crash(report)
        got = outcome_of(report) if fields else None
        if got is None and fields and report.failed:
            got = ("failed", None)                 # a worker that died mid-test (xdist's "???" report)
        if got is None:
            return
        outcome, reason = got
        if outcome == "failed":
            reason = fields.get("message") or (str(report.longrepr).splitlines() or [""])[0]
        elif outcome == "passed" and fields.get("note"):
            reason = fields["note"]            # e.g. a determinism test judged within standard
        record = results.make_record(fields, outcome, reason)
        self.records[fields["key"]] = record
        if self.journal is not None:
            self.journal.add(record)

    def _fields_of_crash(self, report: pytest.TestReport) -> Optional[Dict[str, Any]]:
        """A failed report that carries no record (xdist made it for a worker that died while
        running the test): the record is rebuilt from the node id, so that the failure is in the
        reports too."""
        from suite.cases.model import Case
        m = CASE_NODE.fullmatch(report.nodeid)
        if not m:
            return None
        case = next((c for c in self.state().cases if c.id == m[2]), None)
        kind = self._kind_of(m[1])
        if not isinstance(case, Case) or kind is None:
            return None
        return {**results.case_fields(case, kind, report.nodeid), "status": None,
                "message": f"{case.id}: the test process died while running it ({report.longrepr})",
                "fault": "process died"}

    def _kind_of(self, path: str) -> Optional[str]:
        if path not in self._kinds:
            try:
                text = (self.config.rootpath / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            from suite.plugin import CASE_KIND_LINE
            m = CASE_KIND_LINE.search(text)
            self._kinds[path] = None if not m else (m[1] or m[2]).lower()
        return self._kinds[path]

    def backend_info(self) -> Dict[str, Any]:
        opt = self.config.option
        info = self.backend
        if info is None:
            made = self.state().info
            info = _info_dict(made) if made is not None else {}
        return {"spec": opt.backend or "reference", "options": self.state().backend_opts, **info}

    def run_fields(self) -> Dict[str, Any]:
        st = self.state()
        be = self.backend_info()
        products = [p for p in st.products if p in be.get("products", st.products)]
        try:
            # the hash of the manifest the run read before its backend started (GoldenStore.pin)
            manifest = st.manifest_hash if st.manifest_hash is not None else GoldenStore(st.golden_dir).manifest_hash()
        except Exception:               # a missing or broken manifest fails every case; say so there
            manifest = "unavailable"
        tolerances = st.tolerances_hash if st.tolerances_hash is not None else file_sha256(st.tolerance_path)
        return {"backend": be, "products": products, "standard_override": self.config.option.standard,
                "manifest_hash": manifest, "tolerances_hash": tolerances, "machine": results.machine(),
                "shard": self.config.option.shard, "protections": dict(st.protections),
                **baseline.run_field(st.against), **accuracy.run_field(st.double)}

    def all_incidents(self) -> List[str]:
        return list(self.state().incidents) + self.incidents

    def window(self, ended: bool) -> Dict[str, Any]:
        """When and where this run's backend could write (suite/report/trust.py). Ended: every backend
        process has been closed and reaped; the folders its confinement protected (none where it
        was not confined: --confine=off, no Landlock, --isolation none). Not ended (the reports
        written at the start, the journal a killed run is recovered from): no end, and which
        folders it protects is not known yet (the backend's policy is made when it starts)."""
        if not ended:
            return trust.window(self.started_ns, None, None)
        policy = getattr(self.state(), "policy", None)
        end = self.ended_ns if self.ended_ns is not None else trust.end_ns()
        return trust.window(self.started_ns, end, list(policy.protected) if policy is not None else [],
                            list(policy.granted) if policy is not None else [])

    def document(self, incomplete: Optional[str] = None) -> Dict[str, Any]:
        return results.make_document({**self.run_fields(), "windows": [self.window(ended=True)]},
                                     self.records.values(), incomplete, self.all_incidents())

    def start(self) -> None:
        """Before the first case: reports that say the run has not finished (replacing any earlier
        run's), and the journal."""
        run = {**self.run_fields(), "windows": [self.window(ended=False)]}
        formats.write_reports(self.dir, results.make_document(run, (), journal.IN_PROGRESS))
        self.journal = journal.Journal(self.dir, run)

    def finish(self, incomplete: Optional[str]) -> Path:
        self.ended_ns = trust.end_ns()            # every backend process has ended (closed, reaped)
        formats.write_reports(self.dir, self.document(incomplete))
        if self.journal is not None:
            # Only a finished run's journal goes: an unfinished one is the record of what ran.
            self.journal.close(remove=incomplete is None)
        return self.dir

    def is_case_id(self, nodeid: str) -> bool:
        """Whether a node id names a conformance test (a test module with CASE_KIND, a case param)."""
        m = CASE_NODE.fullmatch(nodeid)
        return bool(m) and self._kind_of(m[1]) is not None

    def empty_run(self) -> Optional[str]:
        """Why a run with no record is not a result: where pytest ran and what it selected."""
        if self.records:
            return None
        ids = self.selected or []
        cases = sum(self.is_case_id(i) for i in ids)
        where = Counter(i.split("::")[0].split("/")[0] for i in ids)
        what = ", ".join(f"{n} under {d}" for d, n in where.most_common(3))
        return (f"no conformance case ran: pytest ran in {os.getcwd()} (rootdir {self.config.rootpath}) and "
                f"selected {len(ids)} tests{' (' + what + ')' if what else ''}, {cases} of them conformance "
                f"cases; run it in the project folder, or name suite/conformance")

    def all_skipped(self) -> Optional[str]:
        """Why a run in which no case was judged is not a pass (every record skipped)."""
        recs = list(self.records.values())
        if not recs or any(r["outcome"] != "skipped" for r in recs):
            return None
        first = recs[0].get("reason") or ""
        return f"every one of the {len(recs)} cases was skipped, so none was judged (the first: {first})"


def _info_dict(info: Any) -> Dict[str, Any]:
    return {"name": info.name, "capabilities": sorted(info.capabilities), "products": list(info.products),
            "deterministic": info.deterministic}


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    rep = Reporter(config)
    config.stash[REPORTER] = rep
    if rep.known and not _is_worker(config):
        st = rep.state()
        ids = [c.id for c in st.cases if c.product in st.products]
        for entry, pattern in knownfail.unused(rep.known, ids):
            config.issue_config_time_warning(pytest.PytestWarning(
                f"--known-failures {entry.where}: pattern {pattern!r} matches no case of the case files "
                f"for products {', '.join(st.products)}; delete it"), stacklevel=2)


def _case_of(item: pytest.Item):
    from suite.cases.model import Case
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    return case if isinstance(case, Case) else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    rep = config.stash[REPORTER]
    if rep.shard is not None:
        k, n = rep.shard
        where = shard.assign((c.id for c in rep.state().cases), n)
        keep, drop = [], []
        for item in items:
            case = _case_of(item)
            (keep if case is None or where.get(case.id, 1) == k else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
    for item in items:
        case = _case_of(item)
        entry = case is not None and knownfail.match(rep.known, case.id)
        if entry:
            if rep.baseline.get(item.nodeid) in compare.GOOD:
                # It passed in the last accepted run: the list does not excuse breaking it again.
                rep.unexcused.append(item.nodeid)
                continue
            item.add_marker(pytest.mark.xfail(reason=f"known failure: {entry.text}", strict=entry.strict))


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    rep = config.stash[REPORTER]
    config.pluginmanager.register(_Collector(rep), "aclnn-report-collector")
    # A CI job's cancel sends SIGTERM (often twice), a person Ctrl-C: the first ends the run like
    # Ctrl-C, so the reports say where it stopped; later ones cannot cut the reports short.
    rep.interrupts.install()
    if _is_worker(config):
        return
    if rep.dir is not None:
        rep.start()
    if config.pluginmanager.getplugin("dsession") is not None:
        try:
            rep.state().preflight()          # before xdist starts its workers (its hook is trylast)
        except pytest.UsageError:
            if rep.dir is not None:
                rep.finish(_incomplete(session, rep))
            raise


class _Collector:
    """Receives every report (on xdist, the controller receives the workers'), and worker info."""

    def __init__(self, rep: Reporter) -> None:
        self.rep = rep

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.rep.add(report)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if session.config.pluginmanager.getplugin("dsession") is None:
            self.rep.selected = [item.nodeid for item in session.items]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: List[str]) -> None:
        # Every worker collects the same tests; the controller learns them here.
        if self.rep.selected is None or len(ids) > len(self.rep.selected):
            self.rep.selected = list(ids)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        out = getattr(node, "workeroutput", {})
        if out.get(BACKEND_KEY):
            self.rep.backend = out[BACKEND_KEY]
        name = getattr(getattr(node, "gateway", None), "id", "worker")
        self.rep.incidents += [f"{name}: {x}" for x in out.get(INCIDENTS_KEY) or []]
        if out.get(SETUP_KEY) and out[SETUP_KEY] not in self.rep.setup_errors:
            self.rep.setup_errors.append(out[SETUP_KEY])
        if out.get(INTERRUPTED_KEY):
            self.rep.interrupted.append(f"{name}: {out[INTERRUPTED_KEY]}")


def _incomplete(session: pytest.Session, rep: Reporter) -> Optional[str]:
    """Why the run did not finish, or None when it did."""
    st = rep.state()
    setup = rep.setup_errors + ([st.error] if st.error else [])
    if setup:
        return f"the session could not start: {setup[0]}"
    signals = rep.interrupts.why(len(rep.records))
    if signals or rep.interrupted:
        return signals or f"a worker was interrupted after {len(rep.records)} cases ({rep.interrupted[0]})"
    status = session.exitstatus
    # -x / --maxfail, or the suite's own stop (a lost device); under xdist a worker's stop reaches
    # the controller's DSession plugin, not its session
    dsession = session.config.pluginmanager.getplugin("dsession")
    stop = session.shouldfail or session.shouldstop or getattr(dsession, "shouldstop", None)
    if stop and status != pytest.ExitCode.INTERNAL_ERROR:
        return f"stopped early after {len(rep.records)} cases: {stop}"
    if status == pytest.ExitCode.INTERRUPTED:
        return f"interrupted (Ctrl-C or SIGTERM) after {len(rep.records)} cases"
    if status == pytest.ExitCode.INTERNAL_ERROR:
        return "pytest hit an internal error"
    if status == pytest.ExitCode.USAGE_ERROR:
        return "the session could not start (usage error)"
    return rep.empty_run()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    rep = config.stash.get(REPORTER, None)
    if rep is None:
        return
    st = rep.state()
    rep.interrupts.finishing = True
    if _is_worker(config):
        if st.info is not None:
            config.workeroutput[BACKEND_KEY] = _info_dict(st.info)
        config.workeroutput[INCIDENTS_KEY] = list(st.incidents)
        if st.error:
            config.workeroutput[SETUP_KEY] = st.error
        config.workeroutput[INTERRUPTED_KEY] = rep.interrupts.why(len(rep.records))
        return
    incomplete = _incomplete(session, rep)
    if rep.dir is not None:
        rep.finish(incomplete)
    session.exitstatus = exit_status(session.exitstatus, rep, incomplete)


def exit_status(status: int, rep: Reporter, incomplete: Optional[str]) -> int:
    """The run's exit code, from the suite's own records: nothing a backend does at exit turns a
    run with a failed case, an incident, a setup error, a signal or nothing judged green. Whether
    it is green is the reports' verdict (suite/report/verdict.py reasons, the same rules), so the
    banner of report.html says PASS exactly when the run exits 0; the code says which failure."""
    E = pytest.ExitCode
    st = rep.state()
    if rep.setup_errors and not st.error:
        return E.USAGE_ERROR
    if (rep.interrupts.count or rep.interrupted) and status in (E.OK, E.TESTS_FAILED, E.NO_TESTS_COLLECTED):
        return E.INTERRUPTED
    if status not in (E.OK, E.NO_TESTS_COLLECTED):
        return status
    incidents = rep.all_incidents()
    if not rep.records and not incidents:
        # Nothing of the suite ran. A usage error when a backend was named, or when reports were
        # asked for and pytest saw nothing wrong (they say no case ran); else pytest ran the
        # project's own tests, or nothing: its status stands.
        if rep.config.option.backend is not None or (rep.dir is not None and status == E.OK):
            return E.USAGE_ERROR
        return status
    outcomes = Counter(r["outcome"] for r in rep.records.values())
    if verdict.reasons(outcomes, len(rep.records), len(incidents), incomplete):
        return E.TESTS_FAILED
    return status
