"""The goldens committed with the case files are complete, intact and current: the same check as
`aclnn-conform golden check`, which CI relies on after every edit of cases/."""
from pathlib import Path

from suite.cases import load as cases
from suite.golden import build as golden

ROOT = Path(__file__).resolve().parent.parent


def test_committed_goldens_are_current():
    all_cases, _ = cases.load_cases([ROOT / "cases"])
    problems = golden.check(all_cases, ROOT / "golden")
    assert problems == [], "\n".join(problems[:20])


def test_committed_goldens_stay_small():
    size = sum(p.stat().st_size for p in (ROOT / "golden").rglob("*") if p.is_file())
    assert 0 < size < 20e6, f"golden/ is {size / 1e6:.1f} MB; the budget is 20 MB (and it holds something)"
