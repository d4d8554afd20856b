"""Judging a backend's output against the float64 golden, by named standards (docs/precision.md).

Every standard measures the same thing first: where a correct kernel may land. A kernel that
widens to float32, takes a few rounding steps and rounds once to the output dtype lands within
[golden - slack, golden + slack] rounded to the output dtype, where slack is a few float32 ulps of
the result, plus for a sum what float32 summation costs (`window`: a budget from the terms, since a
sum of mixed-sign terms has no relative-error bound of its own). A result inside that rounded
interval has zero excess error under every standard; standards differ in how much excess they
then forgive, and none forgives a gross error (`gross_limit`). NaN and infinity must match by
position and sign; a golden past the dtype's range expects infinity; a result flushed to zero is
allowed where the golden is subnormal. Outputs are judged in blocks, so judging needs no memory
proportional to the output.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from suite.common import dtypes
from suite.judge.table import Standard
from suite.judge.rules import Computed, Excess, F32_SUB, F32_TINY, F32_U, Param, RULES, Rule, RuleCount, Whole


@dataclass(frozen=True)
class Element:
    """One output element named in a failure message."""

    index: int                       # flat, in C order
    got: float
    golden: float
    lo: float                        # where a correct kernel may land, in the output dtype
    hi: float
    ulp: float                       # error in ulps of the output dtype
    why: str                         # "mismatch", "gross", "over" or "" (only the largest error)
    abs: float = 0.0                 # the same error, absolute (the distance from the window)


@dataclass
class Verdict:
    passed: bool
    standard: str
    n: int
    n_over: int = 0
    share_over: float = 0.0
    mismatches: int = 0              # NaN/inf by position and sign, expected overflow
    n_gross: int = 0                 # finite elements wrong beyond the gross-error guard
    max_ulp: float = 0.0             # distance to [golden +- slack], in ulps of the output dtype
    mean_ulp: float = 0.0
    max_abs: float = 0.0
    max_rel: float = 0.0
    rmse: float = 0.0
    worst: List[int] = field(default_factory=list)     # flat indices, worst first
    elements: List[Element] = field(default_factory=list)
    why: str = ""

    def metrics(self) -> dict:
        return {k: getattr(self, k) for k in ("standard", "n", "n_over", "share_over", "mismatches",
                                               "n_gross", "max_ulp", "mean_ulp", "max_abs", "max_rel",
                                               "rmse")}


GROSS = 0.25          # default gross-error guard: relative error beyond the window (see gross_limit)
SUM_LAMBDA = 16.0     # the probabilistic sum budget's multiple of sqrt(n) (see window)


def gross_limit(standard: Standard, dtype_name: str) -> float:
    """An element whose relative error beyond the window exceeds this fails the case by itself,
    whatever share of elements it is: 0, NaN, garbage or a flipped sign for a finite golden is not
    rounding, and a rule that forgives a share must not forgive it."""
    v = standard.param("gross", dtype_name)
    return GROSS if v is None else v


def window(g: np.ndarray, scale: np.ndarray, nterms: int, slack_ulps: float,
           path: Optional[np.ndarray] = None, terms: Optional[np.dtype] = None) -> np.ndarray:
    """Half-width of [golden - w, golden + w], where a correct float32 kernel's result lies before
    its final rounding to the output dtype (u = 2^-24, S = sum of the terms' magnitudes).

    Elementwise (nterms = 1): slack_ulps + 1 float32 ulps of |golden|. A sum of n terms adds the
    float32 summation error, u * min(n*S, P + SUM_LAMBDA*(sqrt(n)*|golden| + S)):
    - n*S is the worst case of any order (Higham, Accuracy and Stability, 2nd ed., 4.2); it is the
      budget while n is small;
    - P, the sum of the magnitudes of the running partial sums in memory order, bounds the error
      of the sequential order (each addition errs by at most u times the partial sum it makes):
      with one-signed terms the real error of a float32 sequential sum is a few percent of u*P;
    - the probabilistic term (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019) covers pairwise,
      blocked and atomic orders of random terms, whose rounding errors add like a random walk.
    For mixed-sign terms P is about n^1.5*sigma against n*S = n^2*E|t| for the worst case: at 10^6
    terms the worst case would let a kernel answer 0, and this budget does not.

    A sum whose terms the kernel rounds to a narrower dtype `terms` first (a 16-bit tensor between
    two kernels) adds that rounding: half an ulp of `terms` per term, u_t * S, and half its
    subnormal spacing per term where terms underflow.
    """
    s = np.where(np.isfinite(scale), scale, 0.0)
    if nterms <= 1:
        rel = (slack_ulps + 1.0) * s
    else:
        a = np.where(np.isfinite(g), np.abs(g), 0.0)
        pt = 0.0 if path is None else np.where(np.isfinite(path), path, 0.0)
        rel = slack_ulps * s + np.minimum(nterms * s, pt + SUM_LAMBDA * (math.sqrt(nterms) * a + s))
    w = F32_U * rel + (slack_ulps + nterms) * F32_SUB
    if terms is not None and nterms > 1 and np.dtype(terms) != np.float32:
        ti = dtypes.finfo(terms)
        w = w + 2.0 ** -(ti.mant_bits + 1) * s + nterms * ti.smallest_subnormal / 2
    return w


class _Totals:
    """What judging adds up across blocks: element counts (judged, over, over the rule, mismatched,
    gross), error sums and maxima, and a few candidate elements for the message. The rule's verdict
    reads three of them (rules.RuleCount)."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.n = self.n_over = self.n_rule = self.mismatches = self.n_gross = 0
        self.sum_ulp = self.sq_err = 0.0
        self.max_ulp = self.max_abs = self.max_rel = 0.0
        self.candidates: List[Element] = []
        self.sums: Dict[str, float] = {}          # the rule's tallies (rules.Rule.tally)

    def add(self, tally: Dict[str, float]) -> None:
        for k, v in tally.items():
            self.sums[k] = max(self.sums.get(k, v), v) if k.startswith("max_") else self.sums.get(k, 0.0) + v


@dataclass(frozen=True)
class Path:
    """The way a kernel's float32 result reaches out, beyond one rounding to out's dtype
    (docs/precision.md): `through`, the dtype it is rounded to before the cast to out's;
    `terms`, the dtype a sum's terms are rounded to before they are summed; `vendor`, the result
    as the vendor's arithmetic computes it on that path (Operator.vendor_at: the terms rounded,
    overflow included, and with `flush` float32 subnormals flushed), whose window is accepted too,
    and whose infinity or NaN is matched where the path itself gives one; `kept`, the same
    computation with gradual underflow where `vendor` flushes (a family that may do either): a
    float32 intermediate in the subnormal range (exp(-100)) holds few significant bits, so a kernel
    that keeps it lands outside the golden's window and the flushed computation's alike."""

    through: Optional[np.dtype] = None
    terms: Optional[np.dtype] = None
    vendor: Optional[Computed] = None
    flush: bool = False
    kept: Optional[Computed] = None

    def computations(self) -> List[Tuple[Computed, bool]]:
        """The vendor's computations an element outside the golden's window is judged against,
        each with whether it flushes."""
        return [(c, f) for c, f in ((self.vendor, self.flush), (self.kept, False)) if c is not None]


def judge(got: np.ndarray, golden, out_dtype: np.dtype, standard: Standard,
          slack_ulps: float, *, worst: int = 5, block: int = 1 << 16,
          through: Optional[np.dtype] = None, terms: Optional[np.dtype] = None,
          vendor: Optional[Computed] = None, flush: bool = False,
          kept: Optional[Computed] = None) -> Verdict:
    """Measure `got` (already of the right shape and dtype) against `golden` (a Golden, or a
    GoldenSource read block by block) under `standard`, in `out_dtype`. A kernel that rounds its
    result to `through` (default: `out_dtype`) and then casts it to got's dtype lands in the window
    rounded the same two ways (suite.run.paths.judged_dtype: an operator's result_dtype): a bfloat16 result
    past float16's range is inf in a float16 out, one in float16's subnormal range lands on
    float16's grid, and a float16 result cast to bfloat16 is rounded twice. `terms`, `vendor`,
    `flush` and `kept`: see Path."""
    from suite.golden.source import GoldenSource, Materialized
    src = golden if isinstance(golden, GoldenSource) else Materialized(golden)
    dt = np.dtype(out_dtype)
    dname = dtypes.name_of(dt)
    fi = dtypes.finfo(dt)
    flat = np.ascontiguousarray(got).reshape(-1)
    p = lambda key: standard.param(key, dname)  # noqa: E731
    gross = gross_limit(standard, dname)
    first = dt if through is None else np.dtype(through)
    then = None if first == flat.dtype else flat.dtype
    t = _Totals(worst)
    how = _How(Path(through, terms, vendor, flush, kept), nterms=src.nterms, slack_ulps=slack_ulps, first=first,
               then=then, tiny=fi.tiny)
    grids = tuple(dict.fromkeys((dt, first, flat.dtype)))
    by = _Judging(how=how, dt=dt, fi=fi, rule=RULES[standard.rule], p=p, gross=gross, grids=grids)
    for start, g, scale, path in src.blocks(block):
        x = flat[start:start + g.size].astype(np.float64)
        _measure(t, by, start, x, g=g, scale=scale, path=path)
    return _verdict(t, standard, p, slack_ulps, gross, dt)


@dataclass(frozen=True)
class _How:
    """What every block's window is made of (judge's arguments, resolved once)."""

    path: Path
    nterms: int
    slack_ulps: float
    first: np.dtype                       # the first rounding: `through`, or out's dtype
    then: Optional[np.dtype]              # the cast to out's dtype after it (None: none)
    tiny: float                           # out's smallest normal

    def rounded(self, g: np.ndarray, scale: np.ndarray, path: Optional[np.ndarray],
                extra: float = 0.0) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rlo, rhi, lo, hi): the window around `g` rounded as the kernel rounds, and unrounded,
        both widened to 0 where the rounded ends reach the subnormal range."""
        slack = window(g, scale, self.nterms, self.slack_ulps, path, self.path.terms) + extra
        lo, hi = g - slack, g + slack                   # finite: NaN and inf goldens stay put
        rlo = dtypes.round_to(lo, self.first).astype(np.float64)
        rhi = dtypes.round_to(hi, self.first).astype(np.float64)
        if self.then is not None:
            # rounded twice, as the kernel rounds; a result rounded once, straight to out's dtype,
            # is at least as accurate and lands in the window too
            once_lo = dtypes.round_to(lo, self.then).astype(np.float64)
            once_hi = dtypes.round_to(hi, self.then).astype(np.float64)
            rlo = np.fmin(dtypes.round_to(rlo, self.then).astype(np.float64), once_lo)
            rhi = np.fmax(dtypes.round_to(rhi, self.then).astype(np.float64), once_hi)
        # A result flushed to zero is allowed where a correct one would be subnormal.
        flush = (rlo < self.tiny) & (rhi > -self.tiny)        # (false for NaN and inf goldens)
        rlo, rhi = np.where(flush, np.minimum(rlo, 0.0), rlo), np.where(flush, np.maximum(rhi, 0.0), rhi)
        lo, hi = np.where(flush, np.minimum(lo, 0.0), lo), np.where(flush, np.maximum(hi, 0.0), hi)
        return rlo, rhi, lo, hi

    def vendor_extra(self, flush: bool) -> float:
        """What flushing the running partial sums of a sum may lose: each of its n partial sums
        flushed loses less than float32's smallest normal (0 without flushing)."""
        return self.nterms * F32_TINY if self.nterms > 1 and flush else 0.0


@dataclass(frozen=True)
class _Judging:
    """What every block is judged by, resolved once by judge: the window (how), out's dtype and its
    finfo, the standard's rule and parameters, and the gross-error guard."""

    how: _How
    dt: np.dtype
    fi: Any                               # suite.common.dtypes.finfo(dt)
    rule: Rule
    p: Param
    gross: float
    # the dtypes the result is rounded to on its way (the judged one, `through`, got's own): an
    # ulp is the coarsest of their spacings at the golden (a bfloat16 result in a float16 out lies
    # on float16's subnormal grid, coarser there than bfloat16's)
    grids: Tuple[np.dtype, ...] = ()


def _measure(t: _Totals, by: _Judging, start: int, x: np.ndarray, *, g: np.ndarray, scale: np.ndarray,
             path: np.ndarray) -> None:
    """One block. Most elements of a correct result lie inside the rounded window with finite
    values: for those the error beyond the window is 0 by definition, so only the distance to the
    unrounded window (for the ulp metrics) is computed on every element, and everything else on
    the rest alone. With the vendor's computations (Path.vendor, then Path.kept), an element outside
    the window is also measured against each computation's window, and one inside it has no error either; where
    the computation itself is NaN or infinite (a term past a 16-bit dtype's range), the same NaN or
    infinity is its golden."""
    how, dt, fi, rule, p, gross = by.how, by.dt, by.fi, by.rule, by.p, by.gross
    with np.errstate(all="ignore"):
        rlo, rhi, lo, hi = how.rounded(g, scale, path)
        inside = (x >= rlo) & (x <= rhi)
        for computed, flushes in how.path.computations():
            if inside.all():
                break
            miss = np.flatnonzero(~inside)
            vg, vs, vp = computed(start + miss)
            vrlo, vrhi, vlo, vhi = how.rounded(vg, vs, vp, how.vendor_extra(flushes))
            xm = x[miss]
            special = (np.isnan(xm) & np.isnan(vg)) | (np.isinf(vg) & (xm == vg))
            ok = ((xm >= vrlo) & (xm <= vrhi)) | special
            j = miss[ok]
            if j.size:
                rlo[j], rhi[j], lo[j], hi[j] = vrlo[ok], vrhi[ok], vlo[ok], vhi[ok]
                inside[j] = True
                if special.any():
                    g = g.copy()                       # (a block may be the golden's own array)
                    g[miss[special]] = vg[special]
        rest = np.flatnonzero(~(inside & np.isfinite(x)))      # outside the window, or not finite
        raw = np.abs(x - np.clip(x, lo, hi))
        g_ulp = dtypes.ulp(np.fmin(np.abs(g), fi.max), dt)       # NaN and inf goldens: max's ulp
        for other in by.grids:
            if other != dt:
                g_ulp = np.fmax(g_ulp, dtypes.ulp(np.fmin(np.abs(g), dtypes.finfo(other).max), other))

        xs, gs, ins, rls, rhs = x[rest], g[rest], inside[rest], rlo[rest], rhi[rest]
        fin_g, nan_g, nan_x = np.isfinite(gs), np.isnan(gs), np.isnan(xs)
        # no error: NaN for NaN, the golden's infinity, an infinity in the window (a golden past
        # the range, or at its edge)
        matched = (nan_g & nan_x) | (np.isinf(gs) & (xs == gs)) | (ins & np.isinf(xs))
        mismatch = (nan_g != nan_x) | (np.isinf(gs) & (xs != gs)) | (fin_g & ~np.isfinite(xs) & ~ins) \
            | (fin_g & np.isinf(rls) & (rls == rhs) & (xs != rls))
        excess = np.where(matched, 0.0, np.where(mismatch, np.inf, np.minimum(np.abs(xs - rls), np.abs(xs - rhs))))
        raw[rest] = np.where(matched, 0.0, np.where(mismatch, np.inf, raw[rest]))
        ref = np.where(fin_g & (gs != 0), np.abs(gs), fi.tiny)
        # relative to the window's midpoint, an infinite end counting as the largest finite
        # value: a window [max, inf] (a golden at the edge of the range) has a finite middle
        mid = np.abs(np.clip(rls, -fi.max, fi.max) + np.clip(rhs, -fi.max, fi.max)) / 2
        rel_excess = excess / np.fmax(mid, fi.tiny)              # (a NaN golden's: over tiny)
        is_gross = ~mismatch & (rel_excess > gross)
        ulp = raw / g_ulp
        # relative to |golden| (the smallest normal below it); a zero golden's relative error is 0
        # for a result a correct kernel may return and inf for any other. A NaN here is inf/inf,
        # a mismatch at an infinite golden: inf, as every mismatch.
        rel = np.where(g == 0, np.where(inside, 0.0, np.inf), raw / np.fmax(np.abs(g), fi.tiny))

        if rule.every_element:
            e = Excess(raw, rel, g, np.where(np.isfinite(g) & (g != 0), np.abs(g), fi.tiny), ulp)
            over_all = rule.over(e, p)
            over_all[rest] |= mismatch                 # a mismatch is over every rule
            n_rule = int(np.count_nonzero(over_all))
            over_all[rest] |= is_gross
            n_over = int(np.count_nonzero(over_all))
            over_all[rest] &= ~(mismatch | is_gross)
            plain = np.flatnonzero(over_all)
        else:
            # a mismatch is over every rule (a NaN golden's relative or allclose test is NaN)
            e = Excess(excess, rel_excess, gs, ref, ulp[rest])
            over_rest = rule.over(e, p) | mismatch
            n_rule = int(np.count_nonzero(over_rest))
            n_over = int(np.count_nonzero(over_rest | is_gross))
            plain = rest[over_rest & ~mismatch & ~is_gross]

        if rule.tally is not None:
            t.add(rule.tally(e, p, Whole(g, np.where(inside, g, x))))
        t.n += g.size
        t.n_rule += n_rule
        t.n_over += n_over
        t.mismatches += int(np.count_nonzero(mismatch))
        t.n_gross += int(np.count_nonzero(is_gross))
        t.sum_ulp += float(ulp.sum())                    # inf with a mismatch
        t.max_ulp = max(t.max_ulp, float(ulp.max()))
        t.max_abs = max(t.max_abs, float(raw.max()))
        t.max_rel = max(t.max_rel, float(np.fmax.reduce(rel)), math.inf if mismatch.any() else 0.0)
        # over every element (inf with a mismatch, as max_abs); np.dot would wake BLAS threads
        t.sq_err += float(np.einsum("i,i->", raw, raw))

        # candidates for the failure message: mismatches, gross errors, then elements over, at
        # most `keep` in all; without any, the largest error
        picked = 0
        for why, idx in (("mismatch", rest[mismatch]), ("gross", rest[is_gross]), ("over", plain)):
            idx = _top(idx, ulp, t.keep - picked)
            picked += idx.size
            t.candidates.extend(Element(start + int(j), float(x[j]), float(g[j]), float(rlo[j]), float(rhi[j]),
                                        float(ulp[j]), why, float(raw[j])) for j in idx)
        if not picked:
            j = int(np.argmax(ulp))
            t.candidates.append(Element(start + j, float(x[j]), float(g[j]), float(rlo[j]), float(rhi[j]),
                                        float(ulp[j]), "", float(raw[j])))
        order = {"mismatch": 0, "gross": 1, "over": 2, "": 3}
        t.candidates.sort(key=lambda e: (order[e.why], -e.ulp, e.index))      # (an ulp is never NaN)
        del t.candidates[t.keep:]


def _top(idx: np.ndarray, u: np.ndarray, k: int) -> np.ndarray:
    """The (at most) k of the ascending indices `idx` with the largest `u`, the lowest index first
    among equal values, whatever numpy's selection does with ties."""
    if idx.size <= k:
        return idx
    if k <= 0:
        return idx[:0]
    uu = u[idx]
    kth = np.partition(uu, idx.size - k)[idx.size - k]          # the k-th largest
    above = idx[uu > kth]
    return np.concatenate([above, idx[uu == kth][:k - above.size]])


def _verdict(t: _Totals, standard: Standard, p, slack_ulps: float, gross: float, dt: np.dtype) -> Verdict:
    if t.n == 0:
        return Verdict(True, standard.name, 0)
    mean = t.sum_ulp / t.n
    ok, why = RULES[standard.rule].passes(RuleCount(t.n, t.n_rule, mean, t.sums, dt), p, slack_ulps)
    if t.n_gross:
        why = (f"{t.n_gross} elements are grossly wrong (relative error beyond the allowed window "
               f"> {gross:g}, e.g. 0, garbage or a flipped sign); " + why)
    if t.mismatches:
        why = f"{t.mismatches} elements differ in NaN/inf (position, sign, or expected overflow); " + why
    ok = bool(ok) and not t.n_gross and not t.mismatches
    v = Verdict(passed=ok, standard=standard.name, n=t.n, n_over=t.n_over,
                share_over=t.n_over / t.n, mismatches=t.mismatches, n_gross=t.n_gross,
                max_ulp=t.max_ulp, mean_ulp=mean, max_abs=t.max_abs, max_rel=t.max_rel,
                rmse=math.sqrt(t.sq_err / t.n), why="" if ok else why)
    if not ok:
        v.elements = list(t.candidates)
        v.worst = [e.index for e in v.elements]
    return v
