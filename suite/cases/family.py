"""Families: what the case files of several operators share, written once (docs/cases.md, "Families").

An operator's case file names its family (`family: loss`); the family's file, families/loss.yaml
beside the case files, holds shape sets and named matrices:

    shapes:
      ranks:
        - {each: scalar}          # every input this shape, for any number of inputs
        - {each: 2x3}
      tiles:
        generate:
          each: [N]               # every input this template
          N: [tile - 1, tile + 1]
    matrices:
      - name: every dtype on every product
        dtypes: [float32, float16, bfloat16]
        shapes: [ranks]

The case file's matrices name the family's sets as their own (a set of its own of the same name
wins), and take a family matrix in their place with `- use: <its name>`, any key beside `use`
replacing the family's (`products: [atlas-a2]`). A family's sets are read for an operator when one
of its matrices names them: a generator's names (tile, ...) are the operator's.
"""
from __future__ import annotations

import re

from pathlib import Path
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

from suite.cases.expand import _triple, generator_names
from suite.cases.shapegen import Generator
from suite.common.yamlfile import FileError, LineDict, LineList, load

FAMILY_DIR = "families"                  # beside the case files
FAMILY_KEYS = {"shapes", "matrices"}
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


def _mark(node: Any, path: Path) -> None:
    """Every mapping and list read from the family's file knows the file (_Ctx.fail names it)."""
    if isinstance(node, (LineDict, LineList)):
        node.path = path
        for v in (node.values() if isinstance(node, dict) else node):
            _mark(v, path)


class Family:
    """A family's file as read: its shape sets (name -> the LineList or generator node) and its
    matrices (name -> the mapping), checked as far as they do not depend on an operator."""

    def __init__(self, path: Path) -> None:
        self.path = path
        doc = load(path)
        if not isinstance(doc, LineDict):
            raise FileError(path, 1, None, f"a family file is a mapping with keys {', '.join(sorted(FAMILY_KEYS))}")
        _mark(doc, path)
        for k in doc:
            if k not in FAMILY_KEYS:
                raise FileError(path, doc.line_of(k), str(k), f"unknown key (allowed: {', '.join(sorted(FAMILY_KEYS))})")
        sets = doc.get("shapes")
        sets = LineDict() if sets is None else sets
        if not isinstance(sets, dict):
            raise FileError(path, doc.line_of("shapes"), "shapes", "is a mapping of set name to a shape set")
        for name, combos in sets.items():
            _check_set(path, sets, name, combos)
        self.sets: Dict[str, Any] = dict(sets)
        items = doc.get("matrices")
        items = LineList() if items is None else items
        if not isinstance(items, list):
            raise FileError(path, doc.line_of("matrices"), "matrices", "is a list")
        self.matrices: Dict[str, LineDict] = {}
        for i, m in enumerate(items):
            if not isinstance(m, LineDict):
                raise FileError(path, items.line_of(i), f"matrices[{i}]", "each entry of matrices is a mapping")
            name = m.get("name")
            if not isinstance(name, str) or not name:
                raise FileError(path, m.line_of("name"), "name", "a family's matrix has a name (what `use:` gives)")
            if "use" in m:
                raise FileError(path, m.line_of("use"), "use", "a family's matrix is written out, it uses none")
            if name in self.matrices:
                raise FileError(path, m.line_of("name"), "name",
                                f"duplicate matrix name {name!r} (also line {self.matrices[name].line})")
            self.matrices[name] = m


def _check_set(path: Path, sets: LineDict, name: Any, combos: Any) -> None:
    """A family's set serves operators of any number of inputs: each combination `{each: SHAPE}`,
    a generator's templates `each: [...]`. (The shapes themselves are read for the operator.)"""
    field = f"shapes.{name}"
    if isinstance(combos, LineDict) and set(combos) == {"generate"}:
        body = combos["generate"]
        if isinstance(body, LineDict) and "shapes" in body:
            raise FileError(path, body.line_of("shapes"), f"{field}.generate.shapes",
                            "a family's generator gives `each: [template]`, every input's, not one per input")
        return
    if not isinstance(combos, list) or not combos:
        raise FileError(path, sets.line_of(name), field, "a shape set is a non-empty list of {each: SHAPE}, "
                                                          "or a mapping with one key, generate")
    for i, c in enumerate(combos):
        if not (isinstance(c, LineDict) and set(c) == {"each"}):
            raise FileError(path, combos.line_of(i), f"{field}[{i}]",
                            f"a family's shape combination is {{each: SHAPE}}, every input's (the family serves "
                            f"operators of any number of inputs), not {c!r}")


def family_of(path: Path, doc: LineDict, cache: Optional[Dict[Path, Family]] = None) -> Optional[Family]:
    """The family a case file names (`family:`), read from families/<name>.yaml beside it; None
    when it names none."""
    if "family" not in doc:
        return None
    name = doc["family"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise FileError(path, doc.line_of("family"), "family",
                        f"a family's name (lower case, digits, _), not {name!r}")
    fpath = Path(path).parent / FAMILY_DIR / f"{name}.yaml"
    if not fpath.is_file():
        raise FileError(path, doc.line_of("family"), "family", f"no family {name!r}: {fpath} does not exist")
    if cache is not None and fpath in cache:
        return cache[fpath]
    fam = Family(fpath)
    if cache is not None:
        cache[fpath] = fam
    return fam


def used(path: Path, fam: Optional[Family], item: LineDict) -> Tuple[LineDict, Optional[Path]]:
    """A case file's matrix as written, or, for `use: NAME`, the family's matrix NAME with the
    entry's other keys in place of its own (at the entry's line: the case's source), and the family
    file's path (None for a matrix of the case file's own)."""
    if "use" not in item:
        return item, None
    name = item["use"]
    if fam is None:
        raise FileError(path, item.line_of("use"), "use", "`use` takes a family's matrix: give the file a `family:`")
    if not isinstance(name, str) or name not in fam.matrices:
        raise FileError(path, item.line_of("use"), "use",
                        f"no matrix {name!r} in {fam.path} (its matrices: {', '.join(fam.matrices) or 'none'})")
    base = fam.matrices[name]
    merged = LineDict({**base, **{k: v for k, v in item.items() if k != "use"}})
    merged.line = item.line
    merged.lines = {**{k: base.line_of(k) for k in base}, **{k: item.line_of(k) for k in item if k != "use"}}
    merged.paths = {k: fam.path for k in base if k not in item}      # the keys the family gave
    return merged, fam.path


def in_use(e: FileError, fam_path: Path, path: Path, op: str, line: int) -> FileError:
    """An error found in a family's file while expanding a matrix a case file took from it: said
    with the operator and the line that took it (the family's matrix may be right for another)."""
    if e.path != str(fam_path):
        return e
    return FileError(e.path, e.line, e.field, f"{e.message} (for {op}: {path}:{line} uses it)")


class ShapeSets(Mapping):
    """The shape sets a case file's matrices may name: its own (read at once), then its family's
    that it does not redefine (read for the operator when a matrix first names one). Each is a
    Generator or a list of (shapes, line, file)."""

    def __init__(self, ctx: Any, op: Any, own: Dict[str, Any], fam: Optional[Family]) -> None:
        self.ctx, self.op, self.fam = ctx, op, fam
        self.nodes = {**({} if fam is None else fam.sets), **own}
        self.done: Dict[str, Any] = {}
        for name in own:                     # the file's own are checked whether used or not
            self[name]

    def __getitem__(self, name: str) -> Any:
        if name not in self.done:
            node = self.nodes[name]
            ctx = self.ctx.at(getattr(node, "path", None))
            self.done[name] = parse_set(ctx, self.op, name, node)
        return self.done[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def generated(self) -> bool:
        """Whether any set is a generator (the hardware file is needed)."""
        return any(isinstance(n, dict) and set(n) == {"generate"} for n in self.nodes.values())


def parse_set(ctx: Any, op: Any, name: str, combos: Any) -> Any:
    """One shape set for `op`: a Generator, or [(shapes, line, file)]."""
    if isinstance(combos, LineDict) and set(combos) == {"generate"}:
        return Generator(ctx.path, name, combos, op.inputs, generator_names(op))
    if not isinstance(combos, list) or not combos:
        raise FileError(ctx.path, combos.line if hasattr(combos, "line") else None, f"shapes.{name}",
                        "a shape set is a non-empty list of shape combinations, or a mapping with one key, generate")
    combos.name = f"shapes.{name}"
    return [(_triple(ctx, op, combos, i, v), combos.line_of(i), ctx.path) for i, v in enumerate(combos)]
