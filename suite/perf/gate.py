"""The performance gate: is a candidate's kernel slower than the baseline's, beyond noise?

Two conditions, both required, because each alone misleads: a significance test alone flags a
1 % change measured very precisely (real, but no regression worth a red CI), an effect threshold
alone flags one noisy round. So REGRESSION needs a one-sided Mann-Whitney U test on the round
medians with p <= alpha AND a median at least `threshold` slower; IMPROVED is the same with the
roles swapped. Mann-Whitney because round medians are not normal (a round that caught a 2x outlier
or a clock change is far off): it uses ranks, so one wild round moves p by one rank, not by its
size. What cannot be judged is UNKNOWN with its reason, never a failure: too few rounds, a spread
(IQR) too wide for the threshold to mean anything, host against device clock, cold against warm
cache. Why these numbers: docs/perf-gate.md."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from suite.perf.record import TimingRecord

REGRESSION, IMPROVED, SAME, UNKNOWN = "REGRESSION", "IMPROVED", "SAME", "UNKNOWN"
THRESHOLD = 0.10
ALPHA = 0.01
MIN_ROUNDS = 5
MAX_IQR = 0.10


@dataclass(frozen=True)
class Verdict:
    """The gate's answer for one case. `ratio` is candidate median over baseline median; `p` the
    one-sided p-value in the direction of the ratio (slower: candidate greater); None where the
    test was not run (UNKNOWN before it); the medians are None for a side that was not timed."""
    kind: str
    base_median: Optional[float]
    cand_median: Optional[float]
    ratio: Optional[float]
    p: Optional[float]
    reason: str


def compare(base: TimingRecord, cand: TimingRecord, *, threshold: float = THRESHOLD, alpha: float = ALPHA,
            min_rounds: int = MIN_ROUNDS, max_iqr: float = MAX_IQR) -> Verdict:
    """The verdict on `cand` against `base` (docs/perf-gate.md). Boundaries are inclusive on the
    side of judging: exactly `min_rounds` rounds, an IQR of exactly `max_iqr` of the median, a
    ratio of exactly 1 + threshold and p exactly alpha all count."""
    def unknown(why: str, ratio: Optional[float] = None) -> Verdict:
        return Verdict(UNKNOWN, base.median_s, cand.median_s, ratio, None, why)

    if base.clock != cand.clock:
        return unknown(f"clocks differ ({base.clock} vs {cand.clock}): a host clock times launches, "
                       f"not kernels")
    if base.cache != cand.cache:
        return unknown(f"cache {base.cache} vs {cand.cache}: a warm cache is not the same measurement")
    for side, r in (("BASE", base), ("NEW", cand)):
        if len(r.rounds) < min_rounds:
            return unknown(f"{side} has {len(r.rounds)} rounds, fewer than {min_rounds}")
    for side, r in (("BASE", base), ("NEW", cand)):
        if r.iqr_s > max_iqr * r.median_s:
            return unknown(f"{side}'s IQR is {r.iqr_s / r.median_s:.1%} of its median, over {max_iqr:.0%}: "
                           f"too noisy to judge")
    ratio = cand.median_s / base.median_s
    try:
        from scipy.stats import mannwhitneyu   # lazily: only a diff with timing pays scipy's import
    except ImportError:
        return unknown("scipy is not installed: no significance test (pip install scipy)", ratio)
    slower = ratio >= 1.0
    p = float(mannwhitneyu(cand.rounds, base.rounds, alternative="greater" if slower else "less").pvalue)
    effect = ratio >= 1.0 + threshold if slower else base.median_s / cand.median_s >= 1.0 + threshold
    if p <= alpha and effect:
        kind = REGRESSION if slower else IMPROVED
        return Verdict(kind, base.median_s, cand.median_s, ratio, p,
                       f"{'slower' if slower else 'faster'} by at least {threshold:.0%} and p <= {alpha:g}")
    why = (f"p {p:.3g} > {alpha:g}" if p > alpha else "") + \
          ("; " if p > alpha and not effect else "") + \
          ("" if effect else f"the change is under {threshold:.0%}")
    return Verdict(SAME, base.median_s, cand.median_s, ratio, p, why)
