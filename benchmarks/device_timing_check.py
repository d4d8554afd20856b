"""A prepared device check (issue 24): the torch backend times through CUDA events. Not a test, and
NOT YET RUN ON A DEVICE (docs/timing.md, "A device check").

    python benchmarks/device_timing_check.py [--report-dir DIR] [--sizes 512x512,2048x2048,4096x4096]
                                             [--rounds 10] [--timeout 480]

On a machine with torch and a CUDA device it writes a small timing set of its own (MseLossBackward,
float32 and float16, reduction none, one shape per --sizes entry, on atlas-a2) with its goldens
into a scratch folder, runs `pytest --timing --backend torch --backend-opt device=cuda` on it into
--report-dir, and checks from that run's results.json (read and validated as `report diff` does)
that every case of the set was timed, on the device's clock by its events (`device`,
`torch.cuda.Event`: not the host's), with round medians that are positive and finite, and under
--max-gbps (a sanity bound, no product's figure: a host clock or a cache reads faster than any
memory). It prints a table: case, median per launch, GB/s, clock.

Exit 0: every check held; 1: one did not (each problem one line); 2: no CUDA here (one line: no
torch, or torch sees no CUDA device), or bad usage.

`--rehearse SPEC` runs the same steps on another backend without asking for CUDA (the simulated
backend's source is `simulated`; `--expect-source` names another): how this script is tested on
machines without a device (tests/test_perf_device_check.py). A rehearsal proves the script, never
the device.
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from suite.perf.pair import seconds  # noqa: E402

CUDA_SOURCE = "torch.cuda.Event"
MAX_GBPS = 10_000.0
CASES = """\
op: MseLossBackward
matrices:
  - name: the device check's timing set (benchmarks/device_timing_check.py)
    products: [atlas-a2]
    dtypes: [float32, float16]
    reductions: [none]
    shapes: [{shapes}]
    timing: true
"""


def no_cuda() -> Optional[str]:
    """Why this machine cannot run the check (None: torch sees a CUDA device)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install torch, a CUDA build)"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is False)"
    return None


def sizes(text: str) -> List[str]:
    """'512x512,2048x2048' -> the shapes, each checked as RxC of positive whole numbers."""
    out = [s.strip() for s in text.split(",") if s.strip()]
    for s in out:
        parts = s.split("x")
        if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise argparse.ArgumentTypeError(f"{s!r} is not a shape like 512x512")
    if not out:
        raise argparse.ArgumentTypeError("give at least one shape")
    return out


def prepare(work: Path, shapes: Sequence[str]) -> Tuple[Path, Path]:
    """The timing set's case folder (with the tolerance table) and its golden folder."""
    from suite.cases.load import load_cases
    from suite.golden import build
    cases, golden = work / "cases", work / "golden"
    cases.mkdir(parents=True)
    (cases / "device_check.yaml").write_text(CASES.format(shapes=", ".join(f"[{s}, {s}, {s}]" for s in shapes)))
    shutil.copyfile(ROOT / "cases" / "tolerances.yaml", cases / "tolerances.yaml")
    build.generate(load_cases([cases])[0], golden)
    return cases, golden


def run_suite(cases: Path, golden: Path, report: Path, backend: Sequence[str], rounds: int,
              timeout: float) -> subprocess.CompletedProcess:
    """pytest --timing of the conformance suite on the set, into `report`."""
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "suite" / "conformance"), "-p", "no:cacheprovider", "-q",
           f"--cases={cases}", f"--golden-dir={golden}", f"--report-dir={report}", "--timing",
           "--timing-rounds", str(rounds), *backend]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def check(doc: Mapping[str, Any], source: str, max_gbps: float = MAX_GBPS) -> Tuple[List[Tuple[str, float, float, str]], List[str]]:
    """(rows: case, median s, GB/s, clock; problems, one line each) of a results.json document: every
    numbers record of the run must be timed on the `device` clock by `source`, its rounds and median
    positive and finite, its GB/s positive, finite and at most `max_gbps`."""
    rows, problems = [], []
    records = [r for r in doc.get("records") or [] if r.get("kind") == "numbers"]
    for r in records:
        case, t = r.get("case") or r.get("key"), r.get("timing")
        if not isinstance(t, Mapping):
            problems.append(f"{case}: no timing record (outcome {r.get('outcome')})")
            continue
        if "status" in t:
            problems.append(f"{case}: not timed: {t.get('reason')}")
            continue
        clock, src = t.get("clock"), t.get("source")
        if (clock, src) != ("device", source):
            problems.append(f"{case}: timed by the {clock} clock ({src}), not the device's events ({source})")
        rounds = t.get("rounds") if isinstance(t.get("rounds"), list) else []
        bad = [x for x in rounds if not _positive(x)]
        if not rounds or bad or not _positive(t.get("median_s")):
            problems.append(f"{case}: round medians must be positive and finite: rounds {rounds!r:.80}, "
                            f"median {t.get('median_s')!r}")
            continue
        gbps = t.get("gbps")
        if not _positive(gbps) or gbps > max_gbps:
            problems.append(f"{case}: {gbps!r} GB/s is not a memory's speed (positive, at most {max_gbps:g})")
        rows.append((str(case), float(t["median_s"]), float(gbps) if _positive(gbps) else math.nan, f"{clock} ({src})"))
    if not records:
        problems.append("the run has no numbers record: the timing set did not run")
    return rows, problems


def table(rows: Sequence[Tuple[str, float, float, str]]) -> str:
    width = max([len("case")] + [len(r[0]) for r in rows])
    lines = [f"{'case':<{width}}  {'median':>10}  {'GB/s':>9}  clock"]
    lines += [f"{c:<{width}}  {seconds(m):>10}  {g:>9.1f}  {k}" for c, m, g, k in rows]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="device_timing_check.py", description=__doc__.split("\n")[0])
    ap.add_argument("--report-dir", default="reports/device-timing-check", help="where the run's reports go")
    ap.add_argument("--sizes", type=sizes, default=sizes("512x512,2048x2048,4096x4096"),
                    help="the shapes of the timing set, comma-separated")
    ap.add_argument("--rounds", type=int, default=10, help="--timing-rounds (at least 5: the gate's minimum)")
    ap.add_argument("--timeout", type=float, default=480.0, help="seconds the pytest run may take")
    ap.add_argument("--max-gbps", type=float, default=MAX_GBPS, help="GB/s above which a result is no memory's")
    ap.add_argument("--rehearse", metavar="SPEC", help="run on this backend, without CUDA (tests the script)")
    ap.add_argument("--expect-source", default=None, help="the timing source a rehearsal expects (simulated)")
    a = ap.parse_args(argv)
    if a.rounds < 5:
        ap.error("--rounds: give at least 5")
    if a.rehearse is None:
        why = no_cuda()
        if why is not None:
            print(f"device_timing_check: no CUDA device here, nothing checked: {why}", file=sys.stderr)
            return 2
        backend, source = ["--backend", "torch", "--backend-opt", "device=cuda"], CUDA_SOURCE
    else:
        backend, source = ["--backend", a.rehearse], a.expect_source or "simulated"
        print(f"REHEARSAL on backend {a.rehearse}: this proves the script, not a device")
    report = Path(a.report_dir).resolve()
    with tempfile.TemporaryDirectory(prefix="device-timing-check-") as work:
        cases, golden = prepare(Path(work), a.sizes)
        try:
            done = run_suite(cases, golden, report, backend, a.rounds, a.timeout)
        except subprocess.TimeoutExpired:
            print(f"device_timing_check: the pytest run took over {a.timeout:g} s (--timeout)")
            return 1
    print(f"pytest --timing {' '.join(backend)}: exit {done.returncode}; reports in {report}")
    from suite.report import results
    try:
        doc = results.read(report / "results.json")
    except (results.ResultsError, OSError) as e:
        print(f"device_timing_check: no results to check: {e}")
        print(done.stdout[-3000:] + done.stderr[-2000:])
        return 1
    rows, problems = check(doc, source, a.max_gbps)
    if done.returncode != 0:
        problems.append(f"the pytest run exited {done.returncode} (a case failed or errored: {report / 'summary.md'})")
    print(table(rows))
    for p in problems:
        print(f"PROBLEM: {p}")
    spec = json.dumps((doc.get("backend") or {}).get("spec"))
    print(f"FAILED: {len(problems)} problems; {len(rows)} cases timed (backend {spec})" if problems else
          f"OK: {len(rows)} cases timed on the device clock by {source} (backend {spec})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
