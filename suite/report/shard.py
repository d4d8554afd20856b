"""Sharding: split a run's cases into N deterministic, balanced parts.

Every case id of the case files is ranked by sha256(id) and dealt round-robin: shard sizes differ by
at most one, a case's shard depends only on the case files (never on -k, --product or the backend),
and the numbers/determinism/rejection tests of one case land in the same shard."""
from __future__ import annotations

import hashlib
import re
from typing import Dict, Iterable, Tuple


MAX_SHARDS = 100_000            # far past any CI; `report merge` lists the missing ones from 1 to N
# Two decimal integers and a slash, nothing else: no spaces, no '+', no '_' (which int() would take),
# no digits of other scripts. A minus sign is read, so that -1/3 is told the range rather than the form.
_SPEC = re.compile(r"(-?[0-9]{1,12})/(-?[0-9]{1,12})")


class ShardError(ValueError):
    pass


def parse(spec: str) -> Tuple[int, int]:
    """'K/N' -> (K, N), 1 <= K <= N <= MAX_SHARDS."""
    m = _SPEC.fullmatch(spec)
    if m is None:
        raise ShardError(f"--shard {spec!r}: write K/N, e.g. 2/4")
    k, n = int(m[1]), int(m[2])
    if not 1 <= k <= n <= MAX_SHARDS:
        raise ShardError(f"--shard {spec!r}: need 1 <= K <= N <= {MAX_SHARDS}")
    return k, n


def _rank(case_id: str) -> bytes:
    return hashlib.sha256(case_id.encode()).digest()


def assign(case_ids: Iterable[str], n: int) -> Dict[str, int]:
    """case id -> shard number (1-based)."""
    ordered = sorted(set(case_ids), key=lambda c: (_rank(c), c))
    return {c: i % n + 1 for i, c in enumerate(ordered)}
