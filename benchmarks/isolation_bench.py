"""What the backend's own process costs (issue 9), each a ratio measured in one run on one machine:

1. per call on a small case (2x3, every layout): suite.host.Hosted against InProcess, with the
   reference backend;
2. a large call (2^24 float32 elements per array: three inputs in, one output back): wall time
   and the transfer rate, against the same call in-process;
3. starting a backend process (the first, which starts the launcher, and a restart);
4. `pytest --scale small`, serial, with --isolation process against --isolation none.

Run from the repository root: `python benchmarks/isolation_bench.py` (about two minutes on 2 cores;
--quick skips the pytest runs).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.scale_bench import best  # noqa: E402
from suite.backends.reference import ReferenceBackend  # noqa: E402
from suite.run.host import Hosted
from suite.run.calls import InProcess  # noqa: E402
from suite.common.layout import LAYOUTS  # noqa: E402


def request(shape, lay="contiguous"):
    rng = np.random.default_rng(0)
    ins = {n: rng.standard_normal(shape).astype(np.float32) for n in ("gradOutput", "self", "target")}
    return {"op": "MseLossBackward", "inputs": ins, "layout": lay, "attrs": {"reduction": 0},
            "out_shape": shape, "out_dtype": "float32", "product": "atlas-a2"}


def per_call(host, reqs, n: int) -> float:
    t = time.perf_counter()
    for i in range(n):
        host.run(reqs[i % len(reqs)], 1, 60.0)
    return (time.perf_counter() - t) / n


def pytest_wall(extra) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--scale", "small",
                        *extra], cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(p.stdout[-2000:])
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()

    t = time.perf_counter()
    hosted = Hosted(None, {})
    hosted.start()
    first = time.perf_counter() - t
    t = time.perf_counter()
    again = Hosted(None, {})
    again.start()
    restart = time.perf_counter() - t
    again.close()
    print(f"start a backend process: first {first * 1e3:.0f} ms (starts the launcher), "
          f"then {restart * 1e3:.0f} ms each")

    inproc = InProcess(ReferenceBackend())
    small = [request((2, 3), lay) for lay in LAYOUTS]
    per_call(hosted, small, 200)                      # warm up both
    per_call(inproc, small, 200)
    h, i = per_call(hosted, small, 3000), per_call(inproc, small, 3000)
    print(f"small call (2x3, 4 layouts): hosted {h * 1e6:.0f} us, in-process {i * 1e6:.0f} us, "
          f"+{(h - i) * 1e6:.0f} us per call ({h / i:.1f}x)")

    big = request((1 << 12, 1 << 12))
    hb = best(lambda: hosted.run(big, 1, 600.0))
    ib = best(lambda: inproc.run(big, 1))
    moved = 4 * (1 << 24) * 4                         # three inputs in, one output back, float32
    print(f"large call (2^24 float32 per array): hosted {hb:.3f} s, in-process {ib:.3f} s ({hb / ib:.2f}x); "
          f"{moved / (hb - ib) / 1e9:.2f} GB/s across the boundary")
    hosted.close()

    if not args.quick:
        iso = pytest_wall([])
        none = pytest_wall(["--isolation=none"])
        print(f"pytest --scale small, serial: --isolation process {iso:.1f} s, none {none:.1f} s "
              f"({iso / none:.2f}x)")


if __name__ == "__main__":
    main()
