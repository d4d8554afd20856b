"""Helpers for the report and gate tests: one real pytest session of the suite, in a subprocess."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parent.parent


# A pytest of the suite started by a test: third-party plugins are not loaded (hypothesis and the like
# cost about 0.5 s of the 3.5 s of CPU a small run takes; a few hundred tests start one), xdist is.
PYTEST = ["-m", "pytest", "-p", "xdist.plugin", "-p", "no:cacheprovider", "-q"]


def suite_env(**extra: str) -> dict:
    """The environment of a pytest of the suite started by a test: the checkout first on the path,
    no xdist worker identity or PYTEST_ADDOPTS of the test's own session, no plugin autoloading."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)
    env.update(extra)
    return env


def run_suite(args: List[str], timeout: float = HANG_S, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`python -m pytest ARGS` in `cwd` (the project root: the conformance suite), output captured."""
    return subprocess.run([sys.executable, *PYTEST, *args], cwd=cwd, env=suite_env(),
                          capture_output=True, text=True, timeout=timeout)


def popen_suite(args: List[str], **kw) -> subprocess.Popen:
    """The same pytest, started in the background (the tests that signal or watch it), output merged."""
    return subprocess.Popen([sys.executable, *PYTEST, *args], cwd=ROOT, env=suite_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def cli(args: List[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "suite.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=HANG_S)


def comparable(records: list) -> dict:
    """Records by key: what must agree between runs of the same cases (all of it)."""
    return {r["key"]: r for r in records}


def sample_record(key: str, outcome: str = "passed") -> dict:
    """A minimal record results.validate accepts (of the first registered operator)."""
    from suite import ops
    op = ops.get(sorted(ops.OPERATORS)[0])
    first = op.inputs[0]
    return {"key": key, "case": "c", "kind": "numbers", "op": op.name, "product": "atlas-a2",
            "dtypes": {first: "float32"}, "out_dtype": "float32", "shapes": {first: [2]}, "out_shape": [2],
            "layout": "contiguous", "attrs": {}, "values": "uniform", "expect": 0, "status": 0,
            "reduction": 0, "reproduce": None, "outcome": outcome, "reason": None, "metrics": None}


# Each end-to-end attack runs serially in .ci/run; its -n 2 run is in the heavy tier (`-m heavy`)
# unless it is one of the few that CI keeps (each runs a pytest with two workers: ~15 s apiece).
N2_HEAVY = [pytest.param(0, id="serial"), pytest.param(2, id="n2", marks=pytest.mark.heavy)]


def serial_and_n2(names, in_ci=()) -> list:
    """(name, workers) parameters: every name serially; under -n 2 in CI only for `in_ci`."""
    return [pytest.param(n, w, id=f"{n}-{'n2' if w else 'serial'}",
                         marks=[pytest.mark.heavy] if w and n not in in_ci else [])
            for w in (0, 2) for n in names]
