"""The pytest plugin (stage 6, the top of the flow with suite.cli): case parametrization, the
backend's session, per-case records; its options are suite/plugin/options.py (whose pytest_addoption
is imported here, so pytest finds the hook in this module), its report hooks suite/plugin/report.py.

Everything the user passes reaches the code through `config`; nothing is global.

May import: every stage below (suite.common .. suite.report). Loaded by `-p suite.plugin` or
conftest.py's `pytest_plugins`; nothing in the suite imports it except suite/conformance/."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from suite.cases import model as cases_model
from suite.cases import load as cases_load
from suite import ops
from suite.run.backend import BackendError, parse_opts
from suite.contract import PRODUCTS
from suite.run import confine, namespace
from suite.golden import source as golden_source
from suite.golden import cache as golden_cache
from suite.golden.cache import GoldenCache
from suite.golden.store import GoldenStore
from suite.golden import where
from suite.common.digest import file_sha256
from suite.common.grouping import grouped
from suite.common.home import CHECKOUT, data_root, no_data_folder
from suite.run.host import make_host
from suite.run.seams import Backend, Host
from suite.run.memory import parse_size
from suite.report.results import case_fields
from suite.cases.model import Kind
from suite.run.runner import CaseFailure, CaseSkip, Runner, not_run_because
from suite.judge.table import load_table, standard_names
from suite.common.yamlfile import FileError
from suite.perf.case import CaseTimer
from suite.cases.hardware import HARDWARE_FILE, load_hardware
from suite.perf.protocol import Settings
from suite.plugin import accuracy, baseline, options
from suite.plugin.collect import CASE_KIND_LINE, collect_the_suite  # noqa: F401  (report.py reads it here)
from suite.plugin.options import SCALES, pytest_addoption  # noqa: F401  (the hook pytest finds here)

# Defaults are anchored at the suite's data folder (suite/common/home.py), not at pytest's rootdir, which
# pytest derives from the command line before it knows this plugin's options.
RECORD = pytest.StashKey[Dict[str, Any]]()
STATE = pytest.StashKey["Conformance"]()
# reports, known failures, sharding; --timing-baseline; --accuracy-baseline; what the run prints at its end
pytest_plugins = ["suite.plugin.report", "suite.plugin.baseline", "suite.plugin.accuracy", "suite.plugin.terminal"]


@dataclass(frozen=True)
class SetupError:
    """Stands in for the cases when the session cannot start (bad backend, tolerance table...): the
    one parameter of each conformance module, whose test fails with `message` (xdist workers cannot
    raise a usage error cleanly). Its own type, so no case field or string is taken for it."""

    message: str


class Conformance:
    """One session's state: the options, the cases, and (made on first need) the backend."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        root = data_root()
        opt = config.option
        self.case_paths = [Path(p) for p in opt.cases] or [root / "cases"]
        self.golden_dir = Path(opt.golden_dir) if opt.golden_dir else root / "golden"
        self.tolerance_path = Path(opt.tolerances) if opt.tolerances else root / "cases" / cases_model.TOLERANCE_FILE
        self.products = options.listed("--product", opt.product, PRODUCTS) or list(PRODUCTS)
        self.ops = options.listed("--op", opt.op, tuple(ops.OPERATORS))      # empty: every operator
        try:
            self.backend_opts = parse_opts(opt.backend_opt)
        except BackendError as e:
            raise pytest.UsageError(str(e)) from None
        cache = opt.golden_cache
        self.cache_dir = None if cache == "none" else Path(cache) if cache else golden_cache.default_cache_dir()
        try:
            self.max_memory = parse_size(opt.max_memory) if opt.max_memory else None
        except ValueError as e:
            raise pytest.UsageError(f"--max-memory: {e}") from None
        options.check_numbers(opt)
        self.timing = Settings(rounds=opt.timing_rounds, warm=opt.timing_warm) if opt.timing else None
        self.against = baseline.options_of(opt, opt.timing)       # --timing-baseline (suite/plugin/baseline.py)
        self.double = accuracy.options_of(opt)                    # --accuracy-baseline (suite/plugin/accuracy.py)
        self._baseline: Optional[Any] = None
        self._accuracy: Optional[Any] = None
        self._runner: Optional[Runner] = None
        self.error: Optional[str] = None
        self.incidents: List[str] = []         # what went wrong outside any case (the backend's close)
        self.info: Optional[Any] = None        # the backend's BackendInfo, kept after it is closed
        self._closed: Optional[Any] = None     # the closed backend object (--isolation none)
        self._cases: Optional[List[cases_model.Case]] = None
        self.protections = namespace.chosen(confine.in_force(opt.confine != "off", opt.isolation), opt.confine)
        self.policy: Optional[confine.Policy] = None
        self.tolerances_hash: Optional[str] = None   # sha256 of the table the run judged by
        self.manifest_hash: Optional[str] = None     # and of the golden manifest (GoldenStore.pin)

    def confinement(self) -> Optional[confine.Policy]:
        """The backend's process may not write what this run reads or writes, nor the baseline the
        gate will compare it with (--baseline; docs/ci-gate.md) (suite/run/confine.py)."""
        abi, _ = confine.landlock_abi()
        if self.config.option.confine == "off" or abi < 1:
            return None
        mine = [Path(p) for k in ("report_dir", "baseline") for p in [getattr(self.config.option, k, None)] if p]
        paths = [CHECKOUT, data_root() / "cases", data_root() / "golden", self.golden_dir,
                 self.tolerance_path, *self.case_paths] + ([self.cache_dir] if self.cache_dir else []) + mine
        return confine.make_policy(paths, abi)

    def hardware_path(self) -> Optional[Path]:
        """The hardware file beside the case files (as their shape generators read it), else None."""
        for p in self.case_paths:
            beside = (p if p.is_dir() else p.parent) / HARDWARE_FILE
            if beside.exists():
                return beside
        return None

    def replay_args(self) -> str:
        """Options to append to a one-line reproducer (suite/plugin/options.py)."""
        return options.replay_args(self.config, self.against, self.double)

    def _data_present(self) -> None:
        """The default data folder exists: else one line that says how to name it."""
        opt = self.config.option
        if not (opt.cases and opt.tolerances) and not (data_root() / "cases").is_dir():
            raise pytest.UsageError(no_data_folder("--cases, --golden-dir and --tolerances"))

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            self._data_present()
            if self.info is not None:
                raise RuntimeError("the backend was used after the session closed it")
            opt = self.config.option
            # The goldens' manifest and the tolerance table are read before the backend's process
            # starts (it could rewrite any file): what the run judges by is what results.json hashes.
            # With the backend in a process of its own, a large case's data is kept in memory for
            # the tests that follow it (they are ordered together), and a cache would save nothing
            # (this process trusts only entries it wrote): none is written. In pytest's process the
            # backend could write into arrays it is given, so each test gets its own, and the cache.
            process = opt.isolation != "none"
            store = GoldenStore(self.golden_dir, cache=GoldenCache(None if process else self.cache_dir),
                                reuse=process, command=where.command([Path(p) for p in opt.cases], self.golden_dir),
                                on_demand=where.computed)
            store.pin()
            self.manifest_hash = store.manifest_hash()
            try:
                self.tolerances_hash = file_sha256(self.tolerance_path)
                table = load_table(self.tolerance_path)
                timer = None if self.timing is None else CaseTimer(self.timing, load_hardware(self.hardware_path()))
                if opt.isolation != "none":
                    namespace.want(opt.confine, self.backend_opts)     # the wall from here on (suite/run/namespace.py)
                    self.policy = self.confinement()
                host: Host = make_host(opt.backend, self.backend_opts, isolation=opt.isolation,
                                       timeout=opt.case_timeout, restarts=opt.backend_restarts, policy=self.policy)
                info = host.info
                if timer is not None:
                    timer.baseline = self._baseline = baseline.start(self.against, opt, self.policy)
                self._accuracy = accuracy.start(self.double, opt, self.policy)
            except (BackendError, FileError) as e:
                raise pytest.UsageError(str(e)) from None
            std = self.config.option.standard
            if std and std not in table.names():
                raise pytest.UsageError(f"--standard {std}: not in {self.tolerance_path} "
                                        f"({', '.join(table.names())})")
            self._runner = Runner(host, info, store, table, std, self.replay_args(), self.max_memory,
                                  invocation_dir=self.config.invocation_params.dir,
                                  timer=timer, accuracy=self._accuracy)
            self.info = info
        return self._runner

    @property
    def cases(self) -> List[cases_model.Case]:
        if self._cases is None:
            self._data_present()
            try:
                self._cases, _ = cases_load.load_cases(self.case_paths, only=self.ops or None,
                                                       standards=standard_names(self.tolerance_path))
            except FileError as e:
                raise pytest.UsageError(str(e)) from None
        return self._cases

    def params(self, kind: Kind) -> list:
        cases = self.cases          # read before the backend's process starts (it could rewrite them)
        absent = sorted(set(self.ops) - {c.op for c in cases})
        if absent:
            raise pytest.UsageError(f"--op {', '.join(absent)}: no case of it in "
                                    f"{', '.join(str(p) for p in self.case_paths)}")
        info = self.runner.info
        run_products = [p for p in self.products if p in info.products]
        if not run_products:
            raise pytest.UsageError(
                f"--product {', '.join(self.products)}: backend {info.name} stands for "
                f"{', '.join(info.products)} only, so no case would run")
        out = []
        skip = not_run_because(kind, info)
        scale = self.config.option.scale
        for c in cases:
            if c.product not in run_products or (self.ops and c.op not in self.ops) or (c.tier == "huge" and scale != "huge") or (
                    scale == "small" and c.expect == cases_model.NUMBERS and not golden_source.is_stored(c)):
                continue
            if kind not in cases_model.kinds_of(c):
                continue
            if self.timing is not None and not (kind is Kind.NUMBERS and c.timing):
                continue                       # --timing runs the timing set's numbers tests only
            out.append(pytest.param(c, id=c.id, marks=[pytest.mark.skip(reason=skip)] if skip else []))
        return out

    def preflight(self) -> None:
        """Under xdist, in the controller before any worker starts (suite/plugin/report.py): the case
        files load and the backend starts (then is closed), so that a mistake in either stops the
        run with its one line, as it does in a serial run, and not once per worker."""
        try:
            self.params(Kind.NUMBERS)
        except pytest.UsageError as e:
            self.error = str(e)
            raise
        finally:
            self.close()

    @property
    def backend(self) -> Optional[Backend]:
        """The backend if this session has made one in this process (--isolation none); never makes
        one (for plugins that inspect it)."""
        return self._runner.backend if self._runner is not None else self._closed

    def close(self) -> None:
        """Close the backend once; what went wrong is an incident of the run, not an exception."""
        runner, self._runner = self._runner, None
        if runner is not None:
            self._closed = runner.backend
            incident = runner.host.close()
            if incident:
                self.incidents.append(incident)
        incidents = baseline.close(self._baseline), accuracy.close(self._accuracy)
        self._baseline = self._accuracy = None
        self.incidents += [x for x in incidents if x]


def pytest_configure(config: pytest.Config) -> None:
    config.stash[STATE] = Conformance(config)
    collect_the_suite(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Close the backend before the reports are written, so that they can say how it went."""
    state = session.config.stash.get(STATE, None)
    if state is not None:
        state.close()


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None:
        state.close()


def pytest_report_header(config: pytest.Config) -> Optional[str]:
    opt = config.option
    state = config.stash[STATE]
    return (f"aclnn-conformance: backend {opt.backend or 'reference'}"
            f"{' ' + ' '.join(opt.backend_opt) if opt.backend_opt else ''}; "
            f"products {', '.join(state.products)}; scale {opt.scale}; "
            f"golden cache {state.cache_dir or 'none'}; "
            + ("backend in pytest's process (--isolation none)" if opt.isolation == "none" else
               f"backend in its own process, {opt.case_timeout:g} s a call"
               f"{' + 0.1 s per million elements' if opt.case_timeout else ' (no deadline)'}")
            + "; protections: " + ", ".join(f"{k} {v}" for k, v in state.protections.items()))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" not in metafunc.fixturenames:
        return
    try:
        kind = Kind(getattr(metafunc.module, "CASE_KIND", None))
    except ValueError:
        raise pytest.UsageError(f"{metafunc.module.__name__}: CASE_KIND must be one of "
                                f"{', '.join(k.value for k in Kind)}") from None
    state = metafunc.config.stash[STATE]
    try:
        params = state.params(kind)
    except pytest.UsageError as e:
        # Raised again, once, after collection: a clean "ERROR: ..." line, not one per module.
        # xdist workers cannot raise it cleanly, so there each module gets one failing item.
        state.error = str(e)
        params = [pytest.param(SetupError(state.error), id="setup-error")]
    metafunc.parametrize("case", params)


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    state = config.stash[STATE]
    if state.error and not hasattr(config, "workerinput"):
        raise pytest.UsageError(state.error)
    # The determinism tests last (stable: every other item keeps its place): each then compares its
    # calls with the same call its case's numbers test made earlier in the session (Runner.earlier).
    # Within each module, the tests of one case's data (its products and layouts) next to each
    # other, where its first one stood: the golden store then draws a large case's inputs and
    # reads its golden once for all of them (GoldenStore.reuse).
    items[:] = grouped(sorted(items, key=_determinism_last), key=_data_of)
    # A conformance module none of whose cases is selected (a case file of one kind, --op) holds
    # pytest's one "got empty parameter set" skip: deselected, as a case that is not selected is.
    _deselect(config, items, lambda i: "case" in getattr(i, "fixturenames", ()) and not _has_case(i))
    if state.timing is not None:
        # --timing: the timing set's numbers tests alone (the other kinds' modules have no case left).
        _deselect(config, items,
                  lambda i: getattr(getattr(i, "module", None), "CASE_KIND", Kind.NUMBERS) != Kind.NUMBERS)


def _deselect(config: pytest.Config, items: list, which) -> None:
    other = [i for i in items if which(i)]
    if other:
        config.hook.pytest_deselected(items=other)
        gone = set(other)
        items[:] = [i for i in items if i not in gone]


def _has_case(item: pytest.Item) -> bool:
    """Whether the item runs a case (or the setup error standing for them all): not pytest's empty set."""
    callspec = getattr(item, "callspec", None)
    return callspec is not None and isinstance(callspec.params.get("case"), (cases_model.Case, SetupError))


def _determinism_last(item: pytest.Item) -> bool:
    return getattr(getattr(item, "module", None), "CASE_KIND", None) == Kind.DETERMINISM


def _data_of(item: pytest.Item) -> Any:
    """What a test shares with others in its module: its case's data (an item not a case's shares nothing)."""
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    return (getattr(item, "module", None), case.datakey) if isinstance(case, cases_model.Case) else item


def check(request: pytest.FixtureRequest, case: cases_model.Case) -> Dict[str, Any]:
    """Run one case as its test module's CASE_KIND says (the conformance tests' whole body).

    A plain function of pytest's own `request`, not a fixture: a fixture costs every one of
    thousands of small tests more than the check itself."""
    if isinstance(case, SetupError):
        pytest.fail(case.message, pytrace=False)
    node = request.node
    runner = node.config.stash[STATE].runner
    node.stash[RECORD] = {"status": None}
    skip = failure = None
    try:
        runner.test_path = node.path
        record = runner.check(Kind(node.module.CASE_KIND), case, node.nodeid)
    except CaseSkip as e:
        skip = e.reason
    except CaseFailure as e:
        failure = str(e)
        if e.stop:  # the backend lost its device: every later case would fail for the same reason
            node.session.shouldstop = e.stop
        # The failure's metrics and reproducer go in the record too (suite/plugin/report.py writes them).
        node.stash[RECORD] = {"status": None, **e.record, "message": e.summary, "reproduce": e.reproduce}
    # Outside the except blocks, so pytest shows the message once, with no chained traceback.
    if skip is not None:
        pytest.skip(skip)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    node.stash[RECORD] = record
    return record


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    if isinstance(case, cases_model.Case) and (report.when == "call" or report.skipped):
        # Plain JSON on the report, so it travels from xdist workers to the controller.
        report.aclnn = {**case_fields(case, str(getattr(item.module, "CASE_KIND", "")), item.nodeid),
                        **item.stash.get(RECORD, {})}
