"""How long pytest takes to collect a large case file, and the default full run.

Writes a case file with >= 10,000 cases into a temporary folder, then times
`pytest --collect-only -q --cases=<it>` (collection only, so no goldens are needed), and the
project's default run `pytest -q -n 2`. Prints both figures with the case count. Run from the
repository root: `python benchmarks/collect_speed.py` (add --skip-full to time collection only).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from suite.cases.load import load_cases  # noqa: E402

# 4 products x 3 dtypes x 3 reductions x 2 logTarget x 120 shapes x 2 layouts, less the
# atlas-training/inference bfloat16 rejections kept once each: 15,840 cases.
BIG = """
op: KlDivBackward
shapes:
  many:
{shapes}
matrices:
  - dtypes: [float32, float16, bfloat16]
    reductions: [none, sum, batchmean]
    shapes: [many]
    layouts: [contiguous, transposed]
"""
PLUGIN = ["-p", "suite.plugin", "-p", "no:benchmark"]


def big_case_file(folder: Path) -> Path:
    combos = [f"    - [{a}x{b}, {a}x{b}, {a}x{b}]" for a in range(2, 14) for b in range(2, 12)]
    path = folder / "big.yaml"
    path.write_text(BIG.format(shapes="\n".join(combos)).lstrip())
    return path


def timed(args: list, env: dict) -> tuple:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", *PLUGIN, *args], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr.strip()[-300:]
    return wall, r.returncode, last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--skip-full", action="store_true", help="time collection only")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        path = big_case_file(Path(tmp))
        cases, _ = load_cases([path])
        n_numbers = sum(1 for c in cases if c.expect == 0)
        wall, rc, last = timed(["--collect-only", "-q", f"--cases={path}", "-p", "no:cacheprovider"], env)
        print(f"collect-only: {len(cases)} cases ({n_numbers} numeric, {len(cases) - n_numbers} "
              f"rejections; one test item each) in {wall:.2f} s wall; rc={rc}; pytest: {last}")
    if not args.skip_full:
        wall, rc, last = timed(["-q", "-n", "2", "-p", "no:cacheprovider"], env)
        print(f"default full run (pytest -q -n 2, reference backend): {wall:.2f} s wall; rc={rc}; pytest: {last}")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} when finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
