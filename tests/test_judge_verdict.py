"""The rest of the Verdict: judging block by block is judging at once (counts, sums, maxima and the
worst elements carried across blocks), the worst elements a failure names (how many, in which
order, with which numbers), `window()` as a function, the standard given as a GoldenSource, and
judging that warns about nothing. Synthetic arrays only."""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from suite.golden.source import GoldenSource, Materialized
from suite.ops.base import Golden
from suite.judge.judging import GROSS, SUM_LAMBDA, gross_limit, judge, window
from suite.judge.table import Standard, load_table
from tests.core_helpers import approx_metrics

ROOT = Path(__file__).resolve().parents[1]
TABLE = load_table(ROOT / "cases" / "tolerances.yaml")
SLACK = TABLE.slack_ulps
F16, F32, BF16 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)
INF, NAN = math.inf, math.nan
U, SUB = 2.0 ** -24, 2.0 ** -149


def _mixed(n: int = 997, seed: int = 3):
    """A float16 result with a bit of everything, spread so that some blocks hold nothing but
    correct elements: matched NaN/inf, an expected overflow, flushed subnormals, a few elements
    over (1 to 6 ulps), a gross one, a NaN and a wrong infinity."""
    rng = np.random.default_rng(seed)
    g = rng.uniform(-4, 4, n)
    got = g.astype(F16)
    g[[10, 11, 12, 13]] = [NAN, INF, -INF, 1e6]
    got[[10, 11, 12, 13]] = [NAN, INF, -INF, INF]
    g[[20, 21]] = [3e-6, -4e-6]
    got[[20, 21]] = [0.0, -0.0]
    for i, k in zip([500, 510, 520, 530, 540, 550], [1, 6, 2, 5, 3, 4]):
        got[i] = got[i] + np.float16(k) * np.spacing(got[i])           # k ulps off
    got[700] = -got[700]                                               # gross
    got[800], got[900] = NAN, -INF                                     # mismatches
    return g, got


@pytest.mark.parametrize("std", sorted(TABLE.standards))
@pytest.mark.parametrize("block", [1, 3, 7, 100, 997, 1 << 16])
def test_judging_in_blocks_is_judging_at_once(std: str, block: int) -> None:
    g, got = _mixed()
    s = TABLE.standards[std]
    whole = judge(got, Golden(g, np.abs(g)), F16, s, SLACK, block=1 << 20)
    v = judge(got, Golden(g, np.abs(g)), F16, s, SLACK, block=block)
    assert v.metrics() == approx_metrics(whole.metrics(), rel=1e-12)
    assert (v.passed, v.why) == (whole.passed, whole.why)
    # the elements flagged are the same; a block with none flagged adds its largest error (why ''),
    # which the kit's standards, forgiving 530's error, leave to see
    flagged = lambda w: [e for e in w.elements if e.why]  # noqa: E731
    assert repr(flagged(v)) == repr(flagged(whole))            # (repr: a NaN equals itself)
    if std in ("cann", "msprobe-abs", "msprobe-ulp", "strict", "torch"):
        assert v.worst == whole.worst and repr(v.elements) == repr(whole.elements)
    assert (whole.n, whole.mismatches, whole.n_gross) == (997, 2, 1) and not whole.passed
    assert whole.worst[:2] == [800, 900] and whole.worst[2] == 700


def test_the_worst_elements_in_order() -> None:
    """At most `worst` (5) elements: mismatches first, then gross errors, then the rest over, each
    group by ulp error, largest first, ties by index; each with its numbers."""
    g, got = _mixed()
    v = judge(got, Golden(g, np.abs(g)), F16, TABLE.standards["strict"], SLACK)
    assert [(e.index, e.why) for e in v.elements] == [(800, "mismatch"), (900, "mismatch"), (700, "gross"),
                                                     (510, "over"), (530, "over")]
    assert v.worst == [800, 900, 700, 510, 530]
    e = v.elements[3]
    assert (e.got, e.golden) == (float(got[510]), g[510])
    assert (e.lo, e.hi) == (float(g[510].astype(F16)), float(g[510].astype(F16)))     # a one-value window
    w = 9 * U * abs(g[510]) + 9 * SUB
    ulp = float(np.spacing(np.abs(g[510].astype(F16))))
    assert e.ulp == pytest.approx((abs(float(got[510]) - g[510]) - w) / ulp, rel=1e-12)
    m = v.elements[0]
    r = float(g[800].astype(F16))
    assert math.isnan(m.got) and (m.index, m.golden, m.lo, m.hi, m.ulp, m.why) == (800, g[800], r, r, INF, "mismatch")
    for keep in (1, 3, 8, 20):
        k = judge(got, Golden(g, np.abs(g)), F16, TABLE.standards["strict"], SLACK, worst=keep)
        assert k.worst == [800, 900, 700, 510, 530, 550, 540, 520, 500][:keep]
        assert [e.why for e in k.elements] == (["mismatch"] * 2 + ["gross"] + ["over"] * 6)[:keep]


def test_ties_go_by_index_and_blocks_do_not_matter() -> None:
    g = np.full(40, 1.5)
    got = g.astype(F16)
    for i in (3, 17, 25, 39, 8, 30, 21):
        got[i] = np.float16(1.5 + 2 * 2.0 ** -10)                  # seven elements, 2 ulps each
    got[12] = np.float16(1.5 + 3 * 2.0 ** -10)
    for block in (1, 4, 40):
        v = judge(got, Golden(g, np.abs(g)), F16, TABLE.standards["strict"], SLACK, block=block)
        assert v.worst == [12, 3, 8, 17, 21], block


@pytest.mark.parametrize("block", [1, 7, 1 << 16])
def test_among_many_equal_errors_the_first_are_named(block: int) -> None:
    """800 elements 2 ulps off, the same error each: the message names the first five (numpy's
    partial sort picked arbitrary ones among ties: the last five, here)."""
    g = np.full(5000, 1.5)
    got = g.astype(F16)
    bad = np.sort(np.random.default_rng(0).choice(5000, 800, replace=False))
    got[bad] = np.float16(1.5 + 2 * 2.0 ** -10)
    got[bad[400]] = np.float16(1.5 + 3 * 2.0 ** -10)                  # one larger: named first
    v = judge(got, Golden(g, np.abs(g)), F16, TABLE.standards["strict"], SLACK, block=block)
    assert v.worst == [bad[400], *bad[:4]], (v.worst, bad[:5])
    v = judge(got, Golden(g, np.abs(g)), F16, TABLE.standards["strict"], SLACK, block=block, worst=40)
    assert v.worst == [bad[400], *bad[:39]]


def test_a_failure_with_nothing_over_names_the_largest_error() -> None:
    """A share rule of threshold 0 fails even a perfect result (the share 0 is not below 0): the
    message then names the element with the largest error, with an empty `why`."""
    zero = Standard("zero", "share", {"threshold": {"float16": 0.0}})
    g = np.array([1.0, 1.0 + 2 ** -12, 2.0, 1.0 + 3 * 2 ** -13])      # off the grid by 1/4 and 3/8 ulp
    v = judge(g.astype(F16), Golden(g, np.abs(g)), F16, zero, SLACK)
    assert (v.passed, v.n_over, v.why) == (False, 0, "0.0000% of elements have relative error > 0 (limit: below that share)")
    assert [(e.index, e.why) for e in v.elements] == [(3, "")] and v.worst == [3]
    assert v.elements[0].ulp == pytest.approx((3 / 8 * 2 ** -10 - 9 * U * g[3] - 9 * SUB) / 2 ** -10, rel=1e-12)
    # in blocks: each block's largest error is a candidate, and the largest of them is named
    v = judge(g.astype(F16), Golden(g, np.abs(g)), F16, zero, SLACK, block=1)
    assert [(e.index, e.why) for e in v.elements] == [(3, ""), (1, ""), (0, ""), (2, "")]


def test_over_before_a_larger_error_that_is_not_over() -> None:
    """msprobe-abs forgives 60 ulps at a golden below small_value; a 2-ulp error above it is over:
    the one over is named first, the larger forgiven error after it."""
    g = np.array([2.0 ** -12, 1.5])
    got = np.array([2.0 ** -12 + 60 * 2.0 ** -22, 1.5 + 2 * 2.0 ** -10]).astype(F16)
    for block in (1, 2):
        v = judge(got, Golden(g, np.abs(g)), F16, TABLE.standards["msprobe-abs"], SLACK, block=block)
        assert not v.passed and v.n_over == 1
        assert [(e.index, e.why) for e in v.elements] == ([(1, "over"), (0, "")] if block == 1 else [(1, "over")])


# -- window() ------------------------------------------------------------------------------------
def test_window_elementwise_and_sums() -> None:
    g = np.array([1.5, -3.0, 0.0])
    assert np.array_equal(window(g, np.abs(g), 1, 8.0), U * 9 * np.abs(g) + 9 * SUB)
    assert np.array_equal(window(g, np.abs(g), 1, 0.0), U * np.abs(g) + SUB)
    s, p = np.array([10.0, 10.0, 10.0]), np.array([20.0, 1e9, 0.0])
    n = 100
    want = U * (8 * s + np.minimum(n * s, p + SUM_LAMBDA * (10 * np.abs(g) + s))) + (8 + n) * SUB
    assert np.array_equal(window(g, s, n, 8.0, p), want)
    # no partial sums given: P counts as 0
    assert np.array_equal(window(g, s, n, 8.0), U * (8 * s + np.minimum(n * s, SUM_LAMBDA * (10 * np.abs(g) + s)))
                          + (8 + n) * SUB)
    assert SUM_LAMBDA == 16.0 and GROSS == 0.25


def test_window_of_non_finite_numbers() -> None:
    """A NaN or infinite golden, S or P counts as 0 in the window (a NaN or infinite golden's
    window is then itself: lo = hi = the golden)."""
    g = np.array([NAN, INF, 1.0, 1.0])
    s = np.array([NAN, INF, INF, 2.0])
    p = np.array([1.0, 1.0, 1.0, NAN])
    assert np.array_equal(window(g, s, 1, 8.0), [9 * SUB, 9 * SUB, 9 * SUB, U * 18 + 9 * SUB])
    n = 4
    want = [U * (0 + min(0, 1 + 0)) + 12 * SUB, U * (0 + min(0, 1 + 0)) + 12 * SUB,
            U * (0 + min(0, 1 + 16 * 2)) + 12 * SUB, U * (8 * 2 + min(n * 2, 0 + 16 * (2 + 2))) + 12 * SUB]
    assert np.array_equal(window(g, s, n, 8.0, p), want)


# -- gross_limit, the golden as a source, warnings ------------------------------------------------
def test_gross_limit_is_the_standards_own_or_the_default() -> None:
    own = Standard("own", "exact", {"gross": {"float16": 0.5}})
    assert gross_limit(own, "float16") == 0.5 and gross_limit(own, "float32") == GROSS
    assert gross_limit(TABLE.standards["cann"], "bfloat16") == 0.25


class _Odd(GoldenSource):
    """A golden read in blocks of its own choosing (5, whatever the judge asks)."""

    def __init__(self, g: np.ndarray) -> None:
        self.g, self.shape, self.nterms = g, g.shape, 1

    def blocks(self, limit: int = 0):
        for i in range(0, self.g.size, 5):
            b = self.g[i:i + 5]
            yield i, b, np.abs(b), np.abs(b)


def test_a_golden_source_is_read_as_it_gives_its_blocks() -> None:
    g, got = _mixed()
    for std in TABLE.standards.values():
        a = judge(got, _Odd(g), F16, std, SLACK)
        b = judge(got, Golden(g, np.abs(g)), F16, std, SLACK)
        c = judge(got, Materialized(Golden(g, np.abs(g))), F16, std, SLACK)
        assert a.metrics() == approx_metrics(b.metrics(), rel=1e-12) and b.metrics() == c.metrics()
        assert (a.passed, a.why) == (b.passed, b.why) == (c.passed, c.why)
        flagged = [[e.index for e in v.elements if e.why] for v in (a, b, c)]
        assert flagged[0] == flagged[1] == flagged[2] and b.worst == c.worst      # (blocks: see above)


def test_a_golden_of_any_shape_is_judged_flat() -> None:
    g = np.arange(1.0, 25.0).reshape(2, 3, 4)
    got = g.astype(F16)
    got[1, 2, 3] = 100.0
    v = judge(got, Golden(g, np.abs(g)), F16, TABLE.standards["strict"], SLACK)
    assert (v.n, v.worst) == (24, [23])
    v = judge(got.T, Golden(g.T, np.abs(g.T)), F16, TABLE.standards["strict"], SLACK)      # not contiguous
    assert (v.n, v.worst) == (24, [23])


@pytest.mark.parametrize("std", sorted(TABLE.standards))
@pytest.mark.parametrize("dt", [F16, BF16, F32])
def test_judging_warns_about_nothing(std: str, dt: np.dtype) -> None:
    """NaN, infinities, zeros and overflow in both places, judged with every warning an error:
    judging keeps numpy quiet (inf - inf, 0/0 and overflow are expected there)."""
    pool = np.array([NAN, INF, -INF, 0.0, 1.0, 3e-6, 1e39, -1e39, 1e-45])
    g = np.repeat(pool, pool.size)
    x = np.tile(pool, pool.size)
    with np.errstate(all="ignore"):
        got = x.astype(np.float32).astype(dt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="warn"):
            v = judge(got, Golden(g, np.abs(g)), dt, TABLE.standards[std], SLACK)
    assert not v.passed and v.mismatches > 0


# -- what a rule is handed ------------------------------------------------------------------------
def _capture(every_element: bool):
    """A rule that flags nothing and keeps what it was handed."""
    from suite.judge.rules import Rule
    seen = []
    rule = Rule((), lambda e, p: (seen.append(e), np.zeros(e.abs.shape, dtype=bool))[1],
                lambda t, p, s: (t.n_rule == 0, f"{t.n_rule} flagged"), every_element=every_element)
    return rule, seen


def test_a_rule_is_handed_the_excess_of_the_elements_outside_the_window(monkeypatch) -> None:
    from suite.judge import rules as T
    rule, seen = _capture(False)
    monkeypatch.setitem(T.RULES, "capture", rule)
    std = Standard("capture", "capture", {})
    mx = 65504.0
    edge = (mx + 16.0) * (1 - 2.0 ** -27)               # window [max, inf]
    g = np.array([1.5, NAN, INF, 1.0, 0.0, 1.5, 2.0, edge, edge, -INF, 1e6])
    x = np.array([1.5, NAN, INF, 1.0 + 2 ** -9, 2.0 ** -24, NAN, -2.0, INF, 60000.0, INF, mx])
    v = judge(x.astype(F16), Golden(g, np.abs(g)), F16, std, SLACK)
    assert (v.n, v.mismatches, v.n_gross) == (11, 3, 1)
    [e] = seen
    # the elements outside the window or not finite, in order: NaN, inf, 1+2^-9, 2^-24, NaN for
    # 1.5, -2 for 2, inf at the range's edge, 60000 there, inf for -inf, max past the range
    np.testing.assert_array_equal(e.golden, g[1:])
    excess = [0.0, 0.0, 2 ** -9, 2 ** -24, INF, 4.0, 0.0, mx - 60000.0, INF, INF]
    np.testing.assert_array_equal(e.abs, excess)
    tiny = 2.0 ** -14
    np.testing.assert_array_equal(e.ref, [tiny, tiny, 1.0, tiny, 1.5, 2.0, edge, edge, tiny, 1e6])
    np.testing.assert_array_equal(e.rel, [0.0, 0.0, 2 ** -9, 2 ** -24 / tiny, INF, 2.0, 0.0, (mx - 60000) / mx, INF,
                                          INF])
    w = lambda gg: 9 * U * abs(gg) + 9 * SUB  # noqa: E731
    want_ulp = [0.0, 0.0, (2 ** -9 - w(1.0)) / 2 ** -10, (2 ** -24 - 9 * SUB) / 2 ** -24, INF,
                (4 - w(2.0)) / 2 ** -9, 0.0, (edge - w(edge) - 60000) / 32, INF, INF]
    np.testing.assert_allclose(e.ulp, want_ulp, rtol=1e-12)


def test_an_every_element_rule_is_handed_every_element(monkeypatch) -> None:
    from suite.judge import rules as T
    rule, seen = _capture(True)
    monkeypatch.setitem(T.RULES, "capture", rule)
    std = Standard("capture", "capture", {})
    g = np.array([1.5, NAN, 1.0, 0.0, 0.0, 1.5, 3e-6])
    x = np.array([1.5, NAN, 1.0 + 2 ** -9, 0.0, 2.0 ** -24, -1.5, 0.0])
    v = judge(x.astype(F16), Golden(g, np.abs(g)), F16, std, SLACK)
    [e] = seen
    np.testing.assert_array_equal(e.golden, g)
    w1 = 9 * U + 9 * SUB
    err = [0.0, 0.0, 2 ** -9 - w1, 0.0, 2 ** -24 - 9 * SUB, 3 - (9 * U * 1.5 + 9 * SUB), 0.0]
    np.testing.assert_allclose(e.abs, err, rtol=1e-12, atol=0)
    tiny = 2.0 ** -14
    np.testing.assert_array_equal(e.ref, [1.5, tiny, 1.0, tiny, tiny, 1.5, 3e-6])
    np.testing.assert_allclose(e.rel, [0.0, 0.0, 2 ** -9 - w1, 0.0, INF, err[5] / 1.5, 0.0], rtol=1e-12, atol=0)
    # a rule that flags nothing: the gross element (-1.5 for 1.5) is still over, and named alone
    assert (v.passed, v.n_over, v.n_gross, v.worst) == (False, 1, 1, [5])
    assert [x.why for x in v.elements] == ["gross"]
    assert v.why.endswith("0 flagged")


def test_an_every_element_rule_counts_a_mismatch_and_names_only_what_it_flags(monkeypatch) -> None:
    """msprobe-ulp float32 (32 ulps): of an element 5 ulps beyond the window and one 40 ulps
    beyond, only the second is over; a NaN is a mismatch, named once."""
    g = np.full(100, 1.5)
    got = g.astype(F32)
    got[10] = np.float32(1.5 + (7 + 5) * 2.0 ** -23)
    got[20] = np.float32(1.5 + (7 + 40) * 2.0 ** -23)
    got[30] = np.nan
    v = judge(got, Golden(g, np.abs(g)), F32, TABLE.standards["msprobe-ulp"], SLACK)
    assert [(e.index, e.why) for e in v.elements] == [(30, "mismatch"), (20, "over")]
    assert (v.n_over, v.mismatches) == (2, 1)
    assert v.why.startswith("1 elements differ in NaN/inf") and "2.0000% of elements are over 32 ulp" in v.why


def test_gross_is_named_before_a_larger_ulp_error_that_is_not_gross() -> None:
    """Gross is relative: 5.1 for 4 (27.5%, 282 ulps) is gross, 1240 for 1000 (24%, 480 ulps) is
    not; the gross one is named first all the same."""
    g = np.array([4.0, 1000.0])
    v = judge(np.array([5.1, 1240.0]).astype(F16), Golden(g, np.abs(g)), F16, TABLE.standards["strict"], SLACK)
    assert [(e.index, e.why) for e in v.elements] == [(0, "gross"), (1, "over")]
    assert v.elements[0].ulp < v.elements[1].ulp


def test_the_element_named_when_nothing_is_over() -> None:
    zero = Standard("zero", "share", {"threshold": {"float16": 0.0}})
    g = np.array([1.0, 1.0 + 3 * 2 ** -13])
    v = judge(g.astype(F16), Golden(g, np.abs(g)), F16, zero, SLACK)
    [e] = v.elements
    assert (e.index, e.got, e.golden, e.lo, e.hi, e.why) == (1, 1.0, g[1], 1.0, 1.0, "")     # 3/8 ulp off


# -- msprobe-abs around zero and one ----------------------------------------------------------------
def test_abs_rel_relative_error_is_over_the_golden_or_the_smallest_normal() -> None:
    std = TABLE.standards["msprobe-abs"]
    g = np.array([1.0])
    assert judge(np.array([1.0 + 2 ** -10], F16), Golden(g, g), F16, std, SLACK).passed      # 2^-10 <= rtol
    assert not judge(np.array([1.0 + 2 ** -9], F16), Golden(g, g), F16, std, SLACK).passed
    # small_value 0: a zero golden takes the rtol branch, relative to the smallest normal
    nosmall = Standard("nosmall", "abs_rel", {**std.params, "small_value": {"float16": 0.0}})
    z = np.array([0.0])
    assert judge(np.array([2.0 ** -24], F16), Golden(z, z), F16, nosmall, SLACK).passed     # 2^-24/2^-14
    v = judge(np.array([2.0 ** -23], F16), Golden(z, z), F16, nosmall, SLACK)
    assert not v.passed and v.n_over == 1


# -- the window's terms ---------------------------------------------------------------------------
def test_window_of_0_1_and_2_terms() -> None:
    g, s = np.array([1.5]), np.array([3.0])
    one = U * 9 * 3.0 + 9 * SUB
    assert window(g, s, 0, 8.0)[0] == U * 9 * 3.0 + 8 * SUB         # (no terms: elementwise)
    assert window(g, s, 1, 8.0)[0] == one
    assert window(g, s, 2, 8.0, np.array([100.0]))[0] == U * (8 * 3.0 + 2 * 3.0) + 10 * SUB


def test_window_of_a_long_sum_with_non_finite_numbers() -> None:
    n = 10 ** 6                                                    # the partial-sums budget
    g = np.array([NAN, 1.0, 1.0])
    s = np.array([2.0, 2.0, 2.0])
    p = np.array([0.0, NAN, 5.0])
    want = [U * (16 + 16 * 2.0) + (8 + n) * SUB, U * (16 + 16 * (1000 + 2.0)) + (8 + n) * SUB,
            U * (16 + 5 + 16 * (1000 + 2.0)) + (8 + n) * SUB]
    assert np.array_equal(window(g, s, n, 8.0, p), want)
