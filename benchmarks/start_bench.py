"""What starting a backend's process costs (issue 43): the first start in a pytest process (which
also starts the launcher, or before it multiprocessing's forkserver) and each later start and
close, with the reference backend. Each round is a fresh interpreter; the figures are medians.

Run from a tree's root: `python benchmarks/start_bench.py` (--n starts per round, --rounds; --wall:
behind the mount-namespace wall, suite/run/namespace.py, where bubblewrap works); the
script uses only `suite.run.host.Hosted`'s start() and close(), so the same file measures an older
tree too: `cd OLD && PYTHONPATH=. python /path/to/start_bench.py`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def one(n: int, wall: bool) -> dict:
    sys.path.insert(0, os.getcwd())
    from suite.run.host import Hosted
    if wall:                            # as a session with --confine=auto asks (suite/run/namespace.py)
        from suite.run import namespace
        namespace.want("auto", {})
        assert namespace.active(), namespace.describe()
    t = time.perf_counter()
    first = Hosted(None, {})
    first.start()
    took_first = time.perf_counter() - t
    starts, cycles = [], []
    for _ in range(n):
        t = time.perf_counter()
        h = Hosted(None, {})
        h.start()
        started = time.perf_counter()
        h.close()
        starts.append(started - t)
        cycles.append(time.perf_counter() - t)
    first.close()
    return {"first": took_first, "start": statistics.median(starts), "cycle": statistics.median(cycles)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--wall", action="store_true", help="behind the mount-namespace wall (bubblewrap)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.n, args.wall)))
        return
    got = [json.loads(subprocess.run([sys.executable, __file__, "--one", "--n", str(args.n)]
                                     + (["--wall"] if args.wall else []), check=True,
                                     capture_output=True, text=True).stdout) for _ in range(args.rounds)]
    med = {k: statistics.median(g[k] for g in got) * 1e3 for k in got[0]}
    print(f"first start {med['first']:.0f} ms; then, median of {args.n} a round over {args.rounds} rounds: "
          f"start {med['start']:.1f} ms, start and close {med['cycle']:.1f} ms")


if __name__ == "__main__":
    main()
