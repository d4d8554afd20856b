"""What a backend's printing costs pytest's memory (issue 20, item 6).

The same slice of the default run (by default 119 tests: MseLossBackward's float16 atlas-a2 mean
cases, contiguous and uniform, numbers, rejections and determinism, the size of issue 20's
measurement) runs twice in a fresh pytest process each, with default
options and pytest's default capture: once with the reference backend, once with the same backend
printing SIZE bytes on every call (half through Python's print, half by writes straight to fd 2, as
a native library logs). Each pytest process records its own peak RSS (getrusage, RUSAGE_SELF, in a
tiny plugin), so the backend's processes are not counted. Printed: tests, wall time and peak RSS of
both runs, and the ratio, which issue 20 wants within 2x.

Run from the repository root: `python benchmarks/output_flood.py` (about a minute on 2 cores).
`--project DIR` measures another checkout of the suite (e.g. one before the change) with the same
plugin and backend, which live in a temporary folder, not in the checkout.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = '''
import json, os, resource

def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        with open(os.environ["FLOOD_RSS_FILE"], "w") as f:
            json.dump({"maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}, f)
'''

BACKEND = '''
import os
from suite.backends.reference import ReferenceBackend

class Flood(ReferenceBackend):
    """The reference backend, printing `size` bytes on every call."""
    name = "flood"

    def __init__(self, size="10485760"):
        super().__init__()
        half = int(size) // 2
        self.py = "p" * (half - 1)
        self.fd = b"n" * (half - 1) + b"\\n"

    def run(self, call):
        print(self.py)
        os.write(2, self.fd)
        return super().run(call)
'''


def one_run(project: Path, plugins: Path, extra: list) -> dict:
    """One pytest process over the slice: its test count, wall time and peak RSS."""
    rss = plugins / "rss.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(project), str(plugins)]), FLOOD_RSS_FILE=str(rss))
    env.pop("PYTEST_ADDOPTS", None)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "flood_probe",
                        *extra], cwd=project, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    last = (p.stdout.strip().splitlines() or [""])[-1]
    if p.returncode not in (0, 1) or not rss.exists():
        raise SystemExit(f"pytest exited with {p.returncode}: {p.stdout[-2000:]}{p.stderr[-2000:]}")
    return {"tests": last, "wall": wall, "rss": json.loads(rss.read_text())["maxrss_kib"] * 1024,
            "rc": p.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10 << 20, help="bytes printed per call (default 10 MiB)")
    ap.add_argument("--project", type=Path, default=ROOT, help="the checkout to measure (default this one)")
    ap.add_argument("-k", default="float16 and atlas-a2 and uniform and contiguous and mean",
                    help="pytest -k expression of the slice (default: 119 tests)")
    ap.add_argument("--cases", default="cases/mse_loss_backward.yaml", help="case file of the slice")
    args = ap.parse_args()
    project = args.project.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        plugins = Path(tmp)
        (plugins / "flood_probe.py").write_text(textwrap.dedent(PROBE))
        (plugins / "flood_backend.py").write_text(textwrap.dedent(BACKEND))
        base = [f"--cases={project / args.cases}", "-k", args.k, "-p", "no:benchmark"]
        quiet = one_run(project, plugins, base)
        flood = one_run(project, plugins, base + ["--backend", "flood_backend:Flood",
                                                 "--backend-opt", f"size={args.size}"])
    mib = 2 ** 20
    print(f"project {project}; slice: --cases {args.cases} -k {args.k!r}; {args.size / mib:g} MiB printed per call")
    for name, r in (("quiet (reference)", quiet), ("flood", flood)):
        print(f"  {name:18} {r['tests']:45} {r['wall']:6.1f} s   peak RSS {r['rss'] / mib:7.1f} MiB")
    print(f"  peak RSS ratio, flood / quiet: {flood['rss'] / quiet['rss']:.2f}x (issue 20 asks for at most 2x)")


if __name__ == "__main__":
    main()
