"""The goldens committed with the case files are complete, intact and current: the same check as
`aclnn-conform golden check`, which CI relies on after every edit of cases/."""
from pathlib import Path

import pytest

from suite.cases import load as cases
from suite.golden import build as golden
from tests.sampling import in_sample

ROOT = Path(__file__).resolve().parent.parent


def test_committed_goldens_are_current():
    """Every golden's manifest entry, file and spec; a third of them drawn and computed again
    (tests/sampling.py: recomputing all of them grows with the operator count)."""
    all_cases, _ = cases.load_cases([ROOT / "cases"])
    sample = lambda key: in_sample("test_committed_goldens_are_current", key)  # noqa: E731
    problems = golden.check(all_cases, ROOT / "golden", recompute=sample)
    assert problems == [], "\n".join(problems[:20])


@pytest.mark.heavy
def test_every_committed_golden_is_computed_again_the_same():
    all_cases, _ = cases.load_cases([ROOT / "cases"])
    problems = golden.check(all_cases, ROOT / "golden")
    assert problems == [], "\n".join(problems[:20])


# A clone stays quick: each operator's committed goldens (its small cases; the scale sets are
# computed on demand) fit 7 MB, the largest today (KlDivBackward) 6.1 MB, new operators about
# 0.4 to 0.9 MB; all of golden/, the manifest included, fits 50 MB, issue 46's budget for the
# whole loss folder (20.4 MB with eight operators, 24.2 MB with twelve).
PER_OPERATOR = 7e6
TOTAL = 50e6


def test_committed_goldens_stay_small():
    root = ROOT / "golden"
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert 0 < size < TOTAL, f"golden/ is {size / 1e6:.1f} MB; the budget is {TOTAL / 1e6:.0f} MB (and it holds something)"
    for folder in sorted(d for d in root.iterdir() if d.is_dir()):
        mine = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        assert mine < PER_OPERATOR, (f"golden/{folder.name} is {mine / 1e6:.1f} MB; an operator's budget is "
                                     f"{PER_OPERATOR / 1e6:.0f} MB: move value sets or shapes to the scale tier")
