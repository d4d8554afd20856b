"""`aclnn-conform cases import`: find the vendor files, read every case (atk.py, ttk.py), check each
one with the project's own loader (the code `cases validate` runs), give a repeated call another
seed, and write one case file per operator, atomically. What the loader refuses is refused with
its message, so a written file always validates."""
from __future__ import annotations

import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from suite.cases.load import load_cases, load_file
from suite.cases.model import NUMBERS
from suite.cases.vendor import atk, ttk
from suite.cases.vendor.emit import case_file, entry
from suite.cases.vendor.record import Item
from suite.cases.vendor.spec import Refused
from suite.common.files import atomic_write
from suite.common.yamlfile import FileError
from suite.ops.base import Operator

ATK_GLOB, TTK_GLOB = "atk_aclnn*.json", "ttk_*.csv"
ATK_PRODUCT = "atlas-a2"      # ATK files name no SoC; the vendor's CI runs them on Ascend 910B
TTK_PRODUCT = "ascend-950"    # TTK kernel files sit in arch35/, the Ascend 950 kernels
MAX_SEED = 1000               # seeds tried for a call repeated this often


@dataclass
class Tally:
    """One operator's counts: vendor cases found, imported, of them rejections, refused by reason."""

    found: int = 0
    imported: int = 0
    rejections: int = 0
    refused: Counter = field(default_factory=Counter)


def find(paths: Sequence[Path]) -> List[Tuple[Path, str, str]]:
    """(file, its name in the report, 'atk' or 'ttk') for each PATH: a file, or a folder searched
    for ATK and TTK files."""
    found: List[Tuple[Path, str, str]] = []
    for p in map(Path, paths):
        if p.is_dir():
            hits = sorted({*p.rglob(ATK_GLOB), *p.rglob(TTK_GLOB)})
            found += [(f, str(f.relative_to(p)), "atk" if f.suffix == ".json" else "ttk") for f in hits]
        elif p.is_file() and p.suffix in (".json", ".csv"):
            found.append((p, p.name, "atk" if p.suffix == ".json" else "ttk"))
        elif p.exists():
            raise FileError(p, None, None, "not an ATK JSON (.json) or TTK CSV (.csv) file")
        else:
            raise FileError(p, None, None, "no such file or folder")
    if not found:
        raise FileError(", ".join(map(str, paths)), None, None,
                        f"holds no ATK ({ATK_GLOB}) or TTK ({TTK_GLOB}) file")
    return found


def read_all(files: Iterable[Tuple[Path, str, str]], product: Optional[str]) -> List[Item]:
    items: List[Item] = []
    for path, shown, kind in files:
        reader = atk.read if kind == "atk" else ttk.read
        items += reader(path, shown, product or (ATK_PRODUCT if kind == "atk" else TTK_PRODUCT))
    return items


def _why(e: FileError) -> str:
    """The loader's complaint, without the scratch file it was made of."""
    return (f"field '{e.field}': " if e.field else "") + e.message


def reason_kind(why: str) -> str:
    """A refusal's reason for the table: who says it and of which field, then its words up to the
    first number, quote or bracket (the values that differ from case to case)."""
    m = re.match(r"(the loader: )?((field|input) '[^']*'( \([^)]*\))?: )?", why)
    rest = re.split(r"[:({\[']|\d", why[m.end():])[0].strip(" ,;")
    return (m.group(0) + rest).strip(" :")


class Checker:
    """Each case through the project's loader, in a scratch folder: its cases (a list attribute
    makes several), or the loader's complaint."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def cases(self, op: Operator, e: dict) -> list:
        path = self.folder / f"{type(op).__module__.rsplit('.', 1)[-1]}.yaml"
        path.write_text(case_file(op, [e], []), encoding="utf-8")
        try:
            return load_file(path).cases
        except FileError as err:
            raise Refused(f"the loader: {_why(err)}") from None


def _module(op: Operator) -> str:
    return type(op).__module__.rsplit(".", 1)[-1]


def run(paths: Sequence[Path], out: Path, force: bool = False, product: Optional[str] = None,
        say: Callable[[str], None] = print, huge_from: Optional[int] = None) -> Tuple[Dict[str, Tally], List[Path]]:
    """Import every vendor case under `paths` into `out`/<operator module>.yaml; `say` gets each
    refusal's line; a case with an array past `huge_from` elements goes to the huge tier (default:
    past the default tier's limit). Returns the tallies by operator and the files written."""
    items = read_all(find(paths), product)
    tallies: Dict[str, Tally] = {}
    kept: Dict[str, Tuple[Operator, List[dict]]] = {}
    for it in items:
        tallies.setdefault(it.key, Tally()).found += 1
        if it.op is not None:
            kept.setdefault(it.op.name, (it.op, []))
    targets = {name: out / f"{_module(op)}.yaml" for name, (op, _) in kept.items()}
    if not force:
        for t in targets.values():
            if t.exists():
                raise FileError(t, None, None, "exists; --force overwrites it")
    taken: Dict[str, Set[str]] = {}
    with tempfile.TemporaryDirectory(prefix="aclnn-import-") as scratch:
        check = Checker(Path(scratch))
        for it in items:
            tally = tallies[it.key]
            try:
                if it.refused is not None:
                    raise Refused(it.refused)
                op = it.op
                e, cases = _admit(check, op, it, taken.setdefault(op.name, set()), huge_from)
            except Refused as why:
                tally.refused[reason_kind(str(why))] += 1
                say(f"{it.file}: case {it.ident}: refused: {why}")
                continue
            taken[op.name].update(c.id for c in cases)
            kept[op.name][1].append(e)
            tally.imported += 1
            tally.rejections += all(c.expect != NUMBERS for c in cases)
        written = _write(kept, targets, Path(scratch), [str(p) for p in paths])
    return tallies, written


def _admit(check: Checker, op: Operator, it: Item, taken: Set[str],
           huge_from: Optional[int] = None) -> Tuple[dict, list]:
    """The case's mapping and its cases; a call the file already holds gets the next free seed."""
    name = f"{it.file}#{it.ident.split(' (line ')[0]}"
    for seed in range(MAX_SEED):
        e = entry(op, it.call, name, seed or None, huge_from)
        cases = check.cases(op, e)
        if not taken.intersection(c.id for c in cases):
            return e, cases
    raise Refused(f"the same call is in the file {MAX_SEED} times")


def _write(kept: Dict[str, Tuple[Operator, List[dict]]], targets: Dict[str, Path], scratch: Path,
           sources: List[str]) -> List[Path]:
    """Every operator's file, each checked whole by the loader (duplicate ids across its cases
    included) before any of them replaces anything, then written atomically."""
    header = ["Imported by `aclnn-conform cases import` (docs/vendor-cases.md) from:",
              *(f"  {s}" for s in sources),
              "Each case's name is <vendor file>#<vendor case>. Re-import rather than edit."]
    texts = {name: case_file(op, entries, header) for name, (op, entries) in kept.items() if entries}
    whole = scratch / "whole"
    whole.mkdir(exist_ok=True)
    for name, text in texts.items():
        (whole / targets[name].name).write_text(text, encoding="utf-8")
        load_cases([whole / targets[name].name])
    for name, text in texts.items():
        atomic_write(targets[name], text.encode("utf-8"))
    return [targets[name] for name in texts]
