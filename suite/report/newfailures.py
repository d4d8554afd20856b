"""`report diff`'s new failures, led by their counts per operator and kind of test (numbers, status,
determinism, and incidents outside any case), largest first, then a few of each group with their
messages and reproducers: one broken operator's hundreds of failures can no longer hide another's
(issue 42, item 6). Presentation only: which failures are new is suite/report/compare.py's."""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from suite.report.groups import message

FEW = 3                   # failures shown per group at least (fewer only where `limit` is smaller)
MAX_MESSAGE = 300         # characters of a failure's message
KINDS = {"numbers": "numbers", "rejection": "status", "determinism": "determinism"}
INCIDENT = ("-", "incident")     # the group of the incidents outside any case


def kind_label(r: Mapping) -> str:
    """A record's kind of test as the diff counts it: a rejection test checks a status."""
    return KINDS.get(str(r.get("kind")), str(r.get("kind")))


def grouped(failures: Sequence[Tuple[Mapping, Optional[Mapping]]]) -> List[Tuple[Tuple[str, str], list]]:
    """(operator, kind) -> its new failures, largest group first (ties: by operator, then kind)."""
    found: Dict[Tuple[str, str], list] = {}
    for r, b in failures:
        found.setdefault((str(r.get("op")), kind_label(r)), []).append((r, b))
    return sorted(found.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def counts(failures: Sequence[Tuple[Mapping, Optional[Mapping]]], incidents: Sequence[str]) -> List[str]:
    """The table the diff leads with: one aligned row per operator and kind, with the incidents
    (none without a new failure)."""
    if not failures:
        return []                     # incidents alone: their own list says it all
    rows = [(str(len(fs)), op, kind) for (op, kind), fs in grouped(failures)]
    if incidents:
        rows.append((str(len(incidents)), *INCIDENT))
    w = [max(len(r[i]) for r in rows) for i in range(2)]
    what = "new failures and incidents" if incidents else "new failures"
    return [f"{what} by operator and kind ({len(failures) + len(incidents)}):"] + [
        f"  {n.rjust(w[0])}  {op.ljust(w[1])}  {kind}" for n, op, kind in rows]


def _message(r: Mapping) -> str:
    text = message(r)
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1] + "…"


def lines(failures: Sequence[Tuple[Mapping, Optional[Mapping]]], limit: int, before) -> List[str]:
    """Each group's section: its count, a few of its failures (the key, what it was in BASE, its
    message and reproducer), and how many more. `limit` (report diff's --limit, lines per list) is
    shared out among the groups, each showing at least FEW (at most `limit`).
    `before(r, b)`: what the case was in BASE."""
    out: List[str] = []
    groups = grouped(failures)
    few = min(limit, max(FEW, limit // max(len(groups), 1)))      # `limit` shared out, FEW at least
    for (op, kind), fs in groups:
        out.append(f"new failures, {op} {kind} ({len(fs)}):")
        for r, b in fs[:few]:
            out.append(f"  {r['key']}  ({before(r, b)})")
            if r.get("reason"):
                out.append(f"    {_message(r)}")
            if r.get("reproduce"):
                out.append(f"    reproduce: {r['reproduce']}")
        if len(fs) > few:
            out.append(f"  ... and {len(fs) - few} more")
    return out
