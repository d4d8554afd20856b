"""pytest --accuracy-baseline BACKEND: the double benchmark's options and the baseline backend's host
(docs/precision.md, "The double benchmark"; the measuring is suite/judge/benchmark.py, one case's
work suite/run/double.py).

The baseline gets a host exactly like the candidate's, as the timing baseline does
(suite/plugin/baseline.py): a process of its own, the same deadlines, restarts and confinement
(pytest's process only with --isolation none, as the candidate): it is untrusted code too, and
whatever it does costs only the double benchmark, never a case of the candidate or the reports. It
is started with the candidate's, before the first case, so a baseline that cannot be made is one
usage error, not a failure per case."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import pytest

from suite.judge.benchmark import DEFAULT_LEVEL, LEVELS
from suite.run.backend import BackendError, parse_opts
from suite.run.double import DoubleBenchmark
from suite.run.host import make_host

ONLY_WITH = "--accuracy-level and --accuracy-baseline-opt take effect only with --accuracy-baseline"
HELP = {
    "--accuracy-baseline": "the double benchmark: run each numbers case on this baseline backend too (its "
                           "own process, as --backend takes it), measure both results against the float64 "
                           "golden (MARE, MERE, RMSE: the vendor test kit's cross_check), and fail a case whose "
                           "errors exceed the level's ratios of the baseline's (docs/precision.md); a baseline "
                           "that fails or crashes is recorded as its own error, never the case's",
    "--accuracy-level": f"with --accuracy-baseline: the ratios the candidate's MARE, MERE and RMSE may reach, "
                        f"{'; '.join(f'{k} {a:g}, {b:g}, {c:g}' for k, (a, b, c) in LEVELS.items())} "
                        f"(default {DEFAULT_LEVEL}, the kit's)",
    "--accuracy-baseline-opt": "keyword option for the accuracy baseline backend (repeatable), as --backend-opt",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aclnn-conformance")
    g.addoption("--accuracy-baseline", default=None, metavar="BACKEND", help=HELP["--accuracy-baseline"])
    g.addoption("--accuracy-level", default=None, metavar="LEVEL", help=HELP["--accuracy-level"])
    g.addoption("--accuracy-baseline-opt", action="append", default=[], metavar="KEY=VALUE",
                help=HELP["--accuracy-baseline-opt"])


@dataclass(frozen=True)
class Options:
    """The double benchmark's options, checked."""
    spec: str
    opts: Dict[str, str]
    level: str


def options_of(opt: Any) -> Optional[Options]:
    """The checked options (None: no baseline named); a usage error for any bad one, in one line."""
    if opt.accuracy_baseline is None:
        if opt.accuracy_level is not None or opt.accuracy_baseline_opt:
            raise pytest.UsageError(ONLY_WITH)
        return None
    level = DEFAULT_LEVEL if opt.accuracy_level is None else opt.accuracy_level
    if level not in LEVELS:
        raise pytest.UsageError(f"--accuracy-level {level}: not one of {', '.join(LEVELS)}")
    try:
        opts = parse_opts(opt.accuracy_baseline_opt)
    except BackendError as e:
        raise pytest.UsageError(str(e).replace("--backend-opt", "--accuracy-baseline-opt", 1)) from None
    return Options(opt.accuracy_baseline, opts, level)


def start(o: Optional[Options], opt: Any, policy: Any) -> Optional[DoubleBenchmark]:
    """The baseline's host, started as the candidate's was (`policy`: the candidate's confinement)."""
    if o is None:
        return None
    try:
        host = make_host(o.spec, o.opts, isolation=opt.isolation, timeout=opt.case_timeout,
                         restarts=opt.backend_restarts, policy=policy)
    except BackendError as e:
        raise pytest.UsageError(f"--accuracy-baseline {o.spec}: {e}") from None
    return DoubleBenchmark(host, o.spec, o.level)


def close(d: Optional[DoubleBenchmark]) -> Optional[str]:
    """End the baseline's process; what went wrong is the run's incident (as the timing baseline's)."""
    if d is None:
        return None
    found = d.host.close()
    return f"the accuracy baseline's process: {found}" if found else None


def replay(o: Optional[Options]) -> List[str]:
    """The options to add to a reproducer."""
    if o is None:
        return []
    out = ["--accuracy-baseline", o.spec]
    for k, v in o.opts.items():
        out += ["--accuracy-baseline-opt", f"{k}={v}"]
    return out + (["--accuracy-level", o.level] if o.level != DEFAULT_LEVEL else [])


def run_field(o: Optional[Options]) -> Dict[str, Any]:
    """results.json's run-level `accuracy_baseline` (absent without a baseline)."""
    return {} if o is None else {"accuracy_baseline": {"spec": o.spec, "options": dict(o.opts), "level": o.level}}
