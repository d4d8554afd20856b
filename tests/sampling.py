"""What grows with the operator count runs a sample in CI and all of it in the heavy tier (issue 46:
`.ci/run` stays under 15 minutes as the loss folder's operators arrive).

An item is keyed by the operator it belongs to. Each test takes a share of the operators, 1 in
`SHARE`: the operators in name order, the test's offset fixed by its name's digest, so different
tests sample different operators and, over the tests that sample, every operator runs in CI. The
items a test leaves out carry `pytest.mark.heavy` (tests/conftest.py deselects them unless a `-m`
expression is given; `-m heavy` runs exactly what the sample left out, `-m "heavy or not heavy"`
everything). Items not keyed by an operator (the generic ones) always run. The choice depends on
names alone, never on the date, the machine or an order: a CI run is reproducible.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Sequence, TypeVar

import pytest

from suite import ops

T = TypeVar("T")
# One operator in SHARE, per sampled test.
SHARE = 3


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def chosen_operators(test: str, names: Optional[Sequence[str]] = None, share: int = SHARE) -> List[str]:
    """The operators `test` runs in CI: every `share`-th of them in name order (at least one),
    starting at an offset the test's name fixes."""
    names = sorted(ops.OPERATORS if names is None else names)
    if not names:
        return []
    offset = _digest(test) % share
    picked = [n for i, n in enumerate(names) if (i + offset) % share == 0]
    return picked or [names[offset % len(names)]]


def part_of(test: str, key: str, share: int = SHARE) -> int:
    """Which of `share` parts the item `key` (not an operator: a case, a golden) of `test` falls
    in, by the digest of the two names: part 0 is CI's sample, the others the heavy tier's."""
    return _digest(f"{test}\0{key}") % share


def in_sample(test: str, key: str, share: int = SHARE) -> bool:
    """Whether the item `key` of `test` is in its CI sample: 1 in `share` (part 0)."""
    return part_of(test, key, share) == 0


def parts(share: int = SHARE) -> list:
    """A test's `part` parameter: part 0 runs in CI, the others carry `heavy`."""
    return [pytest.param(k, id=f"part{k}of{share}", marks=[] if k == 0 else [pytest.mark.heavy])
            for k in range(share)]


def sampled(test: str, items: Iterable[T], operator_of: Callable[[T], Optional[str]],
            ids: Optional[Callable[[T], str]] = None, share: int = SHARE) -> list:
    """`items` as pytest params, those of an operator outside the test's chosen ones (among the
    operators the items have) marked heavy (`operator_of` gives None for a generic item, which
    always runs)."""
    items = list(items)
    chosen = set(chosen_operators(test, {operator_of(it) for it in items} - {None}, share=share))
    out = []
    for it in items:
        op = operator_of(it)
        marks = [pytest.mark.heavy] if op is not None and op not in chosen else []
        out.append(pytest.param(it, marks=marks, id=ids(it) if ids else None))
    return out


# The key of the conformance suite's sample (a case's datakey is drawn under it).
CONFORMANCE = "suite/conformance"


def mark_conformance_sample(items: list) -> int:
    """Mark heavy the conformance suite's items (suite/conformance, collected beside tests/ by the
    README's test command) whose case is outside CI's sample: 1 in SHARE of the cases' data, by a
    digest of the datakey, so every operator and every kind of case runs in CI, the tests of one
    case's data (its products, layouts, its determinism test) stay in or out together, and each
    run samples the same cases. Only where items of tests/ were collected too: a run of the suite
    alone runs every case. Returns how many it marked."""
    from suite.cases.model import Case
    here = Path(__file__).resolve().parent
    paths = {getattr(i, "path", None) for i in items} - {None}
    if not any(here in Path(p).resolve().parents for p in paths):
        # Only the conformance suite collected: tests/conftest.py was loaded all the same (pytest
        # loads the conftest.py of each test* folder in the folder it starts in: plain `pytest`).
        return 0
    marked = 0
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("case") if callspec is not None else None
        if isinstance(case, Case) and not in_sample(CONFORMANCE, case.datakey):
            item.add_marker(pytest.mark.heavy)
            marked += 1
    return marked
