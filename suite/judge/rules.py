"""The rules a standard is built from: what each counts as excess error (Excess) and when a tally of
it passes (docs/precision.md, "Standards")."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

import numpy as np



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
class RuleCount:
    """What a rule's verdict reads: elements judged, how many its `over` flagged (every mismatch
    among them), the mean ulp error (inf when some error is infinite)."""

    n: int
    n_rule: int
    mean_ulp: float


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
    return _none_over(t, f"{t.n_rule} elements over |got - golden| <= {p('atol'):g} + {p('rtol'):g}*|golden|")


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
    # torch.testing.assert_close
    "allclose": Rule(("rtol", "atol"), _allclose_over, _allclose_passes),
    # correctly rounded, within the float32 slack
    "exact": Rule((), _exact_over, _exact_passes),
}
