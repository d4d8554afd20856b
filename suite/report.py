"""Pytest side of reports, known failures and sharding (registered by suite/plugin.py).

Records arrive on `report.aclnn` (set by plugin.py's makereport hook, so they travel from xdist
workers); only the controller, or the only process, writes `--report-dir`."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from suite import html, knownfail, results, shard, summary
from suite.golden import GoldenStore, atomic_write
from suite.yamlfile import FileError

REPORTER = pytest.StashKey["Reporter"]()
BACKEND_KEY = "aclnn_backend"             # workeroutput key: the backend's info, from a worker


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aclnn-conformance")
    g.addoption("--report-dir", default=None, metavar="DIR",
                help="write results.json, summary.md and report.html for the run into DIR")
    g.addoption("--known-failures", default=None, metavar="FILE",
                help="YAML list of expected failures (case id globs with a reason): they xfail; "
                     "one that passes is XPASS, and fails the run if strict")
    g.addoption("--shard", default=None, metavar="K/N",
                help="run the K-th of N deterministic, balanced parts of the cases; deselect the rest")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class Reporter:
    """One session's report state."""

    def __init__(self, config: pytest.Config) -> None:
        opt = config.option
        self.config = config
        self.dir = Path(opt.report_dir) if opt.report_dir else None
        try:
            self.shard = shard.parse(opt.shard) if opt.shard else None
        except shard.ShardError as e:
            raise pytest.UsageError(str(e)) from None
        try:
            self.known = knownfail.load_file(Path(opt.known_failures)) if opt.known_failures else []
        except FileError as e:
            raise pytest.UsageError(f"--known-failures: {e}") from None
        self.records: Dict[str, Dict[str, Any]] = {}
        self.backend: Optional[Dict[str, Any]] = None

    def state(self):
        from suite.plugin import STATE
        return self.config.stash[STATE]

    def outcome(self, report: pytest.TestReport) -> Optional[tuple]:
        """(outcome, reason) of a report that finishes a case's test, else None."""
        xfail = getattr(report, "wasxfail", None)
        if report.when == "call":
            if report.passed:
                return ("xpassed", xfail) if xfail is not None else ("passed", None)
            if report.failed:
                return "failed", None
        if report.skipped:
            if xfail is not None:
                return "xfailed", xfail
            lr = report.longrepr
            reason = lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)
            return "skipped", reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
        return None

    def add(self, report: pytest.TestReport) -> None:
        fields = getattr(report, "aclnn", None)
        got = self.outcome(report) if fields else None
        if got is None:
            return
        outcome, reason = got
        if outcome == "failed":
            reason = fields.get("message") or (str(report.longrepr).splitlines() or [""])[0]
        self.records[fields["key"]] = results.make_record(fields, outcome, reason)

    def backend_info(self) -> Dict[str, Any]:
        opt = self.config.option
        info = self.backend
        if info is None:
            made = self.state().info
            info = _info_dict(made) if made is not None else {}
        return {"spec": opt.backend or "reference", "options": self.state().backend_opts, **info}

    def document(self) -> Dict[str, Any]:
        st = self.state()
        be = self.backend_info()
        products = [p for p in st.products if p in be.get("products", st.products)]
        run = {"backend": be, "products": products, "standard_override": self.config.option.standard,
               "manifest_hash": GoldenStore(st.golden_dir).manifest_hash(), "machine": results.machine(),
               "shard": self.config.option.shard}
        return results.make_document(run, self.records.values())

    def write(self) -> Path:
        doc = self.document()
        self.dir.mkdir(parents=True, exist_ok=True)
        results.write(self.dir / "results.json", doc)
        atomic_write(self.dir / "summary.md", summary.markdown(doc).encode())
        atomic_write(self.dir / "report.html", html.render(doc).encode())
        return self.dir


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
    from suite.cases import Case
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
            item.add_marker(pytest.mark.xfail(reason=f"known failure: {entry.text}", strict=entry.strict))


def pytest_sessionstart(session: pytest.Session) -> None:
    rep = session.config.stash[REPORTER]
    session.config.pluginmanager.register(_Collector(rep), "aclnn-report-collector")


class _Collector:
    """Receives every report (on xdist, the controller receives the workers'), and worker info."""

    def __init__(self, rep: Reporter) -> None:
        self.rep = rep

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.rep.add(report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        info = getattr(node, "workeroutput", {}).get(BACKEND_KEY)
        if info:
            self.rep.backend = info


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    rep = config.stash.get(REPORTER, None)
    if rep is None:
        return
    if _is_worker(config):
        made = rep.state().info
        if made is not None:
            config.workeroutput[BACKEND_KEY] = _info_dict(made)
        return
    if rep.dir is not None:
        rep.write()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    rep = config.stash.get(REPORTER, None)
    if rep is None or not rep.records:
        return
    lines = summary.terminal_lines(list(rep.records.values()))
    terminalreporter.section("aclnn conformance: per operator, dtype and product")
    for line in lines:
        terminalreporter.write_line(line)
    if rep.dir is not None:
        terminalreporter.write_line(f"reports: {rep.dir}/results.json, summary.md, report.html")
