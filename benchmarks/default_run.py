"""The default run (`pytest suite/conformance`, serial, reference backend: what issue 22 holds to about
three minutes on 2 cores), here and at another commit, in one run of this script.

    python benchmarks/default_run.py --against 3dc1a12            # this checkout against that commit
    python benchmarks/default_run.py --against main --repeat 3 --op KlDivBackward

Checks the other commit out into a temporary git worktree, then runs the two trees alternately
`--repeat` times and prints, per tree, the median wall time and the median CPU time (user + system
of pytest and of the backend's process, which pytest reaps). On a shared machine the wall times of
one run of this script compare with each other, the CPU times a little better; neither is the
figure of an idle machine unless the machine was idle (the script prints the load average).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

from per_test_cost import _env, count, two_trees

ROOT = Path(__file__).resolve().parents[1]


def timed(args: List[str], cwd: Path) -> Tuple[float, float, str]:
    """Wall and CPU seconds of `python ARGS` in `cwd` (with what it reaped), and its last line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, *args], cwd=cwd, env=_env(), capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = (p.stdout.strip().splitlines() or [""])[-1]
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} in {cwd} exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return wall, cpu, last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="the other commit (any git revision)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--op", action="append", default=[], help="only this operator (repeatable)")
    ap.add_argument("--scale", default="default", help="the tier (default: the default run)")
    args = ap.parse_args()
    run = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--scale", args.scale,
           *(x for op in args.op for x in ("--op", op)), "suite/conformance"]
    loads = [os.getloadavg()[0]]
    with two_trees(args.against) as (rev, _, trees):
        walls: Dict[str, List[float]] = {k: [] for k in trees}
        cpus: Dict[str, List[float]] = {k: [] for k in trees}
        tests: Dict[str, int] = {}
        for _ in range(args.repeat):
            for label, tree in trees.items():
                wall, cpu, last = timed(run, tree)
                walls[label].append(wall)
                cpus[label].append(cpu)
                tests[label] = count(last)
                loads.append(os.getloadavg()[0])
    print(f"python {sys.version.split()[0]}; {args.repeat} alternating runs each; `pytest {' '.join(run[2:])}`, "
          f"serial; load average (1 min) {min(loads):.1f} to {max(loads):.1f}")
    print("| tree | tests | median wall | median CPU | walls |")
    print("| --- | ---: | ---: | ---: | --- |")
    for label in walls:
        print(f"| {label} | {tests[label]:,} | {statistics.median(walls[label]):.1f} s | "
              f"{statistics.median(cpus[label]):.1f} s | {', '.join(f'{w:.1f}' for w in walls[label])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
