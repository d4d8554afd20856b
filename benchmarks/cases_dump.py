"""Every case the case files expand to, one line each with all its fields, to compare two trees:
a change that only moves how the files are written (issue 46's families) must leave it the same.

    python benchmarks/cases_dump.py > before.txt        # then change the files
    python benchmarks/cases_dump.py | diff before.txt -

Grouped by operator, then by tier and scale (small: the default tier's cases whose data is
committed, up to STORED_LIMIT elements; default: the larger ones, generated or not; huge: --scale
huge), each group's ids sorted; the first line has a hash of the ids in the order loaded. `source` (the file:line of the matrix or case that made it) is
printed apart, as file only: moving a matrix to a family file, or lines within a file, moves it.
`--source` prints it in full."""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from suite.cases.load import load_cases  # noqa: E402
from suite.cases.model import STORED_LIMIT  # noqa: E402

FIELDS = ("product", "dtypes", "out_dtype", "shapes", "out_shape", "attrs", "layout", "values", "expect",
          "why", "determinism", "datakey", "tier", "generated", "outputs", "timing", "value_spec", "standard")


def scale(case) -> str:
    if case.tier != "default":
        return case.tier
    return "small" if case.elements <= STORED_LIMIT else "default"


def lines(folder: Path, full_source: bool = False) -> List[str]:
    cases, dropped = load_cases([folder])
    order = hashlib.sha256("\n".join(c.id for c in cases).encode()).hexdigest()[:16]
    out = [f"# {len(cases)} cases, {dropped} combinations dropped; their ids in load order: sha256 {order}"]
    groups = {}
    for c in cases:
        groups.setdefault((c.op, scale(c)), []).append(c)
    for (op, sc) in sorted(groups):
        group = sorted(groups[(op, sc)], key=lambda c: c.id)
        out.append(f"## {op} {sc}: {len(group)}")
        for c in group:
            fields = "  ".join(f"{f}={getattr(c, f)!r}" for f in FIELDS)
            src = c.source if full_source else Path(c.source.rpartition(":")[0]).name
            out.append(f"{c.id}  {fields}  source={src}")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", nargs="?", default=str(ROOT / "cases"))
    p.add_argument("--source", action="store_true", help="the source's line too")
    a = p.parse_args(argv)
    sys.stdout.write("\n".join(lines(Path(a.folder), a.source)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
