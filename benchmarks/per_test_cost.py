"""The per-test cost of a small case, here and at another commit, against a trivial parametrized
pytest test: the figure a restructuring or a new operator must not make worse.

    python benchmarks/per_test_cost.py --against 11b8264      # this checkout against that commit
    python benchmarks/per_test_cost.py --against main --repeat 5

Checks the other commit out into a temporary git worktree, then runs, alternating the two trees
`--repeat` times, `python -m pytest -q -p no:cacheprovider --scale small suite/conformance` serially
in each (the committed goldens only: no golden cache is read or written), and once a trivial test
parametrized to the same count. Prints each tree's median wall time per test and its ratio to the
trivial test's. Compare ratios from one run only: the machines are shared and noisy.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
TRIVIAL = """import pytest


@pytest.mark.parametrize("i", range({n}))
def test_trivial(i):
    assert i >= 0
"""
RUN = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--scale", "small", "suite/conformance"]


def _env() -> Dict[str, str]:
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    for k in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTHONPATH"):
        env.pop(k, None)
    return env


def timed(args: List[str], cwd: Path) -> Tuple[float, str]:
    """Wall seconds of `python ARGS` in `cwd`, and its last output line (pytest's counts)."""
    t = time.perf_counter()
    p = subprocess.run([sys.executable, *args], cwd=cwd, env=_env(), capture_output=True, text=True)
    wall = time.perf_counter() - t
    last = (p.stdout.strip().splitlines() or [""])[-1]
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} in {cwd} exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return wall, last


def suite_of(tree: Path) -> str:
    """Which checkout's suite a pytest started in `tree` imports (it must be that tree's own)."""
    return subprocess.run([sys.executable, "-c", "import suite; print(suite.__file__)"], cwd=tree, env=_env(),
                          capture_output=True, text=True, check=True).stdout.strip()


def count(last: str) -> int:
    return int(last.split()[0])


@contextlib.contextmanager
def two_trees(against: str) -> Iterator[Tuple[str, Path, Dict[str, Path]]]:
    """This checkout and `against` checked out into a temporary git worktree (removed after):
    (the short revision, the temporary folder, label -> tree), each tree's pytest checked to
    import that tree's own suite."""
    rev = subprocess.run(["git", "rev-parse", "--short", against], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / f"at-{rev}"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(other), rev], cwd=ROOT, check=True)
        try:
            trees = {f"this checkout ({ROOT.name})": ROOT, f"at {rev}": other}
            for label, tree in trees.items():
                where = suite_of(tree)
                if not where.startswith(str(tree)):
                    sys.exit(f"{label}: pytest there imports {where}, not that tree's suite")
            yield rev, Path(tmp), trees
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="the other commit (any git revision)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with two_trees(args.against) as (rev, tmp, trees):
        walls: Dict[str, List[float]] = {k: [] for k in trees}
        tests: Dict[str, int] = {}
        for _ in range(args.repeat):
            for label, tree in trees.items():
                wall, last = timed(RUN, tree)
                walls[label].append(wall)
                tests[label] = count(last)
        n = max(tests.values())
        Path(tmp, "test_trivial.py").write_text(TRIVIAL.format(n=n))
        trivial = statistics.median(timed(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_trivial.py"],
                                          tmp)[0] for _ in range(args.repeat))
    print(f"python {sys.version.split()[0]}; {args.repeat} alternating runs each; `pytest --scale small`, serial")
    print("| tree | tests | median wall | per test | x trivial |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label in walls:
        w = statistics.median(walls[label])
        print(f"| {label} | {tests[label]:,} | {w:.1f} s | {w / tests[label] * 1e3:.2f} ms | "
              f"{w / tests[label] / (trivial / n):.2f}x |")
    print(f"| trivial parametrized test | {n:,} | {trivial:.1f} s | {trivial / n * 1e3:.2f} ms | 1.00x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
