"""Known-failures files: per backend, the cases expected to fail, each with its reason.

    - cases: "SomeLossBackward-bfloat16-*-mean-*"   # fnmatch glob(s) on case ids; a list is allowed
      reason: "mean divides in bfloat16"            # required
      issue: https://example.org/issues/12          # optional
      strict: true                                  # optional: passing then fails the run
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Optional, Tuple

from suite.common.yamlfile import FileError, LineDict, LineList, load

KEYS = {"cases", "reason", "issue", "strict"}


@dataclass(frozen=True)
class Entry:
    patterns: Tuple[str, ...]
    reason: str
    issue: Optional[str]
    strict: bool
    where: str                              # file:line, for warnings

    def matches(self, case_id: str) -> bool:
        return any(fnmatch.fnmatchcase(case_id, p) for p in self.patterns)

    @property
    def text(self) -> str:
        return self.reason + (f" ({self.issue})" if self.issue else "")


def load_file(path: Path) -> List[Entry]:
    """Parse and check; errors name the file, line and field."""
    doc = load(path)
    if doc is None:
        return []
    if not isinstance(doc, LineList):
        raise FileError(path, getattr(doc, "line", 1), None, "a known-failures file is a list of entries")
    out = []
    for i, e in enumerate(doc):
        line = doc.line_of(i)
        if not isinstance(e, LineDict):
            raise FileError(path, line, None, "an entry is a mapping with cases and reason")
        for k in e:
            if k not in KEYS:
                raise FileError(path, e.line_of(k), str(k), f"unknown field (known: {', '.join(sorted(KEYS))})")
        for k in ("cases", "reason"):
            if k not in e:
                raise FileError(path, line, k, "required")
        pats = e["cases"]
        pats = [pats] if isinstance(pats, str) else pats
        if not isinstance(pats, list) or not pats or not all(isinstance(p, str) and p for p in pats):
            raise FileError(path, e.line_of("cases"), "cases", "a case id glob or a non-empty list of them")
        if not isinstance(e["reason"], str) or not e["reason"].strip():
            raise FileError(path, e.line_of("reason"), "reason", "a non-empty string")
        issue = e.get("issue")
        if issue is not None and not isinstance(issue, str):
            raise FileError(path, e.line_of("issue"), "issue", "a link (string)")
        strict = e.get("strict", False)
        if not isinstance(strict, bool):
            raise FileError(path, e.line_of("strict"), "strict", "true or false")
        out.append(Entry(tuple(pats), e["reason"].strip(), issue, strict, f"{path}:{line}"))
    return out


def match(entries: Iterable[Entry], case_id: str) -> Optional[Entry]:
    """The first entry that lists `case_id`."""
    for e in entries:
        if e.matches(case_id):
            return e
    return None


def unused(entries: Iterable[Entry], case_ids: Iterable[str]) -> List[Tuple[Entry, str]]:
    """(entry, pattern) pairs that match none of `case_ids`: stale lines to delete."""
    ids = list(case_ids)
    return [(e, p) for e in entries for p in e.patterns if not any(fnmatch.fnmatchcase(i, p) for i in ids)]
