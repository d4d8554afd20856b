"""YAML read with line numbers, so every complaint about a case or tolerance file can name the
file, the line and the field. The loader is yaml.SafeLoader with only its map and sequence
constructors replaced (no tag beyond safe_load's is ever constructed) and integers read in decimal
alone (the shape 0x3 is not the hexadecimal 3).

A file is refused, as one FileError, before it can cost much time or memory:
  * over MAX_BYTES (16 MiB; the project's files are 10 kB, a long known-failures file ~1 MB);
  * not UTF-8 (the line of the first bad byte), or holding a character YAML forbids (NUL and
    the other C0/C1 controls but tab and line breaks; the line it is on);
  * collections nested more than MAX_DEPTH (64) deep: the composer and the constructors recurse
    once per level, and the project's files nest 5 deep;
  * more than MAX_NODES (200,000) nodes, where an alias counts as every node of what it names:
    "billion laughs" (nine aliases of nine aliases of ...) is refused at the alias that passes the
    limit, before anything iterates it. A node costs PyYAML ~0.7 kB, so this also bounds what a
    16 MiB file of `[1,1,1,...]` costs: refused after 8 s and 150 MB (measured), where loading it
    would take ~5 GB. The project's largest file has ~1,000 nodes.
"""
from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Any, Dict, Optional

import yaml

MAX_BYTES = 16 << 20
MAX_DEPTH = 64
MAX_NODES = 200_000
_BREAKS = re.compile("\r\n|[\n\r\x85\u2028\u2029]")      # what PyYAML's marks count as a new line


def one_line(text: str) -> str:
    """`text` with control characters and line separators escaped (`\\n`, `\\x00`): a message
    quoting a user's key or value stays one line."""
    return "".join(c.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in text)


class FileError(Exception):
    """Bad input in a user's file: one line naming where and what, never a traceback."""

    def __init__(self, path: Any, line: Optional[int], field: Optional[str], message: str) -> None:
        field = None if field is None else one_line(str(field))
        self.path, self.line, self.field, self.message = str(path), line, field, one_line(str(message))
        where = f"{self.path}:{line}" if line else self.path
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{self.message}")


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
    """SafeLoader that counts what it composes: nesting depth, and nodes with aliases expanded."""

    def __init__(self, text: str, name: str) -> None:
        super().__init__(text)
        self.name = name
        self.depth = 0
        self.nodes = 0
        self.weights: Dict[str, int] = {}     # anchor -> nodes of what it names, aliases expanded

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self._count(self.weights.get(event.anchor, 1), event.start_mark)
            return super().compose_node(parent, index)
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise FileError(self.name, event.start_mark.line + 1, None,
                                f"nested more than {MAX_DEPTH} levels deep")
        before = self.nodes
        self._count(1, event.start_mark)
        node = super().compose_node(parent, index)
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            self.depth -= 1
        if event.anchor is not None:
            self.weights[event.anchor] = self.nodes - before
        return node

    def _count(self, n: int, mark: Any) -> None:
        self.nodes += n
        if self.nodes > MAX_NODES:
            raise FileError(self.name, mark.line + 1, None,
                            f"more than {MAX_NODES} values (an alias counts as all it repeats)")

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as e:    # the date 2024-02-30, an int of 5000 digits
            what = repr(node.value[:40]) if isinstance(node.value, str) else node.tag
            raise FileError(self.name, node.start_mark.line + 1, None, f"cannot read {what}: {e}") from None


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
# Integers are decimal only: YAML 1.1 reads 0x3 as 3 (hex), 012 as 10 (octal) and 1:30 as 90
# (base 60), so the shape "0x3" (empty) silently became the 1-d shape (3,). Those stay strings.
_INT = "tag:yaml.org,2002:int"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _INT]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver(_INT, re.compile(r"^[-+]?(?:0|[1-9][0-9_]*)$"), list("-+0123456789"))


def line_at(text: str, pos: int) -> int:
    """1-based line of character `pos`, counting line breaks as PyYAML's marks do (CR LF once)."""
    head = text[:pos]
    split_crlf = head.endswith("\r") and text[pos:pos + 1] == "\n"
    return len(_BREAKS.findall(head)) - split_crlf + 1


def read_text(path: Path, max_bytes: int = MAX_BYTES) -> str:
    """The file as UTF-8 text; too large, unreadable or not UTF-8 is one FileError."""
    too_large = FileError(path, None, None, f"larger than {max_bytes >> 20} MiB")
    chunks, size = [], 0
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > max_bytes:
                raise too_large
            while size <= max_bytes:            # in chunks: read(n) would first allocate n bytes
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except OSError as e:
        raise FileError(path, None, None, f"cannot read: {e.strerror}") from None
    if size > max_bytes:                        # a file that grew, or a pipe
        raise too_large
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        head = data[:e.start].decode("utf-8")
        raise FileError(path, line_at(head, len(head)), None, f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None


def _check_printable(path: Path, text: str) -> None:
    bad = yaml.reader.Reader.NON_PRINTABLE.search(text)
    if bad:
        raise FileError(path, line_at(text, bad.start()), None,
                        f"character U+{ord(bad.group()):04X} is not allowed in YAML "
                        f"(control characters other than tab and line breaks)")


def load(path: Path) -> Any:
    """Parse `path`; any YAML problem (syntax, an unsafe or unknown tag, the limits above) becomes
    a FileError."""
    path = Path(path)
    text = read_text(path)
    _check_printable(path, text)
    loader = _Loader(text, str(path))
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
    except RecursionError:                            # MAX_DEPTH should make this unreachable
        raise FileError(path, None, None, "nested too deeply") from None
    finally:
        loader.dispose()
