"""Every comparison rule of cases/tolerances.yaml on hand-made arrays whose right answer is known:
specials, range, subnormals, correct rounding, ulp shares, the float32 slack window, the
condition-aware budget for sums, allclose boundaries and the Verdict's metrics (the table's
loader: tests/test_judge_table.py)."""
from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from suite.ops.base import Golden
from suite.judge.judging import Verdict, judge
from suite.judge.table import load_table

ROOT = Path(__file__).resolve().parents[1]
TABLE = load_table(ROOT / "cases" / "tolerances.yaml")
STANDARDS = sorted(TABLE.standards)
F16, F32, BF16 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)
DTYPES = {"float16": F16, "bfloat16": BF16, "float32": F32}


def run(got, golden, dt, std: str, scale=None, nterms: int = 1) -> Verdict:
    g = np.asarray(golden, dtype=np.float64)
    sc = np.abs(g) if scale is None else np.asarray(scale, dtype=np.float64)
    with np.errstate(all="ignore"):
        arr = np.asarray(np.asarray(got, dtype=np.float64).astype(np.float32) if dt == BF16 else got).astype(dt)
    return judge(arr, Golden(g, sc, nterms), dt, TABLE.standards[std], TABLE.slack_ulps)


# -- NaN, inf, range, subnormals ---------------------------------------------------------------
@pytest.mark.parametrize("std", STANDARDS)
@pytest.mark.parametrize("dt", DTYPES)
def test_nan_and_inf_must_match(std: str, dt: str) -> None:
    d = DTYPES[dt]
    g = [1.0, np.nan, np.inf, -np.inf]
    assert run(g, g, d, std).passed
    for bad in ([1.0, 1.0, np.inf, -np.inf],       # NaN expected, number got
                [np.nan, np.nan, np.inf, -np.inf],  # number expected, NaN got
                [1.0, np.nan, -np.inf, -np.inf],    # inf of the wrong sign
                [1.0, np.nan, np.inf, np.nan]):     # NaN for inf
        v = run(bad, g, d, std)
        assert not v.passed and v.mismatches == 1, (bad, v.why)


@pytest.mark.parametrize("std", STANDARDS)
def test_golden_beyond_float16_range_expects_inf(std: str) -> None:
    g = [1e5, -7e4, 65519.0]                      # 65519 still rounds to 65504
    assert run([np.inf, -np.inf, 65504.0], g, F16, std).passed
    v = run([65504.0, -np.inf, 65504.0], g, F16, std)           # saturating instead of inf
    assert not v.passed and v.mismatches == 1 and v.worst[0] == 0
    assert not run([np.inf, -np.inf, np.inf], g, F16, std).passed


@pytest.mark.parametrize("std", STANDARDS)
@pytest.mark.parametrize("dt,sub", [("float16", 3e-6), ("bfloat16", 1e-39), ("float32", 1e-40)])
def test_subnormal_may_flush_to_zero_but_normal_may_not(std: str, dt: str, sub: float) -> None:
    d = DTYPES[dt]
    assert run([0.0, -0.0], [sub, -sub], d, std).passed
    assert run([sub, -sub], [sub, -sub], d, std).passed
    assert not run([0.0], [1e-3], d, std).passed
    smallest_normal = float(ml_dtypes.finfo(d).tiny)
    if TABLE.standards[std].rule not in ("allclose", "abs_rel"):   # those forgive atol in absolute terms
        assert not run([0.0], [4 * smallest_normal], d, std).passed


# -- correct rounding and small errors ---------------------------------------------------------
def _golden(n: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-4, 4, n) * np.exp2(rng.integers(-6, 6, n))


def _correct(g: np.ndarray, d: np.dtype) -> np.ndarray:
    """Correct rounding, independently of the suite: numpy rounds float64 correctly to float16 and
    float32; for bfloat16 the golden is made float32-exact first, so one rounding remains."""
    return g.astype(np.float32).astype(d) if d == BF16 else g.astype(d)


@pytest.mark.parametrize("std", STANDARDS)
@pytest.mark.parametrize("dt", DTYPES)
def test_correctly_rounded_results_pass_every_standard(std: str, dt: str) -> None:
    d = DTYPES[dt]
    g = _golden(2000)
    if d == BF16:
        g = g.astype(np.float32).astype(np.float64)
    v = run(_correct(g, d), g, d, std)
    assert v.passed and v.n_over == 0 and v.max_ulp <= 0.5 + 1e-3, v.why


def _bf16_next(a: np.ndarray, idx, ulps: int) -> np.ndarray:
    """bfloat16 values `ulps` steps up, by their bits."""
    bits = a.view(np.uint16).copy()
    bits[idx] = bits[idx] + np.where(a[idx].astype(np.float32) >= 0, ulps, -ulps).astype(np.uint16)
    return bits.view(BF16)


def test_one_ulp_off_in_a_small_bfloat16_result() -> None:
    """16 elements, one 1 ulp off: 6% over the double-thousandth (cann), not a correct rounding
    (strict), and 6% of elements may be over 1 ulp of the golden (msprobe-ulp allows 0.1%)."""
    g = _golden(16).astype(np.float32).astype(np.float64)
    got = _bf16_next(_correct(g, BF16), [3], 1)
    assert not run(got, g, BF16, "cann").passed
    assert not run(got, g, BF16, "strict").passed
    v = run(got, g, BF16, "msprobe-ulp")
    assert (v.passed, v.n_over, v.worst) == (False, 1, [3])
    assert v.why == "6.2500% of elements are over 1 ulp (limit 0.001)"


def test_a_few_elements_one_ulp_off_in_a_large_result() -> None:
    """4096 elements, 3 of them 1 ulp off (0.07%): the share standards forgive it, strict does not;
    30 of them 2 ulps off (0.7%) fail msprobe-ulp's and cann's 0.1% too."""
    g = _golden(4096).astype(np.float32).astype(np.float64)
    base = _correct(g, BF16)
    few = _bf16_next(base, [5, 700, 4000], 1)
    assert run(few, g, BF16, "msprobe-ulp").passed
    assert run(few, g, BF16, "cann").passed
    v = run(few, g, BF16, "strict")
    assert not v.passed and v.n_over == 3 and sorted(v.worst[:3]) == [5, 700, 4000]
    many = _bf16_next(base, list(range(0, 4096, 140)), 2)
    assert not run(many, g, BF16, "msprobe-ulp").passed
    assert not run(many, g, BF16, "cann").passed


def test_one_ulp_off_in_float16_is_inside_cann() -> None:
    """One ulp of float16 is at most 2^-10 relative, under cann's 1e-3: only strict catches it."""
    g = _golden(16)
    got = _correct(g, F16).copy()
    got[3] = np.nextafter(got[3], np.float16(np.inf) if got[3] > 0 else np.float16(-np.inf))
    assert run(got, g, F16, "cann").passed
    assert not run(got, g, F16, "strict").passed


def _up(a: np.ndarray, i: int, ulps: int) -> np.ndarray:
    out = a.copy()
    for _ in range(ulps):
        out[i] = np.nextafter(out[i], np.float32(np.inf))
    return out


def test_float32_slack_window() -> None:
    """float32_slack_ulps counts float32 unit roundoffs (2^-24 |golden|, half an ulp or more), so
    4 ulps off a correct rounding is inside the window under every standard; 20 ulps is past
    strict yet inside cann's relative 1e-4."""
    assert TABLE.slack_ulps >= 8
    g = _golden(64)
    ok = _correct(g, F32)
    assert all(run(_up(ok, 7, 4), g, F32, s).passed for s in STANDARDS)
    far = _up(ok, 7, 20)
    assert not run(far, g, F32, "strict").passed
    assert run(far, g, F32, "cann").passed


@pytest.mark.parametrize("std", STANDARDS)
def test_bfloat16_double_rounding_is_inside_the_float32_window(std: str) -> None:
    """golden 1 + 2^-8 + 2^-30: correct bfloat16 is 1.0078125; a kernel that rounds to float32 first
    sees a tie and returns 1.0. That kernel is correct by the table's float32 slack, so 1.0 passes;
    the next value down does not, except under the standards whose numbers forgive one bfloat16
    ulp beyond the window: torch's rtol 1.6e-2, the kit's mixed (2^-6) and MARE (10 * 2^-7), and
    cosine (one element has no direction to lose)."""
    g = [1 + 2 ** -8 + 2 ** -30]
    assert float(np.float32(g[0]).astype(BF16)) == 1.0 and float(_correct(np.array(g), BF16)[0]) == 1.0
    assert run([1.0078125], g, BF16, std).passed
    assert run([1.0], g, BF16, std).passed
    forgives = std in ("torch", "mixed", "stat_rel_err", "single_bm", "cosine")
    assert run([0.9921875], g, BF16, std).passed == forgives


def test_bfloat16_truncation_fails_cann() -> None:
    g = _golden(1000).astype(np.float32).astype(np.float64)
    trunc = (g.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32).astype(BF16)
    v = run(trunc, g, BF16, "cann")
    assert not v.passed and v.share_over > 0.2
    assert run(_correct(g, BF16), g, BF16, "cann").passed


# -- sums: the condition-aware budget ----------------------------------------------------------
def _kl_like_sums(cols: int = 16, n: int = 512):
    rng = np.random.default_rng(7)
    terms = (rng.uniform(-1, 1, (n, cols)) * np.exp2(rng.integers(-3, 3, (n, cols)))).astype(np.float32)
    golden = np.array([math.fsum(terms[:, j].astype(np.float64)) for j in range(cols)])
    scale = np.abs(terms.astype(np.float64)).sum(axis=0)
    acc = np.zeros(cols, dtype=np.float32)
    for i in range(n):                                  # sequential float32 accumulation
        acc = acc + terms[i]
    return golden, scale, acc


@pytest.mark.parametrize("std", ["cann", "strict", "msprobe-ulp"])
def test_sequential_float32_sum_of_mixed_signs_passes(std: str) -> None:
    golden, scale, acc = _kl_like_sums()
    rel = np.abs(acc - golden) / np.abs(golden)
    assert rel.max() > 1e-6                            # not correctly rounded: the budget is what helps
    assert run(acc, golden, F32, std, scale=scale, nterms=512).passed


@pytest.mark.parametrize("std", ["cann", "strict", "msprobe-ulp", "torch", "msprobe-abs"])
def test_error_of_a_thousandth_of_the_magnitudes_fails(std: str) -> None:
    golden, scale, _ = _kl_like_sums()
    bad = golden + 1e-3 * scale
    assert not run(bad, golden, F32, std, scale=scale, nterms=512).passed


# -- allclose and msprobe-abs boundaries --------------------------------------------------------
@pytest.mark.parametrize("dt,g", [("float16", 2.0), ("bfloat16", 1.0), ("float32", 3.0)])
def test_torch_allclose_boundary(dt: str, g: float) -> None:
    """|got - window| <= atol + rtol*|golden|, where the window is golden +- the float32 slack."""
    d = DTYPES[dt]
    rtol, atol = (TABLE.standards["torch"].param(k, dt) for k in ("rtol", "atol"))
    u = float(np.spacing(d.type(g))) if d != BF16 else 2.0 ** -7 * g
    window = round((TABLE.slack_ulps + 1) * 2.0 ** -24 * g / u)        # in ulps, no tie for these g
    k = math.floor((atol + rtol * g) / u) + window
    assert run([g + k * u], [g], d, "torch").passed
    assert not run([g + (k + 1) * u], [g], d, "torch").passed


def test_msprobe_abs_uses_atol_below_small_value() -> None:
    std = TABLE.standards["msprobe-abs"]
    atol, small = std.param("atol", "float16"), std.param("small_value", "float16")
    g = float(np.float16(5e-4))
    assert g < small
    u = 2.0 ** -21                                      # float16 spacing at 5e-4
    inside = g + math.floor(atol / u) * u              # ~3% relative: far over rtol, under atol
    assert (inside - g) / g > 10 * std.param("rtol", "float16")
    assert run([inside], [g], F16, "msprobe-abs").passed
    assert not run([inside + u], [g], F16, "msprobe-abs").passed
    big = 0.5                                           # above small_value the rtol applies
    assert not run([big + 2 * 2.0 ** -11], [big], F16, "msprobe-abs").passed


# -- the verdict's numbers ---------------------------------------------------------------------
def test_verdict_metrics_on_a_known_case() -> None:
    g = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    got = np.array([1.0, 2.0 + 2 * 2 ** -9, 4.0, 8.0 + 3 * 2 ** -7, 16.0 - 2 ** -6])
    v = run(got, g, F16, "strict")
    k = TABLE.slack_ulps + 1
    raw = np.maximum(np.abs(got - g) - k * 2.0 ** -24 * g - k * 2.0 ** -149, 0)
    ulp_of_g = g * 2.0 ** -10
    assert not v.passed and v.n == 5 and v.n_over == 3 and v.share_over == pytest.approx(0.6)
    assert v.mismatches == 0
    assert v.max_ulp == pytest.approx((raw / ulp_of_g).max(), rel=1e-12)     # ~3 ulps at 8
    assert 2.99 < v.max_ulp < 3.0
    assert v.max_abs == pytest.approx(raw.max(), rel=1e-12)
    assert v.max_rel == pytest.approx((raw / g).max(), rel=1e-12)
    assert v.rmse == pytest.approx(math.sqrt((raw ** 2).mean()), rel=1e-12)
    assert v.mean_ulp == pytest.approx((raw / ulp_of_g).mean(), rel=1e-12)
    assert v.worst == [3, 1, 4]                        # the elements over: 3 ulps, 2 ulps, 0.5 ulp
    assert [e.why for e in v.elements] == ["over"] * 3 and v.n_gross == 0


# -- rules are data ----------------------------------------------------------------------------
def test_a_new_rule_is_one_entry_of_data(monkeypatch) -> None:
    """Judging reads a standard's rule from the RULES table alone: a rule added there (here: at
    most one element beyond the window) is loaded, measured and judged with no other change."""
    from suite.judge import table as judge_table
    from suite.judge import rules as judge_rules
    rule = judge_rules.Rule(("limit",), lambda e, p: e.abs > 0,
                  lambda t, p, s: (t.n_rule <= p("limit"), f"{t.n_rule} elements beyond the window"))
    monkeypatch.setitem(judge_rules.RULES, "at-most", rule)
    std = judge_table.Standard("at-most-one", "at-most", {"limit": {d: 1.0 for d in DTYPES}})
    g = np.array([1.0, 2.0, 3.0, 4.0])
    off = np.nextafter(np.nextafter(np.float32(g), np.float32(np.inf)), np.float32(np.inf)) * np.float32(1.001)
    one = np.where([True, False, False, False], off, g).astype(F32)
    two = np.where([True, True, False, False], off, g).astype(F32)
    assert judge(g.astype(F32), Golden(g, np.abs(g), 1), F32, std, TABLE.slack_ulps).passed
    assert judge(one, Golden(g, np.abs(g), 1), F32, std, TABLE.slack_ulps).passed
    v = judge(two, Golden(g, np.abs(g), 1), F32, std, TABLE.slack_ulps)
    assert not v.passed and v.why == "2 elements beyond the window" and sorted(v.worst) == [0, 1]


def test_judged_in_a_coarser_dtype_then_cast_to_out() -> None:
    """A result rounded to bfloat16 and cast to a float16 out (an operator whose result_dtype is
    the promoted bfloat16): judged in bfloat16, but past float16's range only inf is right, and in
    float16's subnormal range the value on float16's grid."""
    g = np.array([1.0e5, -3.0e5, 3.0e-06, 1.5, 1.501953125])
    bf = g.astype(np.float32).astype(BF16)
    want = bf.astype(F16)                                   # the kernel's double rounding
    assert np.isinf(want[:2]).all() and float(want[2]) != float(bf[2])     # off bfloat16's grid
    std = TABLE.standards["cann"]
    v = judge(want, Golden(g, np.abs(g)), BF16, std, TABLE.slack_ulps)
    assert v.passed, (v.why, [(e.got, e.lo, e.hi) for e in v.elements])
    finite = want.copy()
    finite[:2] = [65504.0, -65504.0]                     # saturated instead of inf
    v = judge(finite, Golden(g, np.abs(g)), BF16, std, TABLE.slack_ulps)
    assert not v.passed and v.mismatches == 2, v.why
    # the bfloat16 window alone (the value 1.5 is 1.5 in bfloat16) still judges the precision
    off = want.copy()
    off[3] = 1.53125                                        # 4 bfloat16 ulps off
    assert not judge(off, Golden(g, np.abs(g)), BF16, std, TABLE.slack_ulps).passed


def test_judged_in_out_after_a_finer_rounding() -> None:
    """A float16 result cast to a bfloat16 out is rounded twice: a correct kernel can land half a
    float16 ulp beyond the bfloat16 window, which `through` allows and plain judging does not."""
    g = np.linspace(0.026, 0.032, 4001)
    got = g.astype(F16).astype(np.float32).astype(BF16)
    once = g.astype(np.float32).astype(BF16)
    assert (got != once).any()                               # double rounding moves some elements
    std = TABLE.standards["cann"]
    assert not judge(got, Golden(g, np.abs(g)), BF16, std, TABLE.slack_ulps).passed
    assert judge(got, Golden(g, np.abs(g)), BF16, std, TABLE.slack_ulps, through=F16).passed
    assert judge(once, Golden(g, np.abs(g)), BF16, std, TABLE.slack_ulps).passed
    # rounded once, straight to out's dtype: at least as accurate, so accepted under `through` too
    assert judge(once, Golden(g, np.abs(g)), BF16, std, TABLE.slack_ulps, through=F16).passed


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("got", [0.0, "-max", "0.9max"])
def test_a_golden_at_the_overflow_edge_is_judged_relative_to_a_finite_midpoint(dt: str, got, sign: int) -> None:
    """A golden just below the overflow threshold (max + half an ulp) by less than the float32
    slack: its window is [max, inf] (either answer is right); 0, -max or 0.9*max is not. The
    relative excess is measured against the window's midpoint with inf counted as max (it was
    inf, so every relative excess was 0 and cann passed all three)."""
    d = DTYPES[dt]
    fmax = float(ml_dtypes.finfo(d).max)
    half_ulp = 2.0 ** (math.frexp(fmax)[1] - ml_dtypes.finfo(d).nmant - 2)
    g = (fmax + half_ulp) * (1 - 2.0 ** -27)        # the overflow threshold, a little below
    x = sign * {"-max": -fmax, "0.9max": 0.9 * fmax}.get(got, got)
    for ok in (fmax, np.inf):
        assert run([sign * ok], [sign * g], d, "cann").passed
    v = run([x], [sign * g], d, "cann")
    excess = abs(float(np.asarray(x).astype(np.float32).astype(d)) - sign * fmax)
    assert not v.passed and v.n_over == 1 and v.n_gross == (excess / fmax > 0.25), (x, v.why)


RULE_SAYS = {"cann": "50.0000% of elements have relative error > 0.001 (limit: below that share)",
             "msprobe-ulp": "50.0000% of elements are over 1 ulp (limit 0.001)",
             "msprobe-abs": "1 elements over: |golden| < 0.000976562 needs abs error <= 1.52588e-05, others "
                            "relative error <= 0.000976562",
             "torch": "1 elements over |got - golden| <= 1e-05 + 0.001*|golden|",
             "strict": "1 elements are not a correct rounding of the golden (+- 8 float32 ulps)",
             "mixed": "50.0000% of elements within 0.00195312 + 0.00195312*|golden| (needs 99.0000%) and the "
                      "largest absolute error inf (limit 0.1)",
             "stat_rel_err": "MERE 0 (limit below 0.000976562) and MARE 0 (limit below 0.00976562)",
             "single_bm": "MERE 0 (limit below 0.000976562) and MARE 0 (limit below 0.00976562); 0 elements with "
                          "|golden| < 0.000488281 over the absolute error 1.52588e-05",
             "close": "1 elements over |got - golden| <= 1e-08 + 0.001*|golden| (50.0000% of elements, limit 0.1000%)",
             "cosine": "cosine similarity 1: 1 - cos = 0 (limit 0.01)"}


@pytest.mark.parametrize("std", STANDARDS)
@pytest.mark.parametrize("golden,got", [(np.nan, 1.0), (np.inf, 65504.0), (-np.inf, np.nan), (1.0, np.nan)])
def test_a_mismatch_is_counted_by_the_rule_too(std: str, golden: float, got: float) -> None:
    """The rule's own count includes a NaN/inf mismatch: a NaN golden's relative error and
    torch's allclose test were NaN, so the message said 0% (0 elements) over next to the mismatch."""
    v = run([got, 1.0], [golden, 1.0], F16, std)
    assert (v.passed, v.mismatches, v.n_over) == (False, 1, 1)
    assert v.why == "1 elements differ in NaN/inf (position, sign, or expected overflow); " + RULE_SAYS[std]


def test_an_ulp_is_counted_on_the_coarsest_grid_of_the_path() -> None:
    """A bfloat16 result cast to a float16 out is judged in bfloat16 (the fewer significant bits),
    yet below float16's smallest normal it lies on float16's subnormal grid, coarser there than
    bfloat16's: its ulps are counted on that grid. Counted on bfloat16's, the correct kernel was up
    to 8 ulps off and failed msprobe-ulp (benchmarks/standards_table.py found it on the reference,
    MseLossBackward and SmoothL1LossBackward's bfloat16-to-float16 `tiny` cases)."""
    from suite.common import dtypes
    g = np.array([3.1e-7, -1.13e-6, 5.57e-6, 2.21e-5, 1.5])
    got = dtypes.round_to(dtypes.round_to(g, BF16).astype(np.float64), F16)
    for std in ("msprobe-ulp", "cann", "strict"):
        v = judge(got, Golden(g, np.abs(g)), BF16, TABLE.standards[std], TABLE.slack_ulps, through=BF16)
        assert v.passed and v.max_ulp <= 1, (std, v.max_ulp, v.why)
    off = got.copy()
    off[1] = np.float16(-1.13e-6) - np.float16(2 * 2 ** -24)           # two float16 subnormal steps off
    v = judge(off, Golden(g, np.abs(g)), BF16, TABLE.standards["msprobe-ulp"], TABLE.slack_ulps, through=BF16)
    assert not v.passed and 1 < v.max_ulp < 3
