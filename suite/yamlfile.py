"""YAML read with line numbers, so every complaint about a case or tolerance file can name the
file, the line and the field. The loader is yaml.SafeLoader with only its map and sequence
constructors replaced: no tag beyond safe_load's is ever constructed."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml


class FileError(Exception):
    """Bad input in a user's file: one line naming where and what, never a traceback."""

    def __init__(self, path: Any, line: Optional[int], field: Optional[str], message: str) -> None:
        self.path, self.line, self.field, self.message = str(path), line, field, message
        where = f"{self.path}:{line}" if line else self.path
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{message}")


class LineDict(dict):
    line: int = 0
    lines: dict

    def line_of(self, key: Any) -> int:
        return self.lines.get(key, self.line)


class LineList(list):
    line: int = 0
    lines: list
    name: Optional[str] = None        # the key it sits under, for error messages

    def line_of(self, i: int) -> int:
        return self.lines[i] if i < len(self.lines) else self.line


class _Loader(yaml.SafeLoader):
    pass


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    d = LineDict()
    d.line, d.lines = node.start_mark.line + 1, {}
    for knode, vnode in node.value:
        key = loader.construct_object(knode, deep=True)
        try:
            hash(key)
        except TypeError:
            raise FileError(loader.name, knode.start_mark.line + 1, None, "a mapping key must be a plain value")
        if key in d:
            raise FileError(loader.name, knode.start_mark.line + 1, str(key), "duplicate key")
        d[key] = loader.construct_object(vnode, deep=True)
        d.lines[key] = knode.start_mark.line + 1
    return d


def _construct_seq(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    s = LineList(loader.construct_object(child, deep=True) for child in node.value)
    s.line, s.lines = node.start_mark.line + 1, [c.start_mark.line + 1 for c in node.value]
    return s


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def load(path: Path) -> Any:
    """Parse `path`; any YAML problem (syntax, an unsafe or unknown tag) becomes a FileError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise FileError(path, None, None, f"cannot read: {e.strerror}") from None
    loader = _Loader(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except FileError:
        raise
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise FileError(path, line, None, f"{e.problem or e.context}".strip()) from None
    except yaml.YAMLError as e:
        raise FileError(path, None, None, str(e)) from None
    finally:
        loader.dispose()
