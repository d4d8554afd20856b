"""The pytest plugin: options, case parametrization, the backend's session, per-case records.

Everything the user passes reaches the code through `config`; nothing is global."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from suite import cases as casefiles
from suite.backend import BackendError, BackendInfo, make_backend, parse_opts
from suite.contract import PRODUCTS
from suite.golden import GoldenStore
from suite.runner import CaseFailure, CaseSkip, Runner
from suite.tolerance import load_table
from suite.yamlfile import FileError

RECORD = pytest.StashKey[Dict[str, Any]]()
STATE = pytest.StashKey["Conformance"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aclnn-conformance")
    g.addoption("--backend", default=None, metavar="NAME",
                help="backend under test: a registered name (reference, torch, aclnn, or an entry "
                     "point of aclnn_conformance.backends) or package.module:attribute (default: reference)")
    g.addoption("--backend-opt", action="append", default=[], metavar="KEY=VALUE",
                help="keyword option for the backend (repeatable), e.g. device=cuda")
    g.addoption("--product", action="append", default=[], metavar="PRODUCT",
                help=f"product family to run (repeatable or comma-separated; default all: {', '.join(PRODUCTS)})")
    g.addoption("--cases", action="append", default=[], metavar="PATH",
                help="case file or folder (repeatable; default cases/)")
    g.addoption("--golden-dir", default=None, metavar="DIR", help="golden data folder (default golden/)")
    g.addoption("--tolerances", default=None, metavar="FILE",
                help="tolerance table (default cases/tolerances.yaml)")
    g.addoption("--standard", default=None, metavar="NAME",
                help="judge every case by this standard instead of the table's per-operator choice")


class Conformance:
    """One session's state: the options, the cases, and (made on first need) the backend."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        root = Path(config.rootpath)
        opt = config.option
        self.case_paths = [Path(p) for p in opt.cases] or [root / "cases"]
        self.golden_dir = Path(opt.golden_dir) if opt.golden_dir else root / "golden"
        self.tolerance_path = Path(opt.tolerances) if opt.tolerances else root / "cases" / casefiles.TOLERANCE_FILE
        products: List[str] = []
        for item in opt.product:
            products.extend(p.strip() for p in item.split(",") if p.strip())
        unknown = [p for p in products if p not in PRODUCTS]
        if unknown:
            raise pytest.UsageError(f"--product: unknown {', '.join(unknown)} (known: {', '.join(PRODUCTS)})")
        self.products = products or list(PRODUCTS)
        try:
            self.backend_opts = parse_opts(opt.backend_opt)
        except BackendError as e:
            raise pytest.UsageError(str(e)) from None
        self._runner: Optional[Runner] = None
        self._cases: Optional[List[casefiles.Case]] = None

    def replay_args(self) -> str:
        """Options to append to a one-line reproducer."""
        opt, parts = self.config.option, []
        if opt.backend:
            parts += ["--backend", opt.backend]
        for o in opt.backend_opt:
            parts += ["--backend-opt", o]
        for name in ("cases", "product"):
            for v in getattr(opt, name):
                parts += [f"--{name}", v]
        for name in ("golden_dir", "tolerances", "standard"):
            v = getattr(opt, name)
            if v:
                parts += [f"--{name.replace('_', '-')}", v]
        return "".join(" " + shlex.quote(p) for p in parts)

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            try:
                backend = make_backend(self.config.option.backend, self.backend_opts)
                info = BackendInfo.of(backend)
                table = load_table(self.tolerance_path)
            except (BackendError, FileError) as e:
                raise pytest.UsageError(str(e)) from None
            std = self.config.option.standard
            if std and std not in table.standards:
                raise pytest.UsageError(f"--standard {std}: not in {self.tolerance_path} "
                                        f"({', '.join(table.standards)})")
            self._runner = Runner(backend, info, GoldenStore(self.golden_dir), table, std, self.replay_args())
        return self._runner

    @property
    def cases(self) -> List[casefiles.Case]:
        if self._cases is None:
            try:
                self._cases, _ = casefiles.load_cases(self.case_paths)
            except FileError as e:
                raise pytest.UsageError(str(e)) from None
        return self._cases

    def params(self, kind: str) -> list:
        info = self.runner.info
        run_products = [p for p in self.products if p in info.products]
        out = []
        for c in self.cases:
            if c.product not in run_products:
                continue
            marks = []
            if kind == "numbers" and c.expect != casefiles.NUMBERS:
                continue
            if kind == "rejection":
                if c.expect == casefiles.NUMBERS:
                    continue
                if "status" not in info.capabilities:
                    marks.append(pytest.mark.skip(reason=f"backend {info.name} does not claim 'status' "
                                                         f"(aclnn's parameter validation)"))
            if kind == "determinism":
                if not c.determinism:
                    continue
                if not info.deterministic:
                    marks.append(pytest.mark.skip(reason=f"backend {info.name} declares itself "
                                                         f"nondeterministic (deterministic = False)"))
            out.append(pytest.param(c, id=c.id, marks=marks))
        return out

    @property
    def backend(self) -> Optional[Any]:
        """The backend if this session has made one; never makes one (for plugins that inspect it)."""
        return self._runner.backend if self._runner is not None else None

    def close(self) -> None:
        if self._runner is not None:
            close = getattr(self._runner.backend, "close", None)
            if callable(close):
                close()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[STATE] = Conformance(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None:
        state.close()


def pytest_report_header(config: pytest.Config) -> Optional[str]:
    opt = config.option
    return (f"aclnn-conformance: backend {opt.backend or 'reference'}"
            f"{' ' + ' '.join(opt.backend_opt) if opt.backend_opt else ''}; "
            f"products {', '.join(config.stash[STATE].products)}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" not in metafunc.fixturenames:
        return
    kind = getattr(metafunc.module, "CASE_KIND", None)
    if kind not in ("numbers", "rejection", "determinism"):
        raise pytest.UsageError(f"{metafunc.module.__name__}: CASE_KIND must be numbers, rejection or determinism")
    metafunc.parametrize("case", metafunc.config.stash[STATE].params(kind))


@pytest.fixture(scope="session")
def conformance(request: pytest.FixtureRequest) -> Conformance:
    return request.config.stash[STATE]


@pytest.fixture
def verify(request: pytest.FixtureRequest, conformance: Conformance):
    """Run one case of a kind; failures carry their own message and reproducer."""
    def run(kind: str, case: casefiles.Case) -> Dict[str, Any]:
        runner = conformance.runner
        fn = {"numbers": runner.check_numbers, "rejection": runner.check_rejection,
              "determinism": runner.check_determinism}[kind]
        request.node.stash[RECORD] = {"status": None}
        try:
            record = fn(case, request.node.nodeid)
        except CaseSkip as e:
            pytest.skip(e.reason)
        except CaseFailure as e:
            pytest.fail(str(e), pytrace=False)
        request.node.stash[RECORD] = record
        return record
    return run


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    if isinstance(case, casefiles.Case) and (report.when == "call" or report.skipped):
        # Plain JSON on the report, so it travels from xdist workers to the controller.
        report.aclnn = {"case": case.id, **item.stash.get(RECORD, {})}
