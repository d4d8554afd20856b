"""The rules a standard is built from: what each counts as excess error (Excess) and when a tally of
it passes (docs/precision.md, "Standards")."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.common import dtypes

F32_U = 2.0 ** -24
F32_SUB = 2.0 ** -149
F32_TINY = 2.0 ** -126
COMMON = ("gross",)                   # parameters every rule takes

Param = Callable[[str], Optional[float]]      # a standard's parameter for the judged dtype
# out's flat indices -> (out, scale, path) in float64 as the vendor's arithmetic computes them
Computed = Callable[[np.ndarray], Tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Excess:
    """What measuring found for the elements a rule judges. For a rule's `over` on the elements
    outside the window (and the non-finite ones): the error beyond the correctly rounded window
    (`abs`, and `rel` relative to the window's midpoint), the golden, `ref` = |golden| (the dtype's
    smallest normal for 0 and non-finite goldens), and `ulp`, the error in ulps of the output
    dtype from the unrounded window. For an `every_element` rule, on every element: `abs`, `rel`
    and `ulp` are the error from the unrounded window (the metrics' error, docs/results-schema.md).
    A mismatch's error is inf, a matched NaN or infinity's 0."""

    abs: np.ndarray
    rel: np.ndarray
    golden: np.ndarray
    ref: np.ndarray
    ulp: np.ndarray


@dataclass(frozen=True)
class Whole:
    """Every element of a block, for a rule whose verdict reads an aggregate of all of them (the
    kit's cosine, MERE's count, mixed's anchor): the golden, and the result as judged, which is the
    golden itself where the result lies inside the window (a correct kernel's rounding is no error
    under any standard)."""

    golden: np.ndarray
    got: np.ndarray


@dataclass(frozen=True)
class RuleCount:
    """What a rule's verdict reads: elements judged, how many its `over` flagged (every mismatch
    among them), the mean ulp error (inf when some error is infinite), and the rule's own tallies
    over all blocks (`Rule.tally`: a name starting with max_ is a maximum, any other a sum)."""

    n: int
    n_rule: int
    mean_ulp: float
    sums: Mapping[str, float] = field(default_factory=dict)
    dtype: Optional[np.dtype] = None          # the output dtype judged


@dataclass(frozen=True)
class Rule:
    """One way of forgiving error beyond the window, as data: its parameters, which elements it
    flags (`over`: on the elements outside the window, or with `every_element` on all of them,
    as an ulp bound needs), and whether the flagged count passes (`passes` -> (ok, why))."""

    params: Tuple[str, ...]
    over: Callable[[Excess, Param], np.ndarray]
    passes: Callable[[RuleCount, Param, float], Tuple[bool, str]]
    optional: Tuple[str, ...] = ()
    every_element: bool = False
    shares: Tuple[str, ...] = ()          # parameters that are a share of elements: at most 1
    # what the verdict adds up across blocks, from the elements `over` sees and the whole block
    tally: Optional[Callable[[Excess, Param, Whole], Dict[str, float]]] = None
    together: Tuple[Tuple[str, ...], ...] = ()    # optional parameters given together or not at all


def _share_over(e: Excess, p: Param) -> np.ndarray:
    return e.rel > p("threshold")


def _share_passes(t: RuleCount, p: Param, slack: float) -> Tuple[bool, str]:
    share = t.n_rule / t.n
    return share < p("threshold"), (f"{share:.4%} of elements have relative error > {p('threshold'):g} "
                                     f"(limit: below that share)")


def _ulp_over(e: Excess, p: Param) -> np.ndarray:
    return e.ulp > p("max_ulp")


def _ulp_passes(t: RuleCount, p: Param, slack: float) -> Tuple[bool, str]:
    share, mean_lim = t.n_rule / t.n, p("mean_ulp")
    ok = share < p("share") or (mean_lim is not None and t.mean_ulp < mean_lim)
    return ok, (f"{share:.4%} of elements are over {p('max_ulp'):g} ulp (limit {p('share'):g})" + (
        f" and the mean ulp error {t.mean_ulp:.3g} is not below {mean_lim:g}" if mean_lim is not None else ""))


def _none_over(t: RuleCount, why: str) -> Tuple[bool, str]:
    """A rule that forgives no element it flags."""
    return t.n_rule == 0, why


def _abs_rel_over(e: Excess, p: Param) -> np.ndarray:
    return np.where(np.abs(e.golden) < p("small_value"), e.abs > p("atol"), e.abs / e.ref > p("rtol"))


def _abs_rel_passes(t: RuleCount, p: Param, slack: float) -> Tuple[bool, str]:
    return _none_over(t, f"{t.n_rule} elements over: |golden| < {p('small_value'):g} needs abs error <= "
                         f"{p('atol'):g}, others relative error <= {p('rtol'):g}")


def _allclose_over(e: Excess, p: Param) -> np.ndarray:
    return e.abs > p("atol") + p("rtol") * np.abs(e.golden)


def _allclose_passes(t: RuleCount, p: Param, slack: float) -> Tuple[bool, str]:
    why = f"{t.n_rule} elements over |got - golden| <= {p('atol'):g} + {p('rtol'):g}*|golden|"
    ptol = p("ptol")
    if ptol is None:
        return _none_over(t, why)
    share = t.n_rule / t.n                    # the kit's close: (1 - precision) <= ptol
    return share <= ptol, why + f" ({share:.4%} of elements, limit {ptol:.4%})"


def _mixed_tally(e: Excess, p: Param, whole: Whole) -> Dict[str, float]:
    g = np.abs(whole.golden)
    return {"max_abs": float(np.fmax.reduce(e.abs, initial=0.0)),
            "max_golden": float(np.fmax.reduce(np.where(np.isfinite(g), g, 0.0), initial=0.0))}


def mixed_limit(p: Param, max_golden: float, dtype: np.dtype) -> float:
    """The kit's cap on the largest absolute error: `max_abs`, or where `max_ulps` is given the
    larger of it and that many ulps of the output dtype at the largest |golden| (as rounded to the
    dtype; at the largest finite value, the spacing of its binade)."""
    lim, k = p("max_abs"), p("max_ulps")
    if k is None:
        return lim
    top = float(dtypes.finfo(dtype).max)
    anchor = min(float(dtypes.round_to(np.asarray([max_golden]), dtype).astype(np.float64)[0]), top)
    return max(lim, k * float(dtypes.ulp(np.asarray([anchor]), dtype)[0]))


def _mixed_passes(t: RuleCount, p: Param, slack: float) -> Tuple[bool, str]:
    matched = (t.n - t.n_rule) / t.n           # the kit's matched_ratio
    limit = mixed_limit(p, t.sums["max_golden"], t.dtype)
    ok = matched >= p("matched") and t.sums["max_abs"] <= limit
    return ok, (f"{matched:.4%} of elements within {p('atol'):g} + {p('rtol'):g}*|golden| (needs {p('matched'):.4%}) "
                f"and the largest absolute error {t.sums['max_abs']:.4g} (limit {limit:.4g})")


KIT_FLOOR = 1e-7           # the kit's relative error |a - g| / (|g| + 1e-7)
MARE_RATIO = 10.0          # MARE below 10 times the threshold


def _small(e_golden: np.ndarray, p: Param) -> np.ndarray:
    sv = p("small_value")
    return np.zeros(e_golden.shape, bool) if sv is None else np.abs(e_golden) < sv


def _stat_rel(e: Excess) -> np.ndarray:
    return np.where(np.isfinite(e.golden), e.abs / (np.abs(e.golden) + KIT_FLOOR), 0.0)


def _stat_over(e: Excess, p: Param) -> np.ndarray:
    small = _small(e.golden, p)
    big_over = _stat_rel(e) >= MARE_RATIO * p("threshold")
    return np.where(small, e.abs > (p("small_atol") or 0.0), big_over)


def _stat_tally(e: Excess, p: Param, whole: Whole) -> Dict[str, float]:
    """MERE and MARE over the pairs of finite values (a mismatch fails by itself, as in the kit),
    leaving out the small-value domain, which counts its elements over small_atol."""
    pair = np.isfinite(e.golden) & np.isfinite(e.abs)
    small = _small(e.golden, p)
    rel = np.where(pair & ~small, _stat_rel(e), 0.0)
    g = whole.golden
    return {"sum_rel": float(rel.sum()), "max_rel": float(np.fmax.reduce(rel, initial=0.0)),
            "n_large": float(np.count_nonzero(np.isfinite(g) & np.isfinite(whole.got) & ~_small(g, p))),
            "n_small_over": float(np.count_nonzero(pair & small & (e.abs > (p("small_atol") or 0.0))))}


def _stat_passes(t: RuleCount, p: Param, slack: float) -> Tuple[bool, str]:
    th, s = p("threshold"), t.sums
    n = s["n_large"]
    mere = s["sum_rel"] / n if n else 0.0
    mare = s["max_rel"]
    ok = mere < th and mare < MARE_RATIO * th and s["n_small_over"] == 0
    why = f"MERE {mere:.4g} (limit below {th:g}) and MARE {mare:.4g} (limit below {MARE_RATIO * th:g})"
    if p("small_value") is not None:
        why += (f"; {int(s['n_small_over'])} elements with |golden| < {p('small_value'):g} over the absolute "
                f"error {p('small_atol'):g}")
    return ok, why


def _cosine_over(e: Excess, p: Param) -> np.ndarray:
    return e.abs > 0


def _cosine_tally(e: Excess, p: Param, whole: Whole) -> Dict[str, float]:
    fin = np.isfinite(whole.golden) & np.isfinite(whole.got)
    g, x = np.where(fin, whole.golden, 0.0), np.where(fin, whole.got, 0.0)
    return {"xg": float(np.einsum("i,i->", x, g)), "xx": float(np.einsum("i,i->", x, x)),
            "gg": float(np.einsum("i,i->", g, g))}


def cosine_of(sums: Mapping[str, float]) -> float:
    """dot(x, g) / (|x| |g|) over the finite elements; two zero vectors are the same vector (1),
    one zero vector against another is 0."""
    xx, gg = sums["xx"], sums["gg"]
    if xx == 0 and gg == 0:
        return 1.0
    if xx == 0 or gg == 0:
        return 0.0
    return sums["xg"] / (math.sqrt(xx) * math.sqrt(gg))


def _cosine_passes(t: RuleCount, p: Param, slack: float) -> Tuple[bool, str]:
    c = cosine_of(t.sums)
    return 1.0 - c <= p("rtol"), f"cosine similarity {c:.9g}: 1 - cos = {1.0 - c:.4g} (limit {p('rtol'):g})"


def _exact_over(e: Excess, p: Param) -> np.ndarray:
    return e.abs > 0


def _exact_passes(t: RuleCount, p: Param, slack: float) -> Tuple[bool, str]:
    return _none_over(t, f"{t.n_rule} elements are not a correct rounding of the golden (+- {slack:g} float32 ulps)")


RULES: Dict[str, Rule] = {
    # CANN's per-operator standard: below a share of elements over a relative error
    "share": Rule(("threshold",), _share_over, _share_passes, shares=("threshold",)),
    # msprobe's ULP method: a share over max_ulp, or (optionally) a mean ulp error below mean_ulp
    "ulp": Rule(("max_ulp", "share"), _ulp_over, _ulp_passes, optional=("mean_ulp",), every_element=True,
                shares=("share",)),
    # msprobe's absolute threshold: absolute error below small_value, relative above it
    "abs_rel": Rule(("small_value", "atol", "rtol"), _abs_rel_over, _abs_rel_passes),
    # torch.testing.assert_close; with ptol, the test kit's close (a share of elements may be over)
    "allclose": Rule(("rtol", "atol"), _allclose_over, _allclose_passes, optional=("ptol",), shares=("ptol",)),
    # the test kit's mixed: a share `matched` within atol + rtol*|golden|, and the largest absolute
    # error at most max_abs (or max_ulps ulps at the largest golden, whichever is larger)
    "mixed": Rule(("rtol", "atol", "matched", "max_abs"), _allclose_over, _mixed_passes, optional=("max_ulps",),
                  shares=("matched",), tally=_mixed_tally),
    # the test kit's stat_rel_err: mean relative error below threshold, maximum below 10 times it;
    # with small_value, an element whose |golden| is below it is judged by absolute error alone
    "stat_rel_err": Rule(("threshold",), _stat_over, _stat_passes, optional=("small_value", "small_atol"),
                         tally=_stat_tally, together=(("small_value", "small_atol"),)),
    # the test kit's cosine: 1 - cos(got, golden) at most rtol
    "cosine": Rule(("rtol",), _cosine_over, _cosine_passes, tally=_cosine_tally),
    # correctly rounded, within the float32 slack
    "exact": Rule((), _exact_over, _exact_passes),
}
