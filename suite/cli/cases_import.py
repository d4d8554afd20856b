"""`aclnn-conform cases import`: the vendor's ATK JSON and TTK CSV system-test files into case
files (suite/cases/vendor/, docs/vendor-cases.md): a line on stderr for each case refused, then
one table row per operator."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Dict, List

from suite.cases.vendor import run as importer

HELP = """Import the vendor's own system-test cases: ATK JSON (atk_aclnn*.json) and TTK kernel CSV
(ttk_*.csv) files, or folders searched for them. Each vendor case becomes one single case of
DIR/<operator module>.yaml (its name: <file>#<vendor case>), checked by the same loader as `cases
validate`, or one line on stderr: FILE: case ID: refused: WHY. A call the contract rejects is
imported as the rejection case it is. An existing file is kept unless --force. Then one row per
operator: found, imported, of them rejections, refused (by reason). Exit 0 when it wrote files,
1 when no case could be imported, 2 on bad input (docs/vendor-cases.md)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="ATK JSON or TTK CSV file, or a folder of them")
    p.add_argument("--out", default="imported-cases", metavar="DIR",
                   help="folder of the case files written (default %(default)s)")
    p.add_argument("--force", action="store_true", help="overwrite case files that exist")
    p.add_argument("--huge-from", default=None, type=_elements, metavar="N",
                   help="put a case whose largest array passes N elements in the huge tier (run only with "
                        "pytest --scale huge), e.g. 2**25 for a CI machine (default: the default tier's limit)")
    p.add_argument("--product", default=None, metavar="NAME",
                   help=f"the product of every imported case (default: {importer.ATK_PRODUCT} for ATK files, "
                        f"{importer.TTK_PRODUCT} for TTK files, or a TTK row's one soc_series)")


def _elements(text: str) -> int:
    """N or 2**K, a positive count of elements."""
    try:
        n = int(text) if "**" not in text else int(text.split("**")[0]) ** int(text.split("**")[1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a count of elements, such as 33554432 or 2**25") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: 1 or more")
    return n


def table(tallies: Dict[str, importer.Tally]) -> List[str]:
    """One row per operator (covered ones first, by name), its refusals by reason under it."""
    rows = sorted(tallies.items(), key=lambda kv: (not kv[0][:1].isupper() or kv[0].startswith("aclnn"), kv[0]))
    width = max([len("operator")] + [len(k) for k in tallies])
    out = [f"{'operator':<{width}}  {'found':>6}  {'imported':>8}  {'rejections':>10}  {'refused':>7}"]
    for name, t in rows:
        out.append(f"{name:<{width}}  {t.found:>6}  {t.imported:>8}  {t.rejections:>10}  {sum(t.refused.values()):>7}")
        out += [f"{'':<{width}}    {n:>6} refused: {why}" for why, n in t.refused.most_common()]
    total = [sum(getattr(t, f) for t in tallies.values()) for f in ("found", "imported", "rejections")]
    out.append(f"{'total':<{width}}  {total[0]:>6}  {total[1]:>8}  {total[2]:>10}  "
               f"{sum(sum(t.refused.values()) for t in tallies.values()):>7}")
    return out


def cmd(args: argparse.Namespace) -> int:
    tallies, written = importer.run([Path(p) for p in args.paths], Path(args.out), force=args.force,
                                    product=args.product, huge_from=args.huge_from, say=lambda line: print(line, file=sys.stderr))
    print("\n".join(table(tallies)))
    for w in written:
        print(f"wrote {w}")
    if not written:
        print("no case imported: nothing written", file=sys.stderr)
        return 1
    return 0
