"""CI's sample of what grows with the operator count (tests/sampling.py): a third of the operators
per test, different tests different thirds, the rest heavy, generic items always."""
from __future__ import annotations

import pytest

from tests.sampling import SHARE, chosen_operators, in_sample, sampled

NAMES = [f"Op{i:02d}" for i in range(20)]


def test_a_test_takes_one_operator_in_share_and_the_choice_is_fixed_by_names() -> None:
    picked = chosen_operators("test_x", NAMES)
    assert len(picked) in (len(NAMES) // SHARE, -(-len(NAMES) // SHARE))
    assert picked == chosen_operators("test_x", list(reversed(NAMES))), "depends on the order given"
    assert set(picked) <= set(NAMES)


def test_every_offset_occurs_so_each_operator_runs_in_some_test() -> None:
    seen = set()
    for i in range(50):
        seen.update(chosen_operators(f"test_{i}", NAMES))
    assert seen == set(NAMES)


def test_one_operator_is_always_chosen_and_none_gives_none() -> None:
    for i in range(10):
        assert chosen_operators(f"test_{i}", ["Only"]) == ["Only"]
        assert len(chosen_operators(f"test_{i}", ["A", "B"])) == 1
    assert chosen_operators("test_x", []) == []


def test_sampled_marks_the_others_heavy_and_keeps_generic_items() -> None:
    items = [("generic", None)] + [(f"{n}-{k}", n) for n in NAMES for k in range(2)]
    params = sampled("test_y", items, operator_of=lambda it: it[1], ids=lambda it: it[0])
    heavy = {p.values[0][0] for p in params if any(m.name == "heavy" for m in p.marks)}
    light = {p.values[0][0] for p in params} - heavy
    chosen = set(chosen_operators("test_y", NAMES))
    assert "generic" in light
    assert light == {"generic"} | {f"{n}-{k}" for n in chosen for k in range(2)}
    assert heavy and all(p.id == p.values[0][0] for p in params)


@pytest.mark.parametrize("share", [2, 3, 5])
def test_in_sample_keeps_about_one_in_share(share: int) -> None:
    kept = sum(in_sample("test_z", f"case-{i}", share) for i in range(3000))
    assert 3000 / share * 0.85 < kept < 3000 / share * 1.15
    assert in_sample("test_z", "case-1", share) == in_sample("test_z", "case-1", share)
