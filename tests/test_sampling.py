"""CI's sample of what grows with the operator count (tests/sampling.py): a third of the operators
per test, different tests different thirds, the rest heavy, generic items always."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import sampling
from tests.sampling import SHARE, chosen_operators, in_sample, sampled

ROOT = Path(__file__).resolve().parents[1]

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


class _Item:
    """An item as mark_conformance_sample reads it: a callspec with a case, and its markers."""

    def __init__(self, case) -> None:
        self.callspec = type("CallSpec", (), {"params": {"case": case}})()
        self.marks: list = []

    def add_marker(self, mark) -> None:
        self.marks.append(mark.name)


def test_the_conformance_sample_keeps_a_cases_data_together_and_a_third_of_it() -> None:
    from suite.cases.model import Case
    cases = [Case(id=f"c{i}-{p}", op="MseLoss", product=p, dtypes={}, out_dtype=None, shapes={},
                  out_shape=None, attrs={}, layout="contiguous", values="uniform", expect=0, why="",
                  determinism=False, source="x:1", datakey=f"data-{i}")
             for i in range(600) for p in ("atlas-a2", "atlas-a3")]
    items = [_Item(c) for c in cases] + [_Item("not a case")]
    assert sampling.mark_conformance_sample(items) == 0, "sampled the suite collected alone"
    assert not any(it.marks for it in items)
    items[-1].path = Path(__file__)                 # an item of tests/ beside the suite's
    marked = sampling.mark_conformance_sample(items)
    heavy = {it.callspec.params["case"].datakey for it in items if it.marks}
    light = {it.callspec.params["case"].datakey for it in items[:-1] if not it.marks}
    assert not heavy & light, "one case's data split between the sample and the heavy tier"
    assert 600 / SHARE * 0.8 < len(light) < 600 / SHARE * 1.2
    assert marked == 2 * len(heavy) and items[-1].marks == []
    assert light == {f"data-{i}" for i in range(600) if in_sample(sampling.CONFORMANCE, f"data-{i}")}


def _collected(*args: str) -> int:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "--op", "MseLoss", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    m = re.search(r"(\d+)(?:/(\d+))? tests? collected", out.stdout)
    assert m, out.stdout[-2000:] + out.stderr[-2000:]
    return int(m.group(1))


def test_the_readme_command_samples_the_suite_and_a_run_of_the_suite_alone_runs_every_case() -> None:
    whole = _collected("suite/conformance")
    beside = _collected("tests/test_sampling.py", "suite/conformance", "-k", "not test_sampling")
    everything = _collected("tests/test_sampling.py", "suite/conformance", "-k", "not test_sampling", "-m",
                            "heavy or not heavy")
    left_out = _collected("tests/test_sampling.py", "suite/conformance", "-k", "not test_sampling", "-m", "heavy")
    assert whole > 1000
    assert everything == whole and beside + left_out == whole
    assert whole / SHARE * 0.7 < beside < whole / SHARE * 1.3
    # plain `pytest` at the root: pytest loads tests/conftest.py there too (it loads the conftest.py
    # of every test* folder beside the invocation), and the suite alone still runs whole
    assert _collected() == whole


def test_the_parts_split_every_key_once_and_only_part_0_runs_in_ci() -> None:
    keys = [f"case-{i}" for i in range(900)]
    split = [[k for k in keys if sampling.part_of("test_w", k) == p] for p in range(SHARE)]
    assert sorted(sum(split, [])) == sorted(keys) and all(len(s) > 200 for s in split)
    assert split[0] == [k for k in keys if in_sample("test_w", k)]
    params = sampling.parts()
    assert [p.values[0] for p in params] == list(range(SHARE))
    assert [bool(p.marks) for p in params] == [False] + [True] * (SHARE - 1)
