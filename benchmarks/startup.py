"""What a process of the suite pays before it does anything: the imports every pytest, every xdist
worker and every backend process makes. A run starts several such processes (one per worker, one
per backend start, a second for the determinism tests), and the project's own tests start a few
hundred, so a slow import is paid many times over.

    python benchmarks/startup.py            # median of 5 fresh interpreters each, this environment

Prints the installed numpy and ml_dtypes versions and, for each import, the median wall time of a
fresh `python -c "import X"` and its ratio to a bare interpreter's. Compare figures from one run
only (the machines are shared and noisy). pyproject.toml keeps ml_dtypes below 0.7 because of what
this prints (docs/figures.md, "Start-up").
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parents[1]
IMPORTS = ["pass", "import numpy", "import ml_dtypes", "import suite.plugin", "import suite.backends.reference"]


def wall(code: str, repeat: int) -> float:
    """Median seconds of a fresh interpreter that runs `code`."""
    times: List[float] = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import ml_dtypes
    import numpy
    print(f"python {sys.version.split()[0]}, numpy {numpy.__version__}, ml_dtypes {ml_dtypes.__version__}")
    bare = wall("pass", args.repeat)
    print(f"{'import':<36} {'median s':>9} {'x bare':>7}")
    for code in IMPORTS:
        s = bare if code == "pass" else wall(code, args.repeat)
        print(f"{code:<36} {s:9.3f} {s / bare:7.1f}")


if __name__ == "__main__":
    main()
