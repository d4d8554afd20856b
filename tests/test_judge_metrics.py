"""The Verdict's numbers where they are a choice (docs/results-schema.md, "metrics"): matched NaN and
infinities, an expected overflow, a mismatch, zero goldens, flushed subnormals, an empty output.
Each row gives every element's error (in ulps, absolute, relative) by hand; the test checks every
metric the verdict reports, the verdict and its `why`. Synthetic arrays only."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

import ml_dtypes
import numpy as np
import pytest

from suite.ops.base import Golden
from suite.judge.judging import Verdict, judge
from suite.judge.table import load_table
from tests.core_helpers import approx_metrics

ROOT = Path(__file__).resolve().parents[1]
TABLE = load_table(ROOT / "cases" / "tolerances.yaml")
F16, F32, BF16 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)
DTYPES = {"float16": F16, "bfloat16": BF16, "float32": F32}
INF, NAN = math.inf, math.nan
SUB = 2.0 ** -149                       # float32's smallest subnormal (the window's floor unit)
TINY = {"float16": 2.0 ** -14, "bfloat16": 2.0 ** -126, "float32": 2.0 ** -126}
SPACING0 = {"float16": 2.0 ** -24, "bfloat16": 2.0 ** -133, "float32": 2.0 ** -149}    # ulp at 0
MAX = {"float16": 65504.0, "bfloat16": float(ml_dtypes.finfo(BF16).max), "float32": float(np.finfo(np.float32).max)}
ULP_AT_MAX = {"float16": 32.0, "bfloat16": 2.0 ** 120, "float32": 2.0 ** 104}
MISMATCH = "{k} elements differ in NaN/inf (position, sign, or expected overflow); "


@dataclass
class Row:
    dtype: str
    golden: Sequence[float]
    got: Sequence[float]
    ulps: Sequence[float]                 # each element's error, in ulps of the dtype at the golden
    abs: Sequence[float]                  # ... absolute
    rel: Sequence[float]                  # ... relative (docs/results-schema.md)
    passed: bool
    why: str = ""
    n_over: int = 0
    mismatches: int = 0
    n_gross: int = 0
    standard: str = "cann"
    scale: Optional[Sequence[float]] = None
    nterms: int = 1


def _rows() -> dict:
    rows = {}
    for dt in DTYPES:
        mx, top = MAX[dt], ULP_AT_MAX[dt]
        beyond = 2.0 * mx                                    # past the range: expects inf
        rows[f"{dt}-matched NaN and infinities"] = Row(
            dt, [1.0, NAN, INF, -INF], [1.0, NAN, INF, -INF], [0] * 4, [0] * 4, [0] * 4, True)
        rows[f"{dt}-expected overflow answered with inf"] = Row(
            dt, [beyond, -beyond, 1.0], [INF, -INF, 1.0], [0] * 3, [0] * 3, [0] * 3, True)
        rows[f"{dt}-expected overflow answered with max"] = Row(
            dt, [beyond, 1.0], [mx, 1.0], [INF, 0], [INF, 0], [INF, 0], False,
            MISMATCH.format(k=1) + "50.0000% of elements have relative error > "
            f"{TABLE.standards['cann'].param('threshold', dt):g} (limit: below that share)", n_over=1, mismatches=1)
        rows[f"{dt}-expected overflow answered with the other infinity"] = Row(
            dt, [beyond, 1.0, 1.0, 1.0], [-INF, 1.0, 1.0, 1.0], [INF, 0, 0, 0], [INF, 0, 0, 0], [INF, 0, 0, 0],
            False, MISMATCH.format(k=1) + "25.0000% of elements have relative error > "
            f"{TABLE.standards['cann'].param('threshold', dt):g} (limit: below that share)", n_over=1, mismatches=1)
        rows[f"{dt}-NaN for a number, a number for NaN, and the wrong infinity"] = Row(
            dt, [1.0, NAN, INF, 2.0], [NAN, 1.0, -INF, 2.0], [INF, INF, INF, 0], [INF, INF, INF, 0],
            [INF, INF, INF, 0], False,
            MISMATCH.format(k=3) + "75.0000% of elements have relative error > "
            f"{TABLE.standards['cann'].param('threshold', dt):g} (limit: below that share)", n_over=3, mismatches=3)
        rows[f"{dt}-every element a mismatch"] = Row(
            dt, [1.0, 2.0], [NAN, INF], [INF, INF], [INF, INF], [INF, INF], False,
            MISMATCH.format(k=2) + "100.0000% of elements have relative error > "
            f"{TABLE.standards['cann'].param('threshold', dt):g} (limit: below that share)", n_over=2, mismatches=2)
        rows[f"{dt}-inf for a finite golden"] = Row(
            dt, [1.0, 1.0], [INF, 1.0], [INF, 0], [INF, 0], [INF, 0], False,
            MISMATCH.format(k=1) + "50.0000% of elements have relative error > "
            f"{TABLE.standards['cann'].param('threshold', dt):g} (limit: below that share)", n_over=1, mismatches=1)
        rows[f"{dt}-zero golden answered with 0 and -0"] = Row(
            dt, [0.0, 0.0, -0.0], [0.0, -0.0, 0.0], [0] * 3, [0] * 3, [0] * 3, True)
        # 0 against a zero golden is 0 error however many zeros: the mean is over all elements
        sp, tiny = SPACING0[dt], TINY[dt]
        w = 9 * SUB                                     # the window of a zero golden: 9 float32 subnormals
        off = sp - w if dt != "float32" else 0.0        # the smallest subnormal: float32's is in the window
        rows[f"{dt}-zero golden answered with the smallest subnormal"] = Row(
            dt, [0.0, 1.0], [sp, 1.0], [off / sp, 0], [off, 0], [INF if dt != "float32" else 0.0, 0],
            # 2^-24 over float16's smallest normal is 2^-10, under cann's 1e-3; bfloat16's is 2^-7
            True if dt != "bfloat16" else False,
            "" if dt != "bfloat16" else "50.0000% of elements have relative error > 0.001 (limit: below that share)",
            n_over=0 if dt != "bfloat16" else 1)
        rows[f"{dt}-zero golden answered with a normal number"] = Row(
            dt, [0.0, 1.0], [1.0, 1.0], [(1.0 - w) / sp, 0], [1.0 - w, 0], [INF, 0], False,
            "1 elements are grossly wrong (relative error beyond the allowed window > 0.25, e.g. 0, garbage "
            "or a flipped sign); 50.0000% of elements have relative error > "
            f"{TABLE.standards['cann'].param('threshold', dt):g} (limit: below that share)", n_over=1, n_gross=1)
        # a subnormal golden answered with 0 (flushed): no error; answered with its double: the
        # error over the smallest normal
        g = 16 * sp                                     # 16 subnormal spacings
        wg = 9 * 2.0 ** -24 * g + 9 * SUB
        over = dt != "float32"                          # g over the smallest normal: 2^-6, 2^-3, 2^-19
        rows[f"{dt}-subnormal golden flushed to zero"] = Row(
            dt, [g, -g], [0.0, -0.0], [0, 0], [0, 0], [0, 0], True)
        rows[f"{dt}-subnormal golden answered with its double"] = Row(
            dt, [g, 1.0], [2 * g, 1.0], [(g - wg) / sp, 0], [g - wg, 0], [(g - wg) / tiny, 0], not over,
            f"50.0000% of elements have relative error > {TABLE.standards['cann'].param('threshold', dt):g} "
            "(limit: below that share)" if over else "", n_over=int(over))
        # below the largest finite value: float32's slack there is 9 ulps, the others' a fraction
        k = 16 if dt == "float32" else 1
        rows[f"{dt}-largest finite golden {k} ulps low"] = Row(
            dt, [mx, 1.0], [mx - k * top, 1.0], [(k * top - 9 * 2.0 ** -24 * mx) / top, 0],
            [k * top - 9 * 2.0 ** -24 * mx, 0], [(k * top - 9 * 2.0 ** -24 * mx) / mx, 0], False,
            "1 elements are not a correct rounding of the golden (+- 8 float32 ulps)", n_over=1, standard="strict")
    # a cancelling sum whose golden is exactly 0 (four terms of magnitude 2^-5): its window
    # [-w, w], w = 1.5 * 2^-24 and a little, rounds to +-2^-23 in float16. 2^-23 lies inside the
    # rounded window (what a correct kernel may return), beyond the unrounded one: some absolute
    # error, no relative error; 2^-22 lies beyond the rounded window: relative error inf
    s, n = 2.0 ** -3, 4
    wsum = 2.0 ** -24 * (8 * s + min(n * s, s + 16 * (2 * 0.0 + s))) + (8 + n) * SUB
    rows["float16-zero sum inside the rounded window"] = Row(
        "float16", [0.0], [2.0 ** -23], [(2.0 ** -23 - wsum) / 2.0 ** -24], [2.0 ** -23 - wsum], [0.0], True,
        scale=[s], nterms=n, standard="strict")
    rows["float16-zero sum beyond the rounded window"] = Row(
        "float16", [0.0], [2.0 ** -22], [(2.0 ** -22 - wsum) / 2.0 ** -24], [2.0 ** -22 - wsum], [INF], False,
        "1 elements are not a correct rounding of the golden (+- 8 float32 ulps)", n_over=1,
        scale=[s], nterms=n, standard="strict")
    return rows


ROWS = _rows()


def _judge(row: Row) -> Verdict:
    d = DTYPES[row.dtype]
    g = np.asarray(row.golden, dtype=np.float64)
    scale = np.abs(g) if row.scale is None else np.asarray(row.scale, dtype=np.float64)
    with np.errstate(all="ignore"):
        got = np.asarray(row.got, dtype=np.float64).astype(np.float32).astype(d)
    assert np.array_equal(got.astype(np.float64), np.asarray(row.got), equal_nan=True), "not on the dtype's grid"
    return judge(got, Golden(g, scale, row.nterms), d, TABLE.standards[row.standard], TABLE.slack_ulps)


def _mean(xs: List[float]) -> float:
    return math.inf if math.inf in xs else sum(xs) / len(xs)


@pytest.mark.parametrize("name", ROWS)
def test_metrics(name: str) -> None:
    row = ROWS[name]
    v = _judge(row)
    n = len(row.golden)
    want = {"standard": row.standard, "n": n, "n_over": row.n_over, "share_over": row.n_over / n,
            "mismatches": row.mismatches, "n_gross": row.n_gross,
            "max_ulp": max(row.ulps), "mean_ulp": _mean(list(row.ulps)), "max_abs": max(row.abs),
            "max_rel": max(row.rel), "rmse": math.sqrt(_mean([a * a for a in row.abs]))}
    got = v.metrics()
    assert not any(isinstance(x, float) and math.isnan(x) for x in got.values()), got
    assert got == approx_metrics(want, rel=1e-12, abs=0), f"{name}:\n got  {got}\n want {want}"
    assert (v.passed, v.why) == (row.passed, row.why), v.why


def test_an_empty_output_has_zero_metrics_and_passes() -> None:
    for std in TABLE.standards.values():
        v = judge(np.zeros((0, 3), F16), Golden(np.zeros((0, 3)), np.zeros((0, 3))), F16, std, TABLE.slack_ulps)
        assert v.metrics() == {"standard": std.name, "n": 0, "n_over": 0, "share_over": 0.0, "mismatches": 0,
                               "n_gross": 0, "max_ulp": 0.0, "mean_ulp": 0.0, "max_abs": 0.0, "max_rel": 0.0,
                               "rmse": 0.0}
        assert (v.passed, v.why, v.worst, v.elements) == (True, "", [], [])


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("std", sorted(TABLE.standards))
def test_no_metric_is_ever_nan(dt: str, std: str) -> None:
    """Random mixtures of NaN, infinities, zeros, subnormals, overflows and ordinary numbers, in
    both places: no metric is NaN, and every one is inf exactly when some element mismatches."""
    d = DTYPES[dt]
    rng = np.random.default_rng(5)
    pool = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5, 3e-6, 1e-40, 2.0 * MAX[dt], -2.0 * MAX[dt], MAX[dt]])
    for _ in range(40):
        g = rng.choice(pool, 7)
        x = np.where(rng.random(7) < 0.5, g, rng.choice(pool, 7))
        with np.errstate(all="ignore"):
            got = x.astype(np.float32).astype(d)
        v = judge(got, Golden(g, np.abs(g)), d, TABLE.standards[std], TABLE.slack_ulps)
        m = v.metrics()
        assert not any(isinstance(y, float) and math.isnan(y) for y in m.values()), (g, got, m)
        infinite = [k for k in ("max_ulp", "mean_ulp", "max_abs", "rmse") if m[k] == INF]
        assert infinite == (["max_ulp", "mean_ulp", "max_abs", "rmse"] if v.mismatches else []), (g, got, m)
        if v.mismatches:
            assert m["max_rel"] == INF and not v.passed
