"""Loading case files: one file into its cases, a folder into all of them, with the duplicates refused."""
from __future__ import annotations


from pathlib import Path
from typing import Collection, Dict, Iterable, List, Optional, Tuple

from suite.cases import hardware
from suite import ops
from suite.common.yamlfile import FileError, LineDict, load
from suite.cases.parse import _Ctx, _limits
from suite.cases.expand import Expansion, FILE_KEYS, _matrix
from suite.cases.family import Family, ShapeSets, family_of, in_use, used
from suite.cases.singles import single as _single
from suite.cases.model import Case, NOT_CASE_FILES


def load_file(path: Path, hw: Optional[Dict[str, hardware.Hardware]] = None,
              only: Optional[Collection[str]] = None,
              standards: Optional[Tuple[str, Collection[str]]] = None,
              families: Optional[Dict[Path, Family]] = None) -> Expansion:
    """The cases of one case file. `only`: operator names; a file of another operator is read
    as far as its `op` and gives no case (its matrices are not expanded, nor checked).
    `standards`: (the tolerance table's file, its standards' names), which a case's `standard:`
    must name; None: not checked. `families`: the family files read so far (read once for a folder)."""
    path = Path(path)
    doc = load(path)
    ctx = _Ctx(path, standards)
    if not isinstance(doc, LineDict):
        raise FileError(path, 1, None, "a case file is a mapping with keys op, shapes, matrices, cases")
    for k in doc:
        if k not in FILE_KEYS:
            raise ctx.fail(doc, k, f"unknown key (allowed: {', '.join(sorted(FILE_KEYS))})")
    if "op" not in doc:
        raise FileError(path, doc.line, "op", "is required")
    try:
        op = ops.get(doc["op"])
    except (KeyError, TypeError):
        raise ctx.fail(doc, "op", f"unknown operator {doc['op']!r} (known: {', '.join(ops.OPERATORS)})") from None
    if only is not None and op.name not in only:
        return Expansion()
    _limits(ctx, doc)
    fam = family_of(path, doc, families)
    sets = doc.get("shapes")
    sets = {} if sets is None else sets
    if not isinstance(sets, dict):
        raise ctx.fail(doc, "shapes", "is a mapping of set name to a list of shape combinations")
    for name, combos in sets.items():
        if not (isinstance(combos, LineDict) and set(combos) == {"generate"}) and (
                not isinstance(combos, list) or not combos):
            raise ctx.fail(sets, name, "a shape set is a non-empty list of shape combinations, "
                                       "or a mapping with one key, generate")
    # name -> a Generator, or [(shapes, line, file)]: the file's own, then its family's
    shape_sets = ShapeSets(ctx, op, sets, fam)
    if hw is None and shape_sets.generated():
        # The hardware file next to the case file, else the data folder's.
        beside = path.parent / hardware.HARDWARE_FILE
        hw = hardware.load_hardware(beside if beside.exists() else None)
    out = Expansion()
    for key, handler in (("matrices", _matrix), ("cases", _single)):
        items = doc.get(key)
        if items is None:                  # absent, or given empty
            continue
        if not isinstance(items, list):
            raise ctx.fail(doc, key, "is a list")
        items.name = key
        for i, item in enumerate(items):
            if not isinstance(item, LineDict):
                raise ctx.fail(items, i, f"each entry of {key} is a mapping")
            if handler is _matrix:
                try:
                    _matrix(ctx, op, used(path, fam, item)[0], shape_sets, out, hw)
                except FileError as e:
                    raise e if fam is None else in_use(e, fam.path, path, op.name, item.line) from None
            else:
                _single(ctx, op, item, out)
    return out


def case_files(path: Path) -> List[Path]:
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.glob("*.yaml") if p.name not in NOT_CASE_FILES)
    if path.exists():
        return [path]
    raise FileError(path, None, None, "no such case file or folder")


def load_cases(paths: Iterable[Path], only: Optional[Collection[str]] = None,
               standards: Optional[Tuple[str, Collection[str]]] = None) -> Tuple[List[Case], int]:
    """Every case of every file, checked for duplicate ids across files; and the dropped count.
    `only`: the cases of these operators alone (the other files are not expanded: `--op`);
    `standards`: as load_file's."""
    cases: List[Case] = []
    dropped = 0
    seen: Dict[str, Case] = {}
    families: Dict[Path, Family] = {}
    for p in paths:
        for f in case_files(p):
            exp = load_file(f, only=only, standards=standards, families=families)
            dropped += exp.dropped
            for c in exp.cases:
                first = seen.get(c.id)
                if first is not None:
                    file, _, line = c.source.rpartition(":")
                    raise FileError(file, int(line), "id",
                                    f"duplicate case id {c.id} (also made by {first.source}); "
                                    f"use 'exclude' or distinct shape sets")
                seen[c.id] = c
                cases.append(c)
    return cases, dropped
