"""What one operator costs to add, in hand-written lines, in the five places an operator lives
(docs/layout.md, "Adding an operator"): its module (suite/ops/<module>.py), its case file
(cases/<module>.yaml), its contract page (docs/operators/<Name>.md), its mutant kit
(tests/mutants/<module>.py) and its emulator entry (tests/emulator/src/ops/<module>.c).

Counts non-blank lines (comments included: they are written by hand too) of the working tree, or
of a commit with `--at REV`, so issue 46's "a third of today's cost" is measured the same way
before and after. The files several operators share (the case files' families) are counted once,
on a line of their own below the table.

    python benchmarks/operator_cost.py                 # the working tree
    python benchmarks/operator_cost.py --at 9593e84    # another commit, read with git show
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
SHARED = "cases/families"
PLACES = (("module", "suite/ops/{m}.py"), ("cases", "cases/{m}.yaml"), ("page", "docs/operators/{n}.md"),
          ("kit", "tests/mutants/{m}.py"), ("emulator", "tests/emulator/src/ops/{m}.c"))


def _text(path: str, rev: Optional[str]) -> Optional[str]:
    if rev is None:
        p = ROOT / path
        return p.read_text(encoding="utf-8") if p.is_file() else None
    r = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def _modules(rev: Optional[str]) -> List[Tuple[str, str]]:
    """(module, operator name) of every operator module: the class that sets `name = ...` (its
    class name is the operator's; read as text, so another commit needs no import)."""
    if rev is None:
        files = sorted(p.name for p in (ROOT / "suite" / "ops").glob("*.py"))
    else:
        out = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:suite/ops"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        files = sorted(f for f in out.split() if f.endswith(".py"))
    found = []
    for f in files:
        cls = None
        for line in (_text(f"suite/ops/{f}", rev) or "").splitlines():
            if line.startswith("class "):
                cls = line[len("class "):].split("(")[0].split(":")[0].strip()
            elif cls and line.startswith("    name = ") and line.strip() != 'name = ""':
                found.append((f[:-3], cls))
                break
    return found


def count(text: Optional[str]) -> Optional[int]:
    return None if text is None else sum(1 for line in text.splitlines() if line.strip())


def table(rev: Optional[str]) -> Dict[str, Dict[str, Optional[int]]]:
    return {name: {place: count(_text(pattern.format(m=module, n=name), rev)) for place, pattern in PLACES}
            for module, name in _modules(rev)}


def shared(rev: Optional[str]) -> Dict[str, Optional[int]]:
    """The lines several operators share, counted once and apart from the table: the case files'
    families (cases/families/*.yaml, docs/cases.md "Families")."""
    if rev is None:
        files = sorted(p.name for p in (ROOT / SHARED).glob("*.yaml"))
    else:
        r = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:{SHARED}"], cwd=ROOT,
                           capture_output=True, text=True)
        files = sorted(f for f in r.stdout.split() if f.endswith(".yaml")) if r.returncode == 0 else []
    return {f"{SHARED}/{f}": count(_text(f"{SHARED}/{f}", rev)) for f in files}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--at", default=None, metavar="REV", help="count at this commit (default: the working tree)")
    args = ap.parse_args(argv)
    rows = table(args.at)
    heads = [p for p, _ in PLACES]
    print(f"{'operator':<28}" + "".join(f"{h:>10}" for h in heads) + f"{'total':>10}")
    for name, cells in rows.items():
        total = sum(v for v in cells.values() if v)
        print(f"{name:<28}" + "".join(f"{'-' if cells[h] is None else cells[h]:>10}" for h in heads) + f"{total:>10}")
    totals = [sum(sum(v for v in c.values() if v) for c in rows.values())]
    if rows:
        print(f"{len(rows)} operators, {totals[0]} lines, {totals[0] / len(rows):.0f} per operator "
              f"({'working tree' if args.at is None else args.at})")
    for path, n in shared(args.at).items():
        print(f"shared, not in the table: {path} {n} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
