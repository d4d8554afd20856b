"""The double benchmark (pytest --accuracy-baseline; docs/precision.md, "The double benchmark"): a
candidate's result and a trusted baseline's result on the same inputs, each measured against the
same float64 golden, and the candidate's errors compared with the baseline's as the vendor's test
kit compares them in its cross_check (hicann/ops-test-kit, ttk/core_modules/comparison/cross_check.py
and resolve.py; every number below is cited on docs/precision.md).

Where |golden| >= the dtype's small value (the large domain), each side's relative error
|x - g| / (|g| + 1e-7) gives MARE (its maximum) and MERE (its mean), and its absolute error gives
RMSE; the candidate passes when each of the three ratios candidate/baseline is at most the level's
limit (a ratio's denominator is floored at the small value; two zero errors, or two infinite ones,
are a ratio of 1; a NaN ratio is infinite). Where |golden| < the small value, an element is in
error when |x - g| > the dtype's small_value_atol, and the candidate may have at most twice the
baseline's count (at least one). A NaN or infinity anywhere (candidate, golden or baseline) leaves
the element out of both domains and passes only where the candidate matches the baseline, or the
golden when the golden itself is NaN or infinite.

Measured block by block (nothing the size of the output is held in float64), in float64: the kit
computes in the promotion of float32 and the three arrays' dtypes, which a float64 golden makes
float64."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np

from suite.common import dtypes
from suite.common.blocks import BLOCK

EPS = 1e-7                 # the relative error's addend to |golden| (the kit's)
METRICS = ("mare", "mere", "rmse")
# level -> (mare, mere, rmse) ratio limits; L1 the kit's default
LEVELS: Dict[str, Tuple[float, float, float]] = {"L0": (10.0, 2.0, 2.0), "L1": (5.0, 1.5, 1.5),
                                                 "L2": (2.0, 1.2, 1.2)}
DEFAULT_LEVEL = "L1"
SMALL_RATIO = 2.0          # the small domain: the candidate's error count at most this times the baseline's
# dtype -> (small_value, small_value_atol); the kit's cross_check takes these three dtypes only
SMALL_VALUE: Dict[str, Tuple[float, float]] = {"float16": (2.0 ** -11, 2.0 ** -16),
                                               "bfloat16": (2.0 ** -8, 2.0 ** -16),
                                               "float32": (2.0 ** -14, 2.0 ** -30)}


def unsupported(dtype: Any) -> Optional[str]:
    """Why an output of `dtype` has no double benchmark (None: it has one)."""
    name = dtypes.name_of(np.dtype(dtype))
    if name in SMALL_VALUE:
        return None
    return f"out is {name}: the double benchmark is defined for {', '.join(SMALL_VALUE)} only"


@dataclass
class Side:
    """One side's errors against the golden: MARE, MERE and RMSE over the large domain (None when
    it is empty), and the small domain's elements in error."""

    mare: Optional[float]
    mere: Optional[float]
    rmse: Optional[float]
    small_errors: int

    def to_json(self) -> Dict[str, Any]:
        return {"mare": self.mare, "mere": self.mere, "rmse": self.rmse, "small_errors": self.small_errors}


class _Sums:
    def __init__(self) -> None:
        self.max_rel = self.sum_rel = self.sum_sq = 0.0
        self.small = 0

    def add(self, x: np.ndarray, g: np.ndarray, large: np.ndarray, small: np.ndarray, atol: float) -> None:
        err = np.abs(x - g)
        rel = err[large] / (np.abs(g[large]) + EPS)
        if rel.size:
            self.max_rel = max(self.max_rel, float(rel.max()))
            self.sum_rel += float(rel.sum())
            self.sum_sq += float(np.einsum("i,i->", err[large], err[large]))
        self.small += int(np.count_nonzero(err[small] > atol))

    def side(self, n_large: int) -> Side:
        if not n_large:
            return Side(None, None, None, self.small)
        return Side(self.max_rel, self.sum_rel / n_large, math.sqrt(self.sum_sq / n_large), self.small)


@dataclass
class Measured:
    """Both sides measured against one golden, and what the comparison needs besides."""

    dtype: str
    candidate: Side
    baseline: Side
    n_large: int
    n_small: int
    special_mismatches: int        # NaN/inf elements where the candidate matches neither side


def _special_mismatches(t: np.ndarray, g: np.ndarray, b: np.ndarray, special: np.ndarray) -> int:
    if not special.any():
        return 0
    t, g, b = t[special], g[special], b[special]

    def same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        # both NaN, the same infinity, or equal finite values
        return (np.isnan(x) & np.isnan(y)) | (x == y)
    ok = same(t, b) | (~np.isfinite(g) & same(t, g))
    return int(np.count_nonzero(~ok))


def measure(candidate: np.ndarray, baseline: np.ndarray, golden: Any, *, block: int = BLOCK) -> Measured:
    """Measure both results (arrays of out's shape and dtype) against `golden` (a Golden, or a
    GoldenSource read block by block), in float64. ValueError for a dtype outside SMALL_VALUE."""
    from suite.golden.source import GoldenSource, Materialized
    why = unsupported(candidate.dtype)
    if why is not None:
        raise ValueError(why)
    name = dtypes.name_of(candidate.dtype)
    small_value, atol = SMALL_VALUE[name]
    src = golden if isinstance(golden, GoldenSource) else Materialized(golden)
    c = np.ascontiguousarray(candidate).reshape(-1)
    b = np.ascontiguousarray(baseline).reshape(-1)
    cs, bs = _Sums(), _Sums()
    n_large = n_small = bad = 0
    with np.errstate(all="ignore"):
        for start, g, _, _ in src.blocks(block):
            t = c[start:start + g.size].astype(np.float64)
            u = b[start:start + g.size].astype(np.float64)
            special = ~(np.isfinite(t) & np.isfinite(g) & np.isfinite(u))
            large = ~special & (np.abs(g) >= small_value)
            small = ~special & ~large
            cs.add(t, g, large, small, atol)
            bs.add(u, g, large, small, atol)
            n_large += int(np.count_nonzero(large))
            n_small += int(np.count_nonzero(small))
            bad += _special_mismatches(t, g, u, special)
    return Measured(name, cs.side(n_large), bs.side(n_large), n_large, n_small, bad)


def ratio(num: float, den: float, floor: float) -> float:
    """candidate / baseline as the kit divides: the denominator floored at `floor` (the dtype's
    small value); NaN on either side is infinite, two infinities or two zeros are 1, an infinite
    candidate is infinite."""
    if math.isnan(num) or math.isnan(den):
        return math.inf
    if math.isinf(num):
        return 1.0 if math.isinf(den) else math.inf
    if num == 0 and den == 0:
        return 1.0
    return num / max(den, floor)


@dataclass
class Judged:
    """The double benchmark's verdict on one output at a level."""

    measured: Measured
    level: str
    ratios: Dict[str, Optional[float]]       # mare, mere, rmse (None: no large domain), small
    passed: bool
    why: str                                 # what exceeded its limit ("" when passed)

    def limits(self) -> Dict[str, float]:
        return {**dict(zip(METRICS, LEVELS[self.level])), "small": SMALL_RATIO}

    def to_json(self) -> Dict[str, Any]:
        """The record's form (docs/results-schema.md, "accuracy"), less the baseline's name."""
        m = self.measured
        out = {"level": self.level, "candidate": m.candidate.to_json(), "baseline_metrics": m.baseline.to_json(),
               "ratios": dict(self.ratios), "limits": self.limits(), "n_large": m.n_large, "n_small": m.n_small,
               "special_mismatches": m.special_mismatches, "passed": self.passed}
        return {**out, "why": self.why} if self.why else out


def within(ratios: Dict[str, Optional[float]], level: str) -> Tuple[bool, str]:
    """Whether each ratio is at most its limit at `level` (a ratio equal to its limit passes, as in
    the kit), and what exceeded it."""
    limits = {**dict(zip(METRICS, LEVELS[level])), "small": SMALL_RATIO}
    over = [f"{k} x{v:.3g} > {limits[k]:g}" for k, v in ratios.items() if v is not None and v > limits[k]]
    return not over, ", ".join(over)


def judge(m: Measured, level: str) -> Judged:
    """The verdict at `level` (one of LEVELS) on what `measure` found."""
    floor = SMALL_VALUE[m.dtype][0]
    c, b = m.candidate, m.baseline
    ratios: Dict[str, Optional[float]] = {k: None if getattr(c, k) is None else
                                          ratio(getattr(c, k), getattr(b, k), floor) for k in METRICS}
    ratios["small"] = c.small_errors / max(b.small_errors, 1)
    ok, why = within(ratios, level)
    if m.special_mismatches:
        ok, why = False, "; ".join(x for x in (f"{m.special_mismatches} NaN/inf elements match neither the "
                                               f"baseline nor the golden", why) if x)
    return Judged(m, level, ratios, ok, why)
