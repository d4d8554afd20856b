"""Helpers for the report and gate tests: one real pytest session of the suite, in a subprocess."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_suite(args: List[str], timeout: int = 300) -> subprocess.CompletedProcess:
    """`python -m pytest ARGS` at the project root (the conformance suite), output captured."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def cli(args: List[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "suite.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


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
