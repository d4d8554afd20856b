"""The plugin's own command-line options: their registration (pytest_addoption, a hook: the plugin
module suite/plugin/__init__.py imports it, so pytest finds it there), the checks of their values, and
the options a one-line reproducer carries. Kept apart from the session so that what a user can pass is
read in one place; --timing-baseline's options are suite/plugin/baseline.py's, --accuracy-baseline's
suite/plugin/accuracy.py's.

Imports suite.common.names, suite.contract, suite.plugin.baseline and .accuracy, and pytest only."""
from __future__ import annotations

import shlex
from typing import Any, List, Optional, Sequence

import pytest

from suite.common.names import unknown_words
from suite.contract import PRODUCTS
from suite.plugin import accuracy, baseline

SCALES = ("small", "default", "huge")


# What `pytest --help` says of each option: words for a person, kept as data (no mutant is planted in
# them; tests/test_plugin_options.py checks that each option has its text and that a stated default is
# the parsed one, tests/test_docs.py that docs/running.md lists each option). suite/plugin/report.py
# keeps its options' words the same way.
HELP = {
    "--backend": "backend under test: a registered name (reference, torch, aclnn, or an entry "
                 "point of aclnn_conformance.backends) or package.module:attribute (default: reference)",
    "--backend-opt": "keyword option for the backend (repeatable), e.g. device=cuda",
    "--product": f"product family to run (repeatable or comma-separated; default all: {', '.join(PRODUCTS)})",
    "--op": "operator to run, by its exact name without the aclnn prefix (repeatable or "
            "comma-separated; default all; `aclnn-conform ops` lists them): -k matches a "
            "substring, so it also selects every operator whose name contains the one given",
    "--cases": "case file or folder (repeatable; default cases/)",
    "--golden-dir": "golden data folder (default golden/)",
    "--tolerances": "tolerance table (default cases/tolerances.yaml)",
    "--standard": "judge every case by this standard instead of the table's per-operator choice",
    "--scale": "which cases run: small (committed goldens only, seconds), default (plus the "
               "scale sets: tile, core-split and reduction boundaries), huge (plus past 2^31 "
               "elements: a device machine's host memory)",
    "--golden-cache": "where computed goldens of large cases are kept (default: $ACLNN_CONFORMANCE_CACHE, "
                      "else ~/.cache/aclnn-conformance); 'none' keeps nothing",
    "--isolation": "where the backend runs: 'process' (default) in a process of its own, so that "
                   "a crash, exit or hang costs one case; 'none' in pytest's process (to debug it: "
                   "a crash then ends the run)",
    "--case-timeout": "a backend call may take SECONDS plus 0.1 s per million elements it reads and "
                      "writes, then its process is killed and the case fails (default 60; 0: no "
                      "limit; the backend's start-up may take 3x, at least 120 s)",
    "--backend-restarts": "restart a backend whose process crashed, exited or hung at most N times in "
                          "a row; after that every remaining case fails at once (default 8)",
    "--confine": "confine the backend's process (Linux Landlock): no writes to the suite, its data, "
                 "the golden cache or the reports, no signals outside its own processes; and, where "
                 "bubblewrap works, a mount namespace with a private /tmp and /run (no sockets of the "
                 "user's in reach); 'auto' (default) every wall the machine allows, 'landlock' Landlock "
                 "only, 'off' none (the run says which)",
    "--timing": "run the timing set (case-file matrices with `timing: true`) and time each case "
                "after its numbers pass, through the backend's time_launches (docs/timing.md): "
                "each record's `timing`, and a timing table in the summary",
    "--timing-rounds": "rounds of launches per timed case (default 10); with --timing",
    "--timing-warm": "time with a warm cache (no flush before each launch; labelled 'warm'); with --timing",
    "--max-memory": "skip cases whose arrays need more than SIZE (e.g. 16G; default: the memory "
                    "available when each case starts)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aclnn-conformance")
    g.addoption("--backend", default=None, metavar="NAME",
                help=HELP["--backend"])
    g.addoption("--backend-opt", action="append", default=[], metavar="KEY=VALUE",
                help=HELP["--backend-opt"])
    g.addoption("--product", action="append", default=[], metavar="PRODUCT",
                help=HELP["--product"])
    g.addoption("--op", action="append", default=[], metavar="NAME",
                help=HELP["--op"])
    g.addoption("--cases", action="append", default=[], metavar="PATH",
                help=HELP["--cases"])
    g.addoption("--golden-dir", default=None, metavar="DIR", help=HELP["--golden-dir"])
    g.addoption("--tolerances", default=None, metavar="FILE",
                help=HELP["--tolerances"])
    g.addoption("--standard", default=None, metavar="NAME",
                help=HELP["--standard"])
    g.addoption("--scale", default="default", choices=SCALES, metavar="TIER",
                help=HELP["--scale"])
    g.addoption("--golden-cache", default=None, metavar="DIR",
                help=HELP["--golden-cache"])
    g.addoption("--isolation", default="process", choices=("process", "none"),
                help=HELP["--isolation"])
    g.addoption("--case-timeout", default=60.0, type=float, metavar="SECONDS",
                help=HELP["--case-timeout"])
    g.addoption("--backend-restarts", default=8, type=int, metavar="N",
                help=HELP["--backend-restarts"])
    g.addoption("--confine", default="auto", choices=("auto", "landlock", "off"),
                help=HELP["--confine"])
    g.addoption("--timing", action="store_true", default=False,
                help=HELP["--timing"])
    g.addoption("--timing-rounds", default=10, type=int, metavar="N",
                help=HELP["--timing-rounds"])
    g.addoption("--timing-warm", action="store_true", default=False,
                help=HELP["--timing-warm"])
    g.addoption("--max-memory", default=None, metavar="SIZE",
                help=HELP["--max-memory"])


def listed(option: str, given: Sequence[str], known: Sequence[str]) -> List[str]:
    """The names a repeatable, comma-separated option gives, each one `known`: else a usage error
    that lists the known names, and the one meant where it is plain (suite/common/names.py)."""
    names = [n.strip() for item in given for n in item.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise pytest.UsageError(f"{option}: unknown {unknown_words(unknown, known)} (known: {', '.join(known)})")
    return names


def check_numbers(opt: Any) -> None:
    """The numeric options are in range, and the timing options come with --timing: else one usage
    error line (checked when the session starts, before any case is loaded)."""
    if opt.case_timeout < 0 or opt.case_timeout != opt.case_timeout:
        raise pytest.UsageError(f"--case-timeout {opt.case_timeout:g}: seconds, 0 or more")
    if opt.backend_restarts < 0:
        raise pytest.UsageError(f"--backend-restarts {opt.backend_restarts}: 0 or more")
    if opt.timing_rounds < 1:
        raise pytest.UsageError(f"--timing-rounds {opt.timing_rounds}: 1 or more")
    if (opt.timing_warm or opt.timing_rounds != 10) and not opt.timing:
        raise pytest.UsageError("--timing-rounds and --timing-warm take effect only with --timing")


def replay_args(config: pytest.Config, against: Optional[baseline.Options],
                double: Optional[accuracy.Options] = None) -> str:
    """Options to append to a one-line reproducer: each option given that changes what runs or how,
    so that the line printed reruns the one case as this run ran it (Conformance.replay_args)."""
    opt, parts = config.option, []
    args = list(config.invocation_params.args)
    if any(a == "-psuite.plugin" or (a == "-p" and b == "suite.plugin") for a, b in zip(args, args[1:] + [""])):
        parts += ["-p", "suite.plugin"]       # loaded by name (a run from another repository)
    if opt.backend:
        parts += ["--backend", opt.backend]
    for o in opt.backend_opt:
        parts += ["--backend-opt", o]
    for name in ("cases", "product", "op"):
        for v in getattr(opt, name):
            parts += [f"--{name}", v]
    for name in ("golden_dir", "tolerances", "standard", "golden_cache", "max_memory"):
        v = getattr(opt, name)
        if v:
            parts += [f"--{name.replace('_', '-')}", v]
    if opt.isolation != "process":
        parts += ["--isolation", opt.isolation]
    if opt.confine != "auto":
        parts += ["--confine", opt.confine]
    if opt.case_timeout != 60:
        parts += ["--case-timeout", f"{opt.case_timeout:g}"]
    if opt.scale == "huge":
        parts += ["--scale", "huge"]
    if opt.timing:
        parts += ["--timing"] + (["--timing-rounds", str(opt.timing_rounds)] if opt.timing_rounds != 10 else []) \
            + (["--timing-warm"] if opt.timing_warm else []) + baseline.replay(against)
    parts += accuracy.replay(double)
    return "".join(" " + shlex.quote(p) for p in parts)
