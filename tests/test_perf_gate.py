"""The performance gate (suite/perf/gate.py) at, inside and outside each of its boundaries: the
number of rounds, the one-sided p-value against alpha, the median ratio against 1 + threshold, the
IQR against max_iqr of the median, and the clocks and caches it refuses to compare.

The p-values are exact and known: with 5 rounds a side and no ties scipy's Mann-Whitney U is the
exact permutation test, so p = (orderings of the 10 values with at most k inversions) / C(10, 5):
k = 0 -> 1/252, k = 1 -> 2/252, k = 2 -> 4/252 (the partitions of 0, 1, 2)."""
from __future__ import annotations

import subprocess
import sys
from math import comb
from typing import Sequence

import numpy as np
import pytest

from suite.perf import gate
from suite.perf.record import TimingRecord

BASE5 = [0.95, 0.97, 1.0, 1.02, 1.04]          # median 1.0, IQR 5 %
SLOW5 = [1.08, 1.09, 1.1, 1.11, 1.12]          # median 1.1: ratio exactly 1.10, all above BASE5


def rec(rounds: Sequence[float], clock: str = "device", cache: str = "cold") -> TimingRecord:
    return TimingRecord.of_rounds(rounds, clock=clock, source="simulated", cache=cache, launches=100,
                                  nbytes=1 << 20)


def verdict(base: Sequence[float], cand: Sequence[float], **kw) -> gate.Verdict:
    return gate.compare(rec(base), rec(cand), **kw)


def test_a_clear_slowdown_is_a_regression_with_both_medians_ratio_and_p() -> None:
    rng = np.random.default_rng(1)
    base = list(1e-5 * (1 + 0.01 * rng.standard_normal(10)))
    cand = [1.2 * x for x in base]
    v = verdict(base, cand)
    assert v.kind == gate.REGRESSION
    assert v.ratio == pytest.approx(1.2)
    assert v.base_median == pytest.approx(float(np.median(base)))
    assert v.cand_median == pytest.approx(1.2 * float(np.median(base)))
    assert v.p < 1e-3


def test_the_same_rounds_are_same() -> None:
    v = verdict(BASE5, BASE5)
    assert v.kind == gate.SAME and v.ratio == 1.0 and v.p > 0.5


# -- rounds: at least min_rounds a side ----------------------------------------------------------
def test_exactly_five_rounds_a_side_are_judged() -> None:
    v = verdict(BASE5, SLOW5)
    assert v.kind == gate.REGRESSION
    assert v.p == pytest.approx(1 / comb(10, 5))


@pytest.mark.parametrize("side", ["base", "cand"])
def test_four_rounds_on_either_side_are_unknown_never_a_failure(side: str) -> None:
    base, cand = (BASE5[:4], SLOW5 * 2) if side == "base" else (BASE5 * 2, SLOW5[:4])
    v = verdict(base, cand)
    assert v.kind == gate.UNKNOWN and v.p is None
    assert v.reason == f"{'BASE' if side == 'base' else 'NEW'} has 4 rounds, fewer than 5"


def test_three_rounds_are_unknown_even_for_a_doubling() -> None:
    v = verdict([1.0, 1.01, 1.02], [2.0, 2.01, 2.02])
    assert v.kind == gate.UNKNOWN and "3 rounds" in v.reason


def test_min_rounds_is_configurable() -> None:
    assert verdict(BASE5[:4], SLOW5[:4], min_rounds=4).kind != gate.UNKNOWN


# -- p against alpha ------------------------------------------------------------------------------
ONE_INVERSION = [0.95, 0.97, 1.0, 1.02, 1.085]     # only 1.085 > 1.08: p = 2/252 = 0.0079
TWO_INVERSIONS = [0.95, 0.97, 1.0, 1.02, 1.095]    # 1.095 > 1.08, 1.09: p = 4/252 = 0.0159


def test_p_just_below_alpha_with_the_effect_is_a_regression() -> None:
    v = verdict(ONE_INVERSION, SLOW5)
    assert v.p == pytest.approx(2 / comb(10, 5)) and v.p < gate.ALPHA
    assert v.kind == gate.REGRESSION


def test_p_just_above_alpha_is_same_whatever_the_effect() -> None:
    v = verdict(TWO_INVERSIONS, SLOW5)
    assert v.p == pytest.approx(4 / comb(10, 5)) and v.p > gate.ALPHA
    assert v.ratio == pytest.approx(1.1)
    assert v.kind == gate.SAME and v.reason.startswith("p 0.0159 > 0.01")


def test_p_exactly_alpha_counts_and_one_step_below_does_not() -> None:
    p = verdict(ONE_INVERSION, SLOW5).p
    assert verdict(ONE_INVERSION, SLOW5, alpha=p).kind == gate.REGRESSION
    assert verdict(ONE_INVERSION, SLOW5, alpha=float(np.nextafter(p, 0))).kind == gate.SAME


# -- the effect: median ratio against 1 + threshold -------------------------------------------------
def test_ratio_exactly_one_point_one_is_a_regression() -> None:
    v = verdict(BASE5, SLOW5)
    assert v.ratio == 1.1 == 1.0 + gate.THRESHOLD
    assert v.kind == gate.REGRESSION


def test_ratio_one_step_under_one_point_one_is_same_though_significant() -> None:
    cand = [1.08, 1.09, float(np.nextafter(1.1, 0)), 1.11, 1.12]
    v = verdict(BASE5, cand)
    assert v.ratio < 1.1 and v.p == pytest.approx(1 / 252)
    assert v.kind == gate.SAME and v.reason == "the change is under 10%"


def test_five_percent_slower_and_significant_is_same() -> None:
    v = verdict(BASE5, [1.045, 1.047, 1.05, 1.052, 1.054])
    assert v.p == pytest.approx(1 / 252) and v.kind == gate.SAME


def test_threshold_is_configurable() -> None:
    assert verdict(BASE5, [1.045, 1.047, 1.05, 1.052, 1.054], threshold=0.05).kind == gate.REGRESSION


# -- IMPROVED: the same test with the roles swapped ---------------------------------------------------
def test_a_clear_speed_up_is_improved_and_its_boundary_is_symmetric() -> None:
    v = verdict(SLOW5, BASE5)          # BASE is exactly 10 % slower than NEW
    assert v.kind == gate.IMPROVED and v.p == pytest.approx(1 / 252)
    assert v.ratio == pytest.approx(1 / 1.1)
    cand = [0.95, 0.97, float(np.nextafter(1.0, 2)), 1.02, 1.04]
    assert verdict(SLOW5, cand).kind == gate.SAME


def test_improved_needs_p_too() -> None:
    assert verdict(SLOW5, TWO_INVERSIONS).kind == gate.SAME


# -- the spread: IQR against max_iqr of the median ------------------------------------------------------
WIDE = [9.0, 9.5, 10.0, 10.5, 11.0]               # IQR exactly 1.0 = 10 % of the median 10.0


def test_iqr_exactly_ten_percent_is_judged() -> None:
    assert rec(WIDE).iqr_s == 1.0 and rec(WIDE).median_s == 10.0
    assert verdict(WIDE, [x * 1.2 for x in WIDE]).kind == gate.REGRESSION


@pytest.mark.parametrize("side", ["BASE", "NEW"])
def test_iqr_just_over_ten_percent_on_either_side_is_unknown(side: str) -> None:
    wider = [9.0, 9.5, 10.0, float(np.nextafter(10.5, 11)), 11.0]
    base, cand = (wider, [12.0, 12.1, 12.2, 12.3, 12.4]) if side == "BASE" else ([8.0, 8.1, 8.2, 8.3, 8.4], wider)
    v = verdict(base, cand)
    assert v.kind == gate.UNKNOWN and v.reason.startswith(f"{side}'s IQR is 10.0% of its median, over 10%")


def test_one_wild_round_does_not_make_noise_a_regression() -> None:
    base = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.01]
    cand = list(base)
    cand[3] = 2.0                                  # a round that caught a 2x outlier
    assert verdict(base, cand).kind == gate.SAME


# -- what is never compared ---------------------------------------------------------------------------------
def test_host_clock_against_device_clock_is_unknown() -> None:
    v = gate.compare(rec(BASE5, clock="host"), rec([2 * x for x in BASE5]))
    assert v.kind == gate.UNKNOWN and v.reason.startswith("clocks differ (host vs device)")


def test_cold_cache_against_warm_cache_is_unknown() -> None:
    v = gate.compare(rec(BASE5), rec([2 * x for x in BASE5], cache="warm"))
    assert v.kind == gate.UNKNOWN and v.reason.startswith("cache cold vs warm")


def test_without_scipy_it_is_unknown_with_the_reason(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    v = verdict(BASE5, [2 * x for x in BASE5])
    assert v.kind == gate.UNKNOWN and v.reason.startswith("scipy is not installed")
    assert v.ratio == pytest.approx(2.0)


def test_importing_the_gate_does_not_import_scipy() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, suite.perf.gate, suite.report.compare; "
                          "print('scipy' in sys.modules)"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_tied_rounds_of_a_coarse_clock_are_judged() -> None:
    """A coarse timer repeats values: the test then takes the tie-corrected normal approximation."""
    base = [10.0, 10.0, 10.0, 10.5, 10.0, 10.0, 10.5, 10.0, 10.0, 10.0]
    assert verdict(base, [12.0 if x == 10.0 else 12.5 for x in base]).kind == gate.REGRESSION
    assert verdict(base, base).kind == gate.SAME
