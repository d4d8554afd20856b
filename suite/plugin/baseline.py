"""pytest --timing --timing-baseline BACKEND: the options of the interleaved timing mode, and the
baseline backend's host (docs/timing.md, "Interleaved"; the measuring is suite/perf/against.py).

Why the baseline gets a host exactly like the candidate's (a process of its own, the same deadlines,
restarts and Landlock confinement; pytest's process only with --isolation none, as the candidate):
it is untrusted code too. A crash, a hang, an exit or a write of it must cost only the timing
verdict, never a case of the candidate or the reports. It is started with the candidate's, before
the first case, so a baseline that cannot be made is one usage error, not a failure per case."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import pytest

from suite.common import numbers
from suite.perf import gate
from suite.perf.against import Baseline
from suite.run.backend import BackendError, parse_opts
from suite.run.host import make_host

ONLY_WITH = ("--timing-baseline, --timing-baseline-opt, --perf-threshold and --perf-alpha take effect only "
             "with --timing and --timing-baseline")


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aclnn-conformance")
    g.addoption("--timing-baseline", default=None, metavar="BACKEND",
                help="with --timing: time each case against this baseline backend in the same run, round "
                     "by round (ABAB), after both pass its numbers; the gate's verdict goes into results.json "
                     "(`interleaved`) and the reports, and a REGRESSION fails the case (docs/timing.md)")
    g.addoption("--timing-baseline-opt", action="append", default=[], metavar="KEY=VALUE",
                help="keyword option for the baseline backend (repeatable), as --backend-opt")
    g.addoption("--perf-threshold", default=None, metavar="X",
                help=f"with --timing-baseline: a regression is a median at least 1+X times the baseline's "
                     f"(default {gate.THRESHOLD:g}), as in `aclnn-conform report diff`")
    g.addoption("--perf-alpha", default=None, metavar="P",
                help=f"with --timing-baseline: ... AND a one-sided Mann-Whitney U test with p <= P "
                     f"(default {gate.ALPHA:g})")


@dataclass(frozen=True)
class Options:
    """The interleaved mode's options, checked."""
    spec: str
    opts: Dict[str, str]
    threshold: float
    alpha: float


def _number(option: str, text: Optional[str], default: float, accepts: numbers.Range) -> float:
    if text is None:
        return default
    try:
        return numbers.checked(text, float, "a number", accepts)
    except numbers.NumberError as e:
        raise pytest.UsageError(f"{option} {text}: {e}") from None


def options_of(opt: Any, timing: bool) -> Optional[Options]:
    """The checked options (None: no baseline named); a usage error for any bad one, in one line."""
    given = opt.timing_baseline_opt or opt.perf_threshold is not None or opt.perf_alpha is not None
    if opt.timing_baseline is None:
        if given:
            raise pytest.UsageError(ONLY_WITH)
        return None
    if not timing:
        raise pytest.UsageError(ONLY_WITH)
    try:
        opts = parse_opts(opt.timing_baseline_opt)
    except BackendError as e:
        raise pytest.UsageError(str(e).replace("--backend-opt", "--timing-baseline-opt", 1)) from None
    threshold = _number("--perf-threshold", opt.perf_threshold, gate.THRESHOLD, numbers.FINITE_NONNEGATIVE)
    alpha = _number("--perf-alpha", opt.perf_alpha, gate.ALPHA, numbers.PROBABILITY)
    return Options(opt.timing_baseline, opts, threshold, alpha)


def start(o: Optional[Options], opt: Any, policy: Any) -> Optional[Baseline]:
    """The baseline's host, started as the candidate's was (`policy`: the candidate's confinement)."""
    if o is None:
        return None
    try:
        host = make_host(o.spec, o.opts, isolation=opt.isolation, timeout=opt.case_timeout,
                         restarts=opt.backend_restarts, policy=policy)
    except BackendError as e:
        raise pytest.UsageError(f"--timing-baseline {o.spec}: {e}") from None
    return Baseline(host, o.spec, o.threshold, o.alpha)


def close(b: Optional[Baseline]) -> Optional[str]:
    """End the baseline's process; what went wrong is the run's incident (it fails the run: a
    baseline that misbehaves at exit never leaves a run green that should be looked at)."""
    if b is None:
        return None
    found = b.host.close()
    return f"the timing baseline's process: {found}" if found else None


def replay(o: Optional[Options]) -> List[str]:
    """The options to add to a reproducer."""
    if o is None:
        return []
    out = ["--timing-baseline", o.spec]
    for k, v in o.opts.items():
        out += ["--timing-baseline-opt", f"{k}={v}"]
    if o.threshold != gate.THRESHOLD:
        out += ["--perf-threshold", f"{o.threshold:g}"]
    if o.alpha != gate.ALPHA:
        out += ["--perf-alpha", f"{o.alpha:g}"]
    return out


def run_field(o: Optional[Options]) -> Dict[str, Any]:
    """results.json's run-level `timing_baseline` (absent without a baseline)."""
    return {} if o is None else {"timing_baseline": {"spec": o.spec, "options": dict(o.opts)}}
