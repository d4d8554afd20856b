"""Scale figures, each a ratio measured in one run on one machine (issue 8's benchmark):

1. on-demand goldens: drawing inputs, and computing the float64 golden block by block, in
   elements/s, against the bare numpy float64 formula on the same arrays;
2. judging throughput in elements/s, per output dtype;
3. peak RSS of the largest default case (a fresh process: draw, reference backend, golden, judge),
   against its input + output bytes;
4. wall time of the default run before (`--scale small`, the old suite) and after the scale sets,
   serial and with -n 2, and per-test overhead on small cases against a trivial parametrized test.

Run from the repository root: `python benchmarks/scale_bench.py` (about five minutes on 2 cores;
--quick skips the pytest runs).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from suite import ops  # noqa: E402
from suite.cases import load as casefiles
from suite.golden import source as golden
from suite.cases import inputs as values
from suite.ops.base import Golden  # noqa: E402


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def default_cases():
    cs, _ = casefiles.load_cases([ROOT / "cases"])
    return [c for c in cs if c.tier == "default"]


def find(cs, case_id):
    return next(c for c in cs if c.id == case_id)


MSE_CASE = "MseLossBackward-float32-atlas-a2-none-1178113.1178113.1178113-contiguous-uniform"
KL_CASE = "KlDivBackward-float32-atlas-a2-sum-plaintarget-65537x16.1x16.65537x16-contiguous-uniform"


def _kl_three(x):
    """What the KL golden computes, in plain numpy on whole arrays: the sum, the sum of the terms'
    magnitudes and the sum of the running partial sums' magnitudes (the budget's P)."""
    t = -x["target"].astype(np.float64) * x["gradOutput"].astype(np.float64)
    return t.sum(axis=0), np.abs(t).sum(axis=0), np.abs(np.cumsum(t, axis=0)).sum(axis=0)


def golden_rates(cs) -> list:
    rows = []
    for case_id, bare in [(MSE_CASE, lambda x: x["gradOutput"].astype(np.float64) * (
                              x["self"].astype(np.float64) - x["target"].astype(np.float64)) * 2.0),
                          (KL_CASE, lambda x: np.sum(-x["target"].astype(np.float64) * x["gradOutput"].astype(np.float64),
                                                     axis=0, keepdims=True)),
                          (KL_CASE + " (bare: the same three sums)", _kl_three)]:
        case = find(cs, case_id.split(" ")[0])
        b = ops.get(case.op).b_shape({n: s for n, s in case.shapes.items() if s is not None})
        n = int(np.prod(b))
        t_draw = best(lambda: values.draw_inputs(case))
        x = values.draw_inputs(case)
        t_ours = best(lambda: golden.compute(case, x))
        t_bare = best(lambda: bare(x))
        label = case.op + (" (bare: sum, sum of |terms|, sum of |partial sums|)" if " " in case_id else "")
        rows.append((label, n, n / t_draw, n / t_ours, n / t_bare, t_ours / t_bare))
    return rows


def judge_rates() -> list:
    import ml_dtypes
    from suite.common import dtypes
    from suite.judge.judging import judge
    from suite.judge.table import load_table
    table = load_table(ROOT / "cases" / "tolerances.yaml")
    rng = np.random.default_rng(0)
    n = 1 << 22
    g = rng.uniform(-5, 5, n)
    rows = []
    for dt in (np.float32, np.float16, ml_dtypes.bfloat16):
        dt = np.dtype(dt)
        got = dtypes.round_to(g, dt)
        gold = Golden(g, np.abs(g), 1)
        t = best(lambda: judge(got, gold, dt, table.standards["cann"], table.slack_ulps), 2)
        rows.append((dtypes.name_of(dt), n / t))
    return rows


PEAK = r"""
import json, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from suite.cases import load as casefiles
from suite.run.backend import BackendInfo
from suite.backends.reference import ReferenceBackend
from suite.golden.cache import GoldenCache
from suite.golden.store import GoldenStore
from suite.run.calls import InProcess
from suite.run.runner import Runner
from suite.judge.table import load_table
cs, _ = casefiles.load_cases([Path({root!r}) / "cases"])
case = next(c for c in cs if c.id == {case_id!r})
b = ReferenceBackend()
r = Runner(InProcess(b), BackendInfo.of(b), GoldenStore(Path({root!r}) / "golden", cache=GoldenCache(None)),
           load_table(Path({root!r}) / "cases" / "tolerances.yaml"))
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
base = status("VmRSS")
t = time.perf_counter()
r.check_numbers(case, "x")
wall = time.perf_counter() - t
peak = status("VmHWM")          # (ru_maxrss survives exec: it would report the parent's peak)
print(json.dumps({{"base": base, "peak": peak, "wall": wall}}))
"""


def largest_case(cs):
    from suite.common import dtypes
    from suite.ops.base import numel

    def arrays(c):
        ins = sum(numel(s) * dtypes.dtype_of(c.dtypes[n]).itemsize for n, s in c.shapes.items() if s is not None)
        return ins + numel(c.out_shape) * dtypes.dtype_of(c.out_dtype).itemsize
    big = max((c for c in cs if c.expect == 0 and c.layout == "contiguous"), key=lambda c: (arrays(c), c.id))
    return big, arrays(big)


def peak_rss(cs) -> dict:
    case, nbytes = largest_case(cs)
    out = subprocess.run([sys.executable, "-c", PEAK.format(root=str(ROOT), case_id=case.id)],
                         capture_output=True, text=True, check=True)
    m = json.loads(out.stdout)
    return {"case": case.id, "bytes": nbytes, **m}


def pytest_wall(args, cwd=ROOT) -> tuple:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:benchmark", *args], cwd=cwd,
                       env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    last = [l for l in r.stdout.splitlines() if " in " in l and ("passed" in l or "failed" in l)]
    return wall, (last[-1] if last else r.stdout[-300:])


TRIVIAL = "import pytest\n\n@pytest.mark.parametrize('i', range({n}))\ndef test_t(i):\n    assert i >= 0\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="skip the pytest wall-time runs")
    args = ap.parse_args()
    cs = default_cases()
    print("## on-demand goldens (blocks of 2^16 elements)")
    print("| operator | elements | draw inputs, elem/s | golden, elem/s | bare numpy float64, elem/s | golden / bare |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for op, n, d, o, b, ratio in golden_rates(cs):
        print(f"| {op} | {n:,} | {d / 1e6:.1f} M | {o / 1e6:.1f} M | {b / 1e6:.1f} M | {ratio:.2f}x |")
    print("\n## judging (standard cann, 4,194,304 elements)")
    print("| out dtype | elem/s |")
    print("| --- | ---: |")
    for dt, rate in judge_rates():
        print(f"| {dt} | {rate / 1e6:.1f} M |")
    p = peak_rss(cs)
    print("\n## peak RSS of the largest default case")
    print(f"case {p['case']}: inputs + output {p['bytes'] / 2**20:.0f} MiB; process before the case "
          f"{p['base'] / 2**20:.0f} MiB, peak {p['peak'] / 2**20:.0f} MiB; the case added "
          f"{(p['peak'] - p['base']) / 2**20:.0f} MiB = {(p['peak'] - p['base']) / p['bytes']:.2f}x its arrays "
          f"({p['wall']:.2f} s)")
    if args.quick:
        return 0
    print("\n## wall time (pytest at the repository root, reference backend, warm golden cache)")
    pytest_wall([])                                                   # fill the golden cache first
    rows = []
    for label, a in [("--scale small (the old suite)", ["--scale", "small"]),
                     ("default (with the scale sets)", []),
                     ("--scale small -n 2", ["--scale", "small", "-n", "2"]),
                     ("default -n 2", ["-n", "2"])]:
        wall, last = pytest_wall(a)
        rows.append((label, wall, last))
        print(f"- {label}: {wall:.1f} s wall ({last.strip('= ')})")
    with tempfile.TemporaryDirectory() as tmp:
        n = int(rows[0][2].split()[0])
        Path(tmp, "test_trivial.py").write_text(TRIVIAL.format(n=n))
        wall_t, last_t = pytest_wall(["-p", "no:cacheprovider", "test_trivial.py"], cwd=tmp)
    print(f"- trivial parametrized test, {n} items: {wall_t:.1f} s wall ({last_t.strip('= ')})")
    print(f"- per-test time on small cases: {rows[0][1] / n * 1e3:.2f} ms against {wall_t / n * 1e3:.2f} ms "
          f"trivial = {rows[0][1] / wall_t:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
