"""What confining a backend's process costs (suite/run/confine.py): the time `Policy.apply()` takes
(it lists the folders on the way to each protected path and adds a Landlock rule per sibling), and
how many rules and protected paths that is, for the policy a run of the suite makes (the checkout,
cases/, golden/, a golden cache and a report folder, plus what make_policy adds).

Each apply() runs in a fresh forked process (a confined process cannot be unconfined); the figure
is the median of --repeat. Run from the repository root: `python benchmarks/confine_bench.py`
(figures: docs/figures.md, "Confinement").
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from suite.common.home import CHECKOUT, data_root  # noqa: E402
from suite.run import confine  # noqa: E402


def _timed_apply(policy: confine.Policy) -> float:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        t = time.perf_counter()
        policy.apply()
        os.write(w, repr(time.perf_counter() - t).encode())
        os._exit(0)
    os.close(w)
    took = float(os.read(r, 64).decode())
    os.close(r)
    os.waitpid(pid, 0)
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=21)
    args = ap.parse_args()
    abi, why = confine.landlock_abi()
    if abi < 1:
        sys.exit(f"no Landlock here: {why}")
    with tempfile.TemporaryDirectory() as work:
        cache, reports = Path(work, "cache"), Path(work, "reports")
        cache.mkdir()
        reports.mkdir()
        paths = [CHECKOUT, data_root() / "cases", data_root() / "golden", cache, reports]
        t = time.perf_counter()
        policy = confine.make_policy(paths, abi)
        made = time.perf_counter() - t
        tmpdir = confine.fresh_tmpdir()
        try:
            one = policy.for_process(tmpdir)
            t = time.perf_counter()
            rules = getattr(one, "rules", None)       # (before issue 43 item 2 a policy had no grants)
            grants = rules() if rules else confine.siblings([Path(p) for p in one.protected])[0]
            listed = time.perf_counter() - t
            times = [_timed_apply(one) for _ in range(args.repeat)]
        finally:
            confine.remove_tmpdir(tmpdir)
    print(f"Landlock ABI {abi}; {len(one.protected)} protected paths; {len(grants)} rules")
    print(f"make_policy: {made * 1e3:.1f} ms; the rules listed: {listed * 1e3:.1f} ms")
    print(f"Policy.apply(): median {statistics.median(times) * 1e3:.1f} ms, "
          f"min {min(times) * 1e3:.1f} ms, max {max(times) * 1e3:.1f} ms ({args.repeat} processes)")


if __name__ == "__main__":
    main()
