"""benchmarks/operator_cost.py finds every operator the registry has (by its module's text, so a
past commit needs no import) and counts the non-blank lines of each of its five places."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from suite import ops

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("operator_cost", ROOT / "benchmarks" / "operator_cost.py")
cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cost)


def test_every_registered_operator_is_found_with_its_five_places() -> None:
    rows = cost.table(None)
    assert set(rows) == set(ops.OPERATORS)
    for name, cells in rows.items():
        assert all(isinstance(v, int) and v > 0 for v in cells.values()), (name, cells)


def test_blank_lines_are_not_counted_and_a_missing_file_is_none() -> None:
    assert cost.count("a\n\n  \nb\n# c\n") == 3
    assert cost.count(None) is None
    module, name = next((m, n) for m, n in cost._modules(None) if n == "MseLoss")
    text = (ROOT / "cases" / f"{module}.yaml").read_text()
    assert cost.table(None)[name]["cases"] == sum(1 for line in text.splitlines() if line.strip())


def test_the_families_are_counted_once_apart_from_the_table() -> None:
    """A family's lines are no operator's (cases/families/*.yaml): counted on their own, and at a
    commit before the families there is none."""
    families = sorted((ROOT / "cases" / "families").glob("*.yaml"))
    assert families
    assert cost.shared(None) == {f"cases/families/{p.name}": cost.count(p.read_text()) for p in families}
    assert cost.shared("a33ade6") == {}
