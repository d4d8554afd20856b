"""The elements a verdict names (results.json `worst`, the failure message): each carries its
absolute error, the distance from the window, as well as its ulps. Found by the mutation run: no
test read `Element.abs`, so dropping it from the over elements or from the largest-error element
of a passing judgment went unnoticed."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from suite.judge.judging import judge
from suite.judge.table import load_table
from suite.ops.base import Golden

ROOT = Path(__file__).resolve().parents[1]
TABLE = load_table(ROOT / "cases" / "tolerances.yaml")
F32 = np.dtype(np.float32)


def _judged(got):
    g = np.ones(len(got))
    return judge(np.asarray(got, F32), Golden(g, np.abs(g), 1, None), F32, TABLE.standards["cann"],
                 TABLE.slack_ulps)


def test_an_element_over_the_standard_carries_its_distance_from_the_window() -> None:
    v = _judged([1.0, 1.0, 2.0, 1.0])                  # one element in four, far outside
    assert not v.passed
    (e,) = [e for e in v.elements if e.index == 2]
    assert e.why in ("over", "gross") and e.got == 2.0
    assert e.abs == pytest.approx(2.0 - e.hi, rel=1e-6) and 0.99 < e.abs < 1.0
    assert e.abs == pytest.approx(v.max_abs, rel=1e-12)


def test_the_largest_error_of_a_block_with_nothing_over_carries_its_distance_too() -> None:
    """A block (65,536 elements) with nothing over names its largest error, why '', after the
    over elements of the others: 1e-5 relative is past the window (about nine float32 ulps) yet
    under the share rule's 1e-4; the first block's 2.0 is a gross error that fails the case."""
    got = np.ones((1 << 16) + 4)
    got[0], got[(1 << 16) + 1] = 2.0, 1.0 + 1e-5
    v = _judged(got)
    assert not v.passed
    (e,) = [e for e in v.elements if e.index == (1 << 16) + 1]
    assert e.why == ""
    assert e.abs == pytest.approx(float(np.float32(1.0 + 1e-5)) - e.hi, rel=0.05) and e.abs > 5e-6   # (hi: the window rounded to float32)


def test_judge_does_not_forgive_flushed_partial_sums_unless_told() -> None:
    """`flush` (the vendor's arithmetic flushes float32 subnormals in its partial sums) widens the
    vendor's window of a sum by n float32 tinies; the default, no flush, does not: a sum of 1,000
    terms whose golden and vendor computation are exactly 0 and whose result is 500 tinies fails
    by default and passes with flush."""
    n = 1000
    golden = Golden(np.zeros(1), np.zeros(1), n, None)
    got = np.array([500 * float(np.finfo(np.float32).tiny)], F32)

    def vendor(idx):
        return np.zeros(len(idx)), np.zeros(len(idx)), np.zeros(len(idx))
    std = TABLE.standards["cann"]
    assert not judge(got, golden, F32, std, TABLE.slack_ulps, vendor=vendor).passed
    assert judge(got, golden, F32, std, TABLE.slack_ulps, vendor=vendor, flush=True).passed


# -- the window of a sum whose terms are rounded to a narrower dtype first ----------------------
def _w(nterms: int, terms):
    from suite.judge.judging import window
    one = np.ones(1)
    return window(one, one, nterms, TABLE.slack_ulps, None, None if terms is None else np.dtype(terms))


def test_the_terms_rounding_widens_a_sum_of_two_or_more_and_only_below_float32() -> None:
    """Half an ulp of `terms` per unit of S, and half its smallest subnormal per term: from two
    terms on (one term is elementwise: its rounding is the path's, not the sum's), and only for a
    dtype narrower than float32 (a float32 term is the kernel's own width). Three survivors of
    the mutation run (> 1 as >= 1 and as > 2; the dtype test read as float64's)."""
    import ml_dtypes
    from suite.common import dtypes as D
    assert np.array_equal(_w(1, "float16"), _w(1, None))
    for terms in ("float16", ml_dtypes.bfloat16):
        ti = D.finfo(np.dtype(terms))
        want = _w(2, None) + 2.0 ** -(ti.mant_bits + 1) * 1.0 + 2 * ti.smallest_subnormal / 2
        assert np.array_equal(_w(2, terms), want) and (_w(2, terms) > _w(2, None)).all()
    assert np.array_equal(_w(2, "float32"), _w(2, None))
    assert np.array_equal(_w(1000, "float32"), _w(1000, None))
