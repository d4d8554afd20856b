"""A left-out single sample of the class-index losses (issue 42 item 15): a 1-D `self` whose 0-d
target equals ignoreIndex. What docs/operators/NLLLoss.md and NLLLossBackward.md say of it is
held to what the case files draw and what the committed goldens give, so the pages cannot drift
from the cases again (they said "never drawn" and 0, while every such case was drawn, with a NaN
golden under mean)."""
from __future__ import annotations

import math
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from suite.cases.inputs import draw_inputs
from suite.cases.load import load_cases
from suite.cases.model import Kind, kinds_of
from suite.golden.store import GoldenStore

ROOT = Path(__file__).resolve().parents[1]
REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _page(op: str) -> str:
    return re.sub(r"\s+", " ", (ROOT / "docs" / "operators" / f"{op}.md").read_text())


def _single_samples(case_file: str):
    """reduction -> [(left out, out's golden, the other outputs' goldens)] of every numbers case
    with a 1-D self and a 0-d target."""
    cases, _ = load_cases([ROOT / "cases" / case_file])
    store, found = GoldenStore(ROOT / "golden"), defaultdict(list)
    for c in cases:
        s = c.shapes.get("self")
        if s is None or len(s) != 1 or c.shapes.get("target") != () or Kind.NUMBERS not in kinds_of(c):
            continue
        x = draw_inputs(c)
        data = store.load(c)
        found[c.attrs["reduction"]].append(
            (int(x["target"]) == c.attrs["ignoreIndex"], np.asarray(data.golden.out).reshape(-1),
             {n: np.asarray(g.out).reshape(-1) for n, g in data.others.items()}))
    return found


def test_nll_loss_page_says_the_left_out_single_sample_is_drawn_and_what_it_gives():
    text = _page("NLLLoss")
    assert ("**A left-out single sample** (1-D `self`, its 0-d `target` equal to `ignoreIndex`)" in text
            and "`none` and `sum` give 0, `mean` gives NaN (0/0), and `totalWeightOut` 0" in text
            and "The value sets draw it" in text and "a single sample that takes part is not drawn" in text)
    never = text.split("**Values never drawn.**", 1)[1].split("5. ", 1)[0]
    assert "left-out single sample" not in never and "a single sample of a 1-D `self` that takes part" in never
    found = _single_samples("nll_loss.yaml")
    assert sorted(found) == [0, 1, 2]
    for red, rows in found.items():
        assert rows and all(left for left, _, _ in rows), (REDUCTIONS[red], "a single sample takes part")
        for _, out, others in rows:
            assert out.size == 1
            if red == 1:
                assert math.isnan(out[0]), out
            else:
                assert out[0] == 0 and not np.signbit(out[0]), (REDUCTIONS[red], out)
            if red:
                assert others["totalWeightOut"].tolist() == [0.0], others
            else:
                assert "totalWeightOut" not in others


def test_nll_loss_backward_page_says_the_left_out_single_sample_is_drawn_and_all_zeros():
    text = _page("NLLLossBackward")
    assert ("A left-out single sample (1-D `self`, its 0-d `target` equal to `ignoreIndex`) is such a case: "
            "`out` is all zeros. The value sets draw it" in text)
    found = _single_samples("nll_loss_backward.yaml")
    assert sorted(found) == [0, 1, 2]
    for red, rows in found.items():
        assert rows and all(left for left, _, _ in rows), (REDUCTIONS[red], "a single sample takes part")
        assert all(out.size and not out.any() and not np.signbit(out).any() for _, out, _ in rows), REDUCTIONS[red]
