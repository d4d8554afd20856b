"""Run order: the tests (or cases) that share data next to each other, so that data is drawn and
computed once for them (suite/golden/store.py's reuse), with nothing else reordered."""
from __future__ import annotations

from typing import Callable, Dict, Hashable, List, Sequence, TypeVar

T = TypeVar("T")


def grouped(items: Sequence[T], key: Callable[[T], Hashable]) -> List[T]:
    """`items` with those of one key together, at the place of the first of them, each group and
    the groups in their first order (a stable sort on the first position of the key)."""
    first: Dict[Hashable, int] = {}
    return sorted(items, key=lambda item: first.setdefault(key(item), len(first)))
