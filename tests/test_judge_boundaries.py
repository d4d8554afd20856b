"""The judge at every boundary of docs/precision.md and cases/tolerances.yaml, per dtype, table-driven:
each standard's element threshold (from both edges of the window, for an elementwise result and for
a sum under either branch of the summation budget), each share and mean limit, msprobe-abs's
small_value / atol / rtol, the gross-error guard, the window itself, the subnormal flush, overflow to
inf, and NaN/inf by position and sign. Each row is checked for its verdict, every metric and the
`why`, word for word.

"Inside" is the last value on the dtype's grid that the threshold allows and "outside" the next
one. Where the table's number is not a value any grid point reaches (1e-3 is no ratio of float16
ulps), "at" is pinned with the number moved onto the outside value (a variant of the standard): at
it the element is still allowed, one grid step further it is not. The grid steps (K_*) are
literal; `test_the_tables_sit_on_the_boundaries` recomputes them from the formulas of
docs/precision.md (`measure` below, written from the page, not from suite/judge/).
Synthetic arrays only."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import ml_dtypes
import numpy as np
import pytest

from suite.common import dtypes
from suite.ops.base import Golden
from suite.judge.table import Standard, load_table
from suite.judge.judging import Verdict, judge
from tests.core_helpers import approx_metrics

ROOT = Path(__file__).resolve().parents[1]
TABLE = load_table(ROOT / "cases" / "tolerances.yaml")
STD = TABLE.standards
SLACK = TABLE.slack_ulps
DT = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16), "float32": np.dtype(np.float32)}
UINT = {"float16": np.uint16, "bfloat16": np.uint16, "float32": np.uint32}
U, SUB = 2.0 ** -24, 2.0 ** -149
INF, NAN = math.inf, math.nan
G = 1.5                                       # the golden of most rows (mid-binade in every dtype)


# -- the formulas of docs/precision.md, written again --------------------------------------------
def info(dt: str) -> Tuple[float, float, int, int]:
    fi = ml_dtypes.finfo(DT[dt])
    return float(fi.max), float(fi.tiny), int(fi.nmant), int(fi.minexp)


def step(x: float, dt: str, k: int) -> float:
    """`x` (a positive value of dt's grid) moved `k` steps along the grid (k < 0: down)."""
    a = np.asarray([x], dtype=np.float64).astype(np.float32).astype(DT[dt])
    assert float(a[0]) == x, "not on the grid"
    bits = a.view(UINT[dt]).astype(np.int64) + k
    return float(bits.astype(UINT[dt]).view(DT[dt]).astype(np.float64)[0])


def half_width(g, scale, nterms: int, path, terms: Optional[str] = None):
    """w of "The window": u*(s+1)*|golden| elementwise; u*(s*S + min(n*S, P + 16*(sqrt(n)*|golden|
    + S))) for a sum of n terms; both plus (s + n) float32 subnormals; a sum whose terms are
    rounded to a 16-bit dtype first adds half its ulp of S and half its subnormal spacing per term."""
    a = np.where(np.isfinite(g), np.abs(g), 0.0)
    s = np.where(np.isfinite(scale), scale, 0.0)
    p = np.where(np.isfinite(path), path, 0.0)
    if nterms <= 1:
        return U * ((SLACK + 1.0) * s) + (SLACK + nterms) * SUB
    w = U * (SLACK * s + np.minimum(nterms * s, p + 16.0 * (math.sqrt(nterms) * a + s))) + (SLACK + nterms) * SUB
    if terms is not None:
        fi = ml_dtypes.finfo(DT[terms])
        w = w + 2.0 ** -(int(fi.nmant) + 1) * s + nterms * float(fi.smallest_subnormal) / 2
    return w


def _rounded_window(g, scale, nterms, path, *, dt, terms, extra=0.0):
    _, tiny, _, _ = info(dt)
    w = half_width(g, scale, nterms, path, terms) + extra
    lo, hi = g - w, g + w
    rlo = dtypes.round_to(lo, DT[dt]).astype(np.float64)
    rhi = dtypes.round_to(hi, DT[dt]).astype(np.float64)
    flush = (rlo < tiny) & (rhi > -tiny)
    rlo, rhi = np.where(flush, np.minimum(rlo, 0), rlo), np.where(flush, np.maximum(rhi, 0), rhi)
    lo, hi = np.where(flush, np.minimum(lo, 0), lo), np.where(flush, np.maximum(hi, 0), hi)
    return rlo, rhi, lo, hi


def measure(g, x, dt: str, *, scale=None, nterms: int = 1, path=None, terms: Optional[str] = None,
            vendor: Optional[Tuple[float, float, float]] = None, flush: bool = True) -> Dict[str, np.ndarray]:
    """Per element: the rounded window (widened to 0 where it reaches the subnormal range), whether
    the result is inside, a mismatch, its error from the unrounded window (raw, in ulps, relative:
    docs/results-schema.md) and its excess beyond the rounded window (absolute, and over the
    window's midpoint: docs/precision.md, "Beyond the window"). `vendor` (the vendor's
    computation's value, S and P, for every element): a result inside its window, which with
    `flush` a sum widens by n float32 smallest normals, is inside, and is measured against it; where
    that value is NaN or infinite, the same is matched, as if it were the golden."""
    fmax, tiny, nmant, minexp = info(dt)
    g, x = np.asarray(g, dtype=np.float64), np.asarray(x, dtype=np.float64)
    scale = np.abs(g) if scale is None else np.broadcast_to(np.asarray(scale, np.float64), g.shape)
    path = scale if path is None else np.broadcast_to(np.asarray(path, np.float64), g.shape)
    with np.errstate(all="ignore"):
        rlo, rhi, lo, hi = _rounded_window(g, scale, nterms, path, dt=dt, terms=terms)
        inside = (x >= rlo) & (x <= rhi)
        if vendor is not None:
            fg, fs, fp = (np.full(g.shape, v) for v in vendor)
            f = _rounded_window(fg, fs, nterms, fp, dt=dt, terms=terms,
                                extra=nterms * 2.0 ** -126 if nterms > 1 and flush else 0.0)
            special = (np.isnan(x) & np.isnan(fg)) | (np.isinf(fg) & (x == fg))
            ok = ~inside & (((x >= f[0]) & (x <= f[1])) | special)
            rlo, rhi, lo, hi = (np.where(ok, b, a) for a, b in zip((rlo, rhi, lo, hi), f))
            g = np.where(ok & special, fg, g)
            inside = inside | ok
        fin = np.isfinite(g)
        mismatch = ((np.isnan(g) != np.isnan(x)) | (np.isinf(g) & (x != g)) | (fin & ~np.isfinite(x) & ~inside)
                    | (fin & np.isinf(rlo) & (rlo == rhi) & (x != rlo)))
        matched = ~mismatch & ((np.isnan(g) & np.isnan(x)) | (np.isinf(g) & (x == g)) | (np.isinf(x) & inside))
        raw = np.where(mismatch, INF, np.where(matched, 0.0, np.maximum(np.maximum(lo - x, x - hi), 0.0)))
        v = np.fmin(np.abs(g), fmax)
        e = np.where(v == 0, minexp, np.frexp(v)[1] - 1)
        ulp = raw / np.ldexp(1.0, np.maximum(e, minexp) - nmant)
        excess = np.where(mismatch, INF, np.where(inside, 0.0, np.minimum(np.abs(x - rlo), np.abs(x - rhi))))
        mid = np.abs(np.clip(rlo, -fmax, fmax) + np.clip(rhi, -fmax, fmax)) / 2
        rel = np.where(mismatch, INF, np.where(g == 0, np.where(inside, 0.0, INF), raw / np.fmax(np.abs(g), tiny)))
    return {"rlo": rlo, "rhi": rhi, "inside": inside, "mismatch": mismatch, "raw": raw, "ulp": ulp,
            "excess": excess, "rel_excess": excess / np.maximum(mid, tiny), "rel": rel}


def metrics(m: Dict[str, np.ndarray]) -> Dict[str, float]:
    n = m["raw"].size
    return {"max_ulp": float(m["ulp"].max()), "mean_ulp": float(m["ulp"].sum() / n),
            "max_abs": float(m["raw"].max()), "max_rel": float(m["rel"].max()),
            "rmse": math.sqrt(float((m["raw"] ** 2).sum()) / n)}


def kit_numbers(std: Standard, dt: str, golden, m: Dict[str, np.ndarray], got) -> Dict[str, float]:
    """What the test kit's rules aggregate (docs/precision.md, "The vendor's test kit"), from
    measure's excess beyond the rounded window: mixed's largest absolute error and its cap (max_abs,
    or max_ulps ulps at the largest finite |golden| rounded to the dtype, the binade's spacing at
    the largest finite value); stat_rel_err's MERE and MARE of excess / (|golden| + 1e-7) over the
    finite pairs outside the small-value domain, and the count inside it over small_atol; the
    cosine of the result (the golden where the result is inside the window) and the golden over
    the finite pairs (two zero vectors: 1, one: 0)."""
    p = lambda key: std.param(key, dt)  # noqa: E731
    fmax, _, nmant, minexp = info(dt)
    g, x = np.asarray(golden, dtype=np.float64), np.asarray(got, dtype=np.float64)
    ex = m["excess"]
    out: Dict[str, float] = {}
    if std.rule == "mixed":
        top = max([abs(v) for v in g if math.isfinite(v)] or [0.0])
        top = min(float(dtypes.round_to(np.asarray([top]), DT[dt]).astype(np.float64)[0]), fmax)
        e = math.frexp(top)[1] - 1 if top else minexp
        spacing = 2.0 ** (max(e, minexp) - nmant)
        lim = p("max_abs") if p("max_ulps") is None else max(p("max_abs"), p("max_ulps") * spacing)
        out.update(max_abs=float(ex.max()), limit=lim)
    if std.rule == "stat_rel_err":
        sv = p("small_value")
        small = np.zeros(g.shape, bool) if sv is None else np.abs(g) < sv
        with np.errstate(all="ignore"):
            pair = np.isfinite(g) & np.isfinite(ex)
            rel = np.where(pair & ~small, ex / (np.abs(g) + 1e-7), 0.0)
        xj = np.where(m["inside"], g, x)
        n_large = int(np.count_nonzero(np.isfinite(g) & np.isfinite(xj) & ~small))
        out.update(mere=float(rel.sum()) / n_large if n_large else 0.0, mare=float(rel.max()),
                   small_over=int(np.count_nonzero(pair & small & (ex > (p("small_atol") or 0.0)))))
    if std.rule == "cosine":
        xj = np.where(m["inside"], g, x)
        fin = np.isfinite(g) & np.isfinite(xj)
        a, b = xj[fin], g[fin]
        xx, gg = float((a * a).sum()), float((b * b).sum())
        out["cos"] = 1.0 if xx == gg == 0 else 0.0 if 0 in (xx, gg) else float((a * b).sum()) / math.sqrt(xx * gg)
    return out


def says(std: Standard, dt: str, n: int, *, n_rule: int, mean: float, n_gross: int, mismatches: int,
         kit: Optional[Dict[str, float]] = None) -> str:
    """The failure's `why`, as the rules word it (`kit`: kit_numbers, for the test kit's rules)."""
    p = lambda key: std.param(key, dt)  # noqa: E731
    k = kit or {}
    rule = {
        "mixed": lambda: (f"{(n - n_rule) / n:.4%} of elements within {p('atol'):g} + {p('rtol'):g}*|golden| (needs "
                          f"{p('matched'):.4%}) and the largest absolute error {k['max_abs']:.4g} "
                          f"(limit {k['limit']:.4g})"),
        "stat_rel_err": lambda: (f"MERE {k['mere']:.4g} (limit below {p('threshold'):g}) and MARE {k['mare']:.4g} "
                                 f"(limit below {10 * p('threshold'):g})"
                                 + (f"; {k['small_over']} elements with |golden| < {p('small_value'):g} over the "
                                    f"absolute error {p('small_atol'):g}" if p("small_value") is not None else "")),
        "cosine": lambda: f"cosine similarity {k['cos']:.9g}: 1 - cos = {1.0 - k['cos']:.4g} (limit {p('rtol'):g})",
        "share": lambda: f"{n_rule / n:.4%} of elements have relative error > {p('threshold'):g} (limit: below that share)",
        "ulp": lambda: (f"{n_rule / n:.4%} of elements are over {p('max_ulp'):g} ulp (limit {p('share'):g})"
                        + (f" and the mean ulp error {mean:.3g} is not below {p('mean_ulp'):g}"
                           if p("mean_ulp") is not None else "")),
        "abs_rel": lambda: (f"{n_rule} elements over: |golden| < {p('small_value'):g} needs abs error <= "
                            f"{p('atol'):g}, others relative error <= {p('rtol'):g}"),
        "allclose": lambda: f"{n_rule} elements over |got - golden| <= {p('atol'):g} + {p('rtol'):g}*|golden|" + (
            f" ({n_rule / n:.4%} of elements, limit {p('ptol'):.4%})" if p("ptol") is not None else ""),
        "exact": lambda: f"{n_rule} elements are not a correct rounding of the golden (+- {SLACK:g} float32 ulps)",
    }[std.rule]()
    if n_gross:
        gross = 0.25 if p("gross") is None else p("gross")
        rule = (f"{n_gross} elements are grossly wrong (relative error beyond the allowed window > {gross:g}, "
                f"e.g. 0, garbage or a flipped sign); ") + rule
    if mismatches:
        rule = f"{mismatches} elements differ in NaN/inf (position, sign, or expected overflow); " + rule
    return rule


def variant(std: Standard, dt: str, **params: float) -> Standard:
    """`std` with some parameters moved, for dt only."""
    new = {k: dict(v) for k, v in std.params.items()}
    for k, v in params.items():
        new.setdefault(k, {})[dt] = v
    return Standard(f"{std.name}", std.rule, new, std.doc)


# -- the rows ------------------------------------------------------------------------------------
@dataclass
class Row:
    std: Standard
    dt: str
    golden: List[float]
    got: List[float]
    passed: bool
    n_over: int
    at: int = 0                        # the element under test
    n_gross: int = 0
    mismatches: int = 0
    scale: Optional[float] = None      # a sum's S, P and n (None: elementwise)
    nterms: int = 1
    path: Optional[float] = None
    kind: str = "over"                 # what the failure message calls the element
    n_rule: Optional[int] = None       # elements over the rule itself (None: n_over)
    terms: Optional[str] = None        # the dtype a sum's terms are rounded to first
    vendor: Optional[Tuple[float, float, float]] = None    # the vendor's computation: value, S, P
    flush: bool = True                 # ... with float32 subnormals flushed


def padded(std: Standard, dt: str, g: float, x: float, *, pad: int, passed: bool, n_over: int,
           spec: Tuple = (None, 1, None), **kw) -> Row:
    """One element under test among pad - 1 correct ones (the golden, exact), in the middle."""
    at = pad // 2
    golden, got = [g] * pad, [g] * pad
    got[at] = x
    return Row(std, dt, golden, got, passed, n_over, at, scale=spec[0], nterms=spec[1], path=spec[2], **kw)


# golden specs: elementwise, a sum whose budget is the worst case n*S (4 terms, S = 8192), a sum
# whose budget is the partial sums' P + 16*(sqrt(n)*|golden| + S) (10^6 terms, S = 1024, P = 32768)
SPECS = {"elementwise": (None, 1, None), "sum n*S": (8192.0, 4, 16384.0), "sum P": (1024.0, 10 ** 6, 32768.0)}


def spec_kw(spec: Tuple) -> Dict[str, Any]:
    """A golden spec (S, n, P) as measure's keywords."""
    return {"scale": spec[0], "nterms": spec[1], "path": spec[2]}

# where the rounded window of golden 1.5 ends, in grid steps from 1.5 (the same both sides)
WINDOW = {("elementwise", "float16"): 0, ("elementwise", "bfloat16"): 0, ("elementwise", "float32"): 7,
          ("sum n*S", "float16"): 6, ("sum n*S", "bfloat16"): 1, ("sum n*S", "float32"): 49152,
          ("sum P", "float16"): 5, ("sum P", "bfloat16"): 1, ("sum P", "float32"): 40672}
# grid steps beyond the window's edge: (the last value the element threshold allows, the first it
# does not), the same from both edges and, but for the ulp rule (measured from the unrounded
# window), for every spec
K_ELEMENT = {
    "cann": {"float16": (1, 2), "bfloat16": (0, 1), "float32": (1258, 1259)},          # rel. excess > t
    "torch": {"float16": (1, 2), "bfloat16": (3, 4), "float32": (100, 101)},           # > atol + rtol*1.5
    "msprobe-abs": {"float16": (1, 2), "bfloat16": (0, 1), "float32": (12, 13)},       # excess/1.5 > rtol
    "strict": {"float16": (0, 1), "bfloat16": (0, 1), "float32": (0, 1)},              # any excess
}
K_ULP = {("elementwise", "float16"): (1, 2), ("elementwise", "bfloat16"): (1, 2), ("elementwise", "float32"): (31, 32),
         ("sum n*S", "float16"): (1, 2), ("sum n*S", "bfloat16"): (0, 1), ("sum n*S", "float32"): (32, 33),
         ("sum P", "float16"): (0, 1), ("sum P", "bfloat16"): (0, 1), ("sum P", "float32"): (32, 33)}
K_GROSS = {"float16": (384, 385), "bfloat16": (48, 49), "float32": (3145728, 3145729)}    # rel. excess > 0.25
K_MEAN = (63, 64)                       # float32 elementwise: ulp error >= 64 from the edge
ATOL_G = {"float16": 2.0 ** -12, "bfloat16": 2.0 ** -50, "float32": 2.0 ** -22}          # below small_value
K_ATOL = {("float16", 1): (64, 65), ("float16", -1): (128, 129), ("bfloat16", 1): (14, 15),
          ("bfloat16", -1): (28, 29), ("float32", 1): (32768, 32769), ("float32", -1): (65536, 65537)}
# elements that make 1 over decide a share rule (1 in 1/t), or that one may be forgiven
SHARE_PAD = {"cann": {"float16": 1000, "bfloat16": 1000, "float32": 10000},
             "msprobe-ulp": {"float16": 1000, "bfloat16": 1000, "float32": 20}}


def _edge(spec: str, dt: str, side: int, k: int) -> float:
    return step(G, dt, side * (WINDOW[(spec, dt)] + k))


def _quantity(std: Standard, dt: str, row: Row) -> float:
    """What the rule compares with its number, for the element under test (oracle)."""
    m = measure([row.golden[row.at]], [row.got[row.at]], dt, scale=row.scale, nterms=row.nterms, path=row.path)
    return {"share": m["rel_excess"], "ulp": m["ulp"], "abs_rel": m["excess"] / np.abs(row.golden[row.at]),
            "allclose": m["excess"]}[std.rule][0]


THRESHOLD_PARAM = {"share": "threshold", "ulp": "max_ulp", "abs_rel": "rtol", "allclose": "atol"}


def element_rows() -> Iterator[Tuple[str, Row]]:
    for name in ("cann", "msprobe-ulp", "torch", "msprobe-abs", "strict"):
        std = STD[name]
        for dt in DT:
            for spec in SPECS:
                k_in, k_out = K_ULP[(spec, dt)] if name == "msprobe-ulp" else K_ELEMENT[name][dt]
                pad = SHARE_PAD.get(name, {}).get(dt, 1)
                forgiven = name == "msprobe-ulp" and dt == "float32"     # the mean escape
                for side, edge in ((1, "upper"), (-1, "lower")):
                    base = f"{name}-{dt}-{spec}-{edge} edge"
                    inside = padded(std, dt, G, _edge(spec, dt, side, k_in), pad=pad, passed=True, n_over=0,
                                    spec=SPECS[spec])
                    outside = padded(std, dt, G, _edge(spec, dt, side, k_out), pad=pad, passed=forgiven, n_over=1,
                                     spec=SPECS[spec])
                    yield f"{base}-inside ({k_in} steps)", inside
                    yield f"{base}-outside ({k_out} steps)", outside
                    if name == "strict":
                        continue                                 # no number: at the edge is inside
                    # at: the number moved onto the outside value, which it then allows
                    q = _quantity(std, dt, outside)
                    params = ({"atol": q, "rtol": 0.0} if std.rule == "allclose" else {THRESHOLD_PARAM[std.rule]: q})
                    if std.rule == "abs_rel":
                        params = {"rtol": q}
                    moved = variant(std, dt, **params)
                    vpad = int(1 / q) if std.rule == "share" else pad
                    yield f"{base}-at (moved onto {k_out} steps)", padded(
                        moved, dt, G, _edge(spec, dt, side, k_out), pad=vpad, passed=True, n_over=0, spec=SPECS[spec])
                    yield f"{base}-past at ({k_out + 1} steps)", padded(
                        moved, dt, G, _edge(spec, dt, side, k_out + 1), pad=vpad, passed=forgiven, n_over=1,
                        spec=SPECS[spec])


def share_rows() -> Iterator[Tuple[str, Row]]:
    """The share limits: 1 over in 1/t elements is at the limit (not below it: fails), 1 in
    1/t + 1 inside, 2 in 1/t outside. msprobe-ulp's float32 element is far enough out that the
    mean escape cannot pass it."""
    for name in ("cann", "msprobe-ulp"):
        std = STD[name]
        for dt in DT:
            n = SHARE_PAD[name][dt]
            k = (1400 if dt == "float32" else K_ULP[("elementwise", dt)][1]) if name == "msprobe-ulp" \
                else K_ELEMENT[name][dt][1]
            x = _edge("elementwise", dt, 1, k)
            yield f"{name}-{dt}-share at (1 in {n})", padded(std, dt, G, x, pad=n, passed=False, n_over=1)
            yield f"{name}-{dt}-share inside (1 in {n + 1})", padded(std, dt, G, x, pad=n + 1, passed=True, n_over=1)
            two = padded(std, dt, G, x, pad=n, passed=False, n_over=2)
            two = dataclasses.replace(two, at=0)    # (the first of equals)
            two.got[0] = x
            yield f"{name}-{dt}-share outside (2 in {n})", two


def mean_rows() -> Iterator[Tuple[str, Row]]:
    """msprobe-ulp float32: a mean ulp error below mean_ulp passes whatever the share. One element
    (share 100%): the mean is its error."""
    std, dt = STD["msprobe-ulp"], "float32"
    k_in, k_out = K_MEAN
    yield "msprobe-ulp-float32-mean inside", padded(std, dt, G, _edge("elementwise", dt, 1, k_in), pad=1,
                                                    passed=True, n_over=1)
    yield "msprobe-ulp-float32-mean outside", padded(std, dt, G, _edge("elementwise", dt, 1, k_out), pad=1,
                                                     passed=False, n_over=1)
    at = padded(std, dt, G, _edge("elementwise", dt, 1, k_in), pad=1, passed=False, n_over=1)
    moved = variant(std, dt, mean_ulp=_quantity(std, dt, at))
    yield "msprobe-ulp-float32-mean at (moved onto the inside value)", dataclasses.replace(at, std=moved)
    yield "msprobe-ulp-float32-mean below at", padded(moved, dt, G, _edge("elementwise", dt, 1, k_in - 1), pad=1,
                                                      passed=True, n_over=1)
    # float16 and bfloat16 have no mean_ulp: one element 2 ulps off in 1000 fails on the share alone
    for d in ("float16", "bfloat16"):
        yield f"msprobe-ulp-{d}-no mean escape", padded(STD["msprobe-ulp"], d, G, _edge("elementwise", d, 1, 2),
                                                        pad=1000, passed=False, n_over=1)


def abs_rows() -> Iterator[Tuple[str, Row]]:
    """msprobe-abs: atol below small_value (at, inside, outside, from both edges), and small_value
    itself, a boundary of the golden: at it the rtol applies."""
    std = STD["msprobe-abs"]
    for dt in DT:
        g = ATOL_G[dt]
        m = measure([g], [g], dt)
        for side, edge in ((1, "upper"), (-1, "lower")):
            k_in, k_out = K_ATOL[(dt, side)]
            end = float(m["rhi" if side > 0 else "rlo"][0])
            x_in, x_out = step(end, dt, side * k_in), step(end, dt, side * k_out)
            base = f"msprobe-abs-{dt}-atol-{edge} edge"
            yield f"{base}-inside ({k_in} steps)", padded(std, dt, g, x_in, pad=1, passed=True, n_over=0)
            yield f"{base}-outside ({k_out} steps)", padded(std, dt, g, x_out, pad=1, passed=False, n_over=1)
            moved = variant(std, dt, atol=abs(x_out - end))
            yield f"{base}-at (moved onto {k_out} steps)", padded(moved, dt, g, x_out, pad=1, passed=True, n_over=0)
            yield f"{base}-past at", padded(moved, dt, g, step(end, dt, side * (k_out + 1)), pad=1, passed=False,
                                            n_over=1)
        small = std.param("small_value", dt)
        # an error the atol allows and the rtol does not (bfloat16: neither allows one grid step)
        k = {"float16": 2, "bfloat16": 1, "float32": 9}[dt]
        for label, gg, ok in (("one step below", step(small, dt, -1), dt != "bfloat16"), ("at", small, False),
                              ("one step above", step(small, dt, 1), False)):
            m = measure([gg], [gg], dt)
            x = step(float(m["rhi"][0]), dt, k)
            yield f"msprobe-abs-{dt}-small_value {label}", padded(std, dt, gg, x, pad=1, passed=ok, n_over=int(not ok))


# elements that let a standard forgive one element over (short of gross): a share of 1 in pad; mixed
# forgives it only where its cap on the absolute error (bfloat16: 1.0) is above 0.375, the largest
# allowed excess at 1.5; cosine forgives any error of one positive element (the same direction);
# MARE (10 t) forgives none of them
GROSS_PAD = {"cann": {"float16": 1001, "bfloat16": 1001, "float32": 10001},
             "msprobe-ulp": {"float16": 1001, "bfloat16": 1001, "float32": 21},
             "close": {"float16": 1001, "bfloat16": 1001, "float32": 10001},
             "mixed": {"float16": 100, "bfloat16": 100, "float32": 100}}
GROSS_FORGIVEN = {("cosine", dt) for dt in DT}
GROSS_REFUSED = {("mixed", "float16"), ("mixed", "float32")}


def gross_rows() -> Iterator[Tuple[str, Row]]:
    """The gross-error guard: a relative excess of 0.25 is allowed, one grid step more is not, under
    every standard; the share standards are given enough elements to forgive one over."""
    for name, std in STD.items():
        for dt in DT:
            k_in, k_out = K_GROSS[dt]
            pad = GROSS_PAD.get(name, {}).get(dt, 1)
            forgives = (name, dt) in GROSS_FORGIVEN or pad > 1
            for side, edge in ((1, "upper"), (-1, "lower")):
                for label, k, gross in (("inside", k_in - 1, 0), ("at", k_in, 0), ("outside", k_out, 1)):
                    ok = forgives and not gross and (name, dt) not in GROSS_REFUSED
                    yield f"gross-{name}-{dt}-{edge}-{label} ({k} steps)", padded(
                        std, dt, G, _edge("elementwise", dt, side, k), pad=pad, passed=ok, n_over=1,
                        n_gross=gross, kind="gross" if gross else "over")
            if dt == "float16":
                moved = variant(std, dt, gross=0.125)
                yield f"gross-{name}-{dt}-at a table's own gross", padded(
                    moved, dt, G, _edge("elementwise", dt, 1, 192), pad=pad,
                    passed=forgives and (name, dt) not in GROSS_REFUSED, n_over=1)
                yield f"gross-{name}-{dt}-past a table's own gross", padded(
                    moved, dt, G, _edge("elementwise", dt, 1, 193), pad=pad, passed=False, n_over=1,
                    n_gross=1, kind="gross")


def _first(pred: Callable[[float], bool], lo: float, hi: float) -> float:
    """The smallest float64 in [lo, hi] where the monotone `pred` holds (pred(hi) must)."""
    a = np.array([lo, hi], dtype=np.float64).view(np.int64)
    lo_b, hi_b = int(a[0]), int(a[1])
    assert pred(hi) and not pred(lo)
    while hi_b - lo_b > 1:
        mid = (lo_b + hi_b) // 2
        if pred(float(np.array([mid], dtype=np.int64).view(np.float64)[0])):
            hi_b = mid
        else:
            lo_b = mid
    return float(np.array([hi_b], dtype=np.int64).view(np.float64)[0])


def window_rows() -> Iterator[Tuple[str, Row]]:
    """The window itself, a boundary of the golden: the smallest golden whose window reaches the
    grid value above 1.5 accepts it under strict, the float64 below does not; the grid value past
    it is refused. The same at the lower edge."""
    std = STD["strict"]
    for dt in DT:
        b, a = step(G, dt, 1), step(G, dt, -1)
        reach_up = lambda g: float(measure([g], [g], dt)["rhi"][0]) >= b  # noqa: E731
        g_up = _first(reach_up, G - 64 * (b - G), b)
        below = float(np.nextafter(g_up, -INF))
        yield f"window-{dt}-upper edge-at", padded(std, dt, g_up, b, pad=1, passed=True, n_over=0)
        yield f"window-{dt}-upper edge-one float64 below", padded(std, dt, below, b, pad=1, passed=False, n_over=1)
        yield f"window-{dt}-upper edge-one grid step past", padded(std, dt, g_up, step(b, dt, 1), pad=1,
                                                                   passed=False, n_over=1)
        leave_down = lambda g: float(measure([g], [g], dt)["rlo"][0]) > a  # noqa: E731
        g_down = float(np.nextafter(_first(leave_down, a, G + 64 * (G - a)), -INF))     # the last reaching a
        yield f"window-{dt}-lower edge-at", padded(std, dt, g_down, a, pad=1, passed=True, n_over=0)
        yield f"window-{dt}-lower edge-one float64 above", padded(std, dt, float(np.nextafter(g_down, INF)), a,
                                                                  pad=1, passed=False, n_over=1)
        yield f"window-{dt}-lower edge-one grid step past", padded(std, dt, g_down, step(a, dt, -1), pad=1,
                                                                   passed=False, n_over=1)


def flush_rows() -> Iterator[Tuple[str, Row]]:
    """The subnormal flush, a boundary of the golden: 0 is allowed for the largest golden whose
    rounded window reaches below the smallest normal, and not for the next grid value (float16's
    and bfloat16's smallest normal itself, float32's 14th normal value: its window is 13.5
    subnormal spacings wide). 0 for a normal golden is gross under every standard, even where
    torch's atol (1e-5) and msprobe-abs's (1e-16, 2^-30) forgive it for bfloat16's and float32's."""
    for dt in DT:
        _, tiny, _, _ = info(dt)
        g = tiny
        while float(measure([g], [g], dt)["rlo"][0]) < tiny:
            g = step(g, dt, 1)
        assert (g == tiny) == (dt != "float32")
        for name, std in STD.items():
            rule_forgives = (dt != "float16" and name in ("torch", "msprobe-abs", "close", "stat_rel_err", "single_bm")
                             or name == "mixed")
            for sign in (1, -1):
                s = "" if sign > 0 else "negative "
                for label, gg, ok in (("last flushed", step(g, dt, -1), True), ("first not", g, False),
                                      ("next", step(g, dt, 1), False)):
                    yield f"flush-{name}-{dt}-{s}{label}", padded(
                        std, dt, sign * gg, sign * 0.0, pad=1, passed=ok, n_over=int(not ok), n_gross=int(not ok),
                        kind="gross", n_rule=0 if rule_forgives else int(not ok))


def terms_rows() -> Iterator[Tuple[str, Row]]:
    """A sum whose terms are rounded to float16 or bfloat16 before they are summed (a 16-bit
    tensor between two kernels): its window's rounded ends are accepted under strict, the grid
    value past each is not; where the terms' rounding moves an end, that end is refused when the
    terms are not declared rounded."""
    std = STD["strict"]
    spec = (3.0, 4, 6.0)                          # S, n, P: four terms of magnitude 0.75
    for dt in DT:
        for terms in ("float16", "bfloat16"):
            m = measure([G], [G], dt, scale=spec[0], nterms=spec[1], path=spec[2], terms=terms)
            plain = measure([G], [G], dt, scale=spec[0], nterms=spec[1], path=spec[2])
            for side, end, beyond in (("upper", m["rhi"][0], 1), ("lower", m["rlo"][0], -1)):
                end = float(end)
                name = f"terms-{dt}-{terms}-{side} end"
                yield f"{name}-at", padded(std, dt, G, end, pad=1, passed=True, n_over=0, spec=spec, terms=terms)
                yield f"{name}-one grid step past", padded(std, dt, G, step(end, dt, beyond), pad=1, passed=False,
                                                           n_over=1, spec=spec,
                                                           terms=terms)
                plain_end = float(plain["rhi" if beyond > 0 else "rlo"][0])
                if plain_end != end:
                    yield f"{name}-undeclared", padded(std, dt, G, end, pad=1, passed=False, n_over=1, spec=spec)


def flushed_rows() -> Iterator[Tuple[str, Row]]:
    """On a core that may flush, the window of the flushed computation is accepted too: a normal
    golden whose flushed computation is 0 accepts the ends of 0's window (float32: nine subnormal
    spacings) and refuses, as gross, the grid value past them; a float32 sum of four terms, whose
    flushed partial sums may lose four smallest normals more, accepts its flushed window's ends
    and not one grid value past, and so does a sum of two terms (two smallest normals more). Each end
    is refused where nothing is flushed."""
    for name, std in (("strict", STD["strict"]), ("cann", STD["cann"])):
        for dt in DT:
            flushed = (0.0, 0.0, 0.0)
            m = measure([G], [G], dt, vendor=flushed)
            end = float(_rounded_window(np.zeros(1), np.zeros(1), 1, np.zeros(1), dt=dt, terms=None)[1][0])
            yield f"flushed-{name}-{dt}-elementwise-0 itself", padded(std, dt, G, 0.0, pad=1, passed=True, n_over=0,
                                                                      vendor=flushed)
            yield f"flushed-{name}-{dt}-elementwise-at the end", padded(std, dt, G, end, pad=1, passed=True,
                                                                        n_over=0, vendor=flushed)
            past = step(end, dt, 1) if end > 0 else float(ml_dtypes.finfo(DT[dt]).smallest_subnormal)
            yield f"flushed-{name}-{dt}-elementwise-one grid step past", padded(
                std, dt, G, past, pad=1, passed=False, n_over=1, vendor=flushed, n_gross=1, kind="gross")
            yield f"flushed-{name}-{dt}-elementwise-nothing flushed", padded(
                std, dt, G, 0.0, pad=1, passed=False, n_over=1, n_gross=1, kind="gross")
            assert bool(m["inside"][0])
        # four terms, and two (the fewest that make a sum: its two partial sums may lose two smallest normals)
        for n, v, label in ((4, 1.0, "sum"), (2, 2.0, "sum of 2")):
            g, spec = 3.0 * 2.0 ** -126, (5.0 * 2.0 ** -126, n, 9.0 * 2.0 ** -126)
            flushed = (v * 2.0 ** -126, v * 2.0 ** -126, (v + 1.0) * 2.0 ** -126)
            m = measure([g], [g], "float32", **spec_kw(spec), vendor=flushed)
            f = _rounded_window(np.full(1, flushed[0]), np.full(1, flushed[1]), n, np.full(1, flushed[2]),
                                dt="float32", terms=None, extra=n * 2.0 ** -126)
            for side, end, beyond in (("upper", float(f[1][0]), 1), ("lower", float(f[0][0]), -1)):
                assert not bool(measure([g], [end], "float32", **spec_kw(spec))["inside"][0])  # beyond the plain window
                yield f"flushed-{name}-float32-{label}-{side} end-at", padded(std, "float32", g, end, pad=1,
                                                                              passed=True, n_over=0, spec=spec,
                                                                              vendor=flushed)
                yield f"flushed-{name}-float32-{label}-{side} end-one grid step past", padded(
                    std, "float32", g, float(np.nextafter(np.float32(end), np.float32(beyond * INF))), pad=1,
                    passed=False, n_over=1, spec=spec, vendor=flushed, n_gross=1, kind="gross")
                yield f"flushed-{name}-float32-{label}-{side} end-nothing flushed", padded(
                    std, "float32", g, end, pad=1, passed=False, n_over=1, spec=spec, n_gross=1, kind="gross")
            assert bool(m["inside"][0])


def vendor_rows() -> Iterator[Tuple[str, Row]]:
    """Where the vendor's computation itself is NaN or infinite (a sum of terms past float16's
    range, which the kernel rounds to float16 first), that NaN or infinity is matched, and nothing
    else non-finite: a finite golden otherwise expects a finite result."""
    spec = (8.0, 4, 16.0)
    for name, std in (("strict", STD["strict"]), ("cann", STD["cann"])):
        for dt in DT:
            for label, v, x, ok in (("NaN for NaN", NAN, NAN, True), ("inf for NaN", NAN, INF, False),
                                    ("inf for inf", INF, INF, True), ("-inf for inf", INF, -INF, False),
                                    ("NaN for -inf", -INF, NAN, False)):
                yield f"vendor-{name}-{dt}-{label}", padded(std, dt, G, x, pad=1, passed=ok, n_over=int(not ok),
                                                            spec=spec,
                                                           vendor=(v, 0.0, 0.0), flush=False, terms="float16",
                                                           mismatches=int(not ok), kind="mismatch")
            yield f"vendor-{name}-{dt}-NaN without it", padded(std, dt, G, NAN, pad=1, passed=False, n_over=1,
                                                               spec=spec, terms="float16",
                                                                mismatches=1, kind="mismatch")


def vendor_path_rows() -> Iterator[Tuple[str, Row]]:
    """The vendor's computation's window is that of its own sum, partial sums P included: a sum of
    10^6 terms whose computation has P = 2^21 (its budget P + 16*(sqrt(n)*|value| + S), about 0.13
    wide) accepts a result at its window's ends, beyond the golden's window, and refuses the grid
    value past them; without P (16*(sqrt(n)*|value| + S) alone, about 0.0015) neither end is inside."""
    spec, computed = SPECS["sum P"], (G + 0.125, 1.0, 2.0 ** 21)
    for name, std in (("strict", STD["strict"]), ("cann", STD["cann"])):
        for dt in DT:
            f = _rounded_window(np.full(1, computed[0]), np.full(1, computed[1]), spec[1], np.full(1, computed[2]),
                                dt=dt, terms=None)
            no_p = _rounded_window(np.full(1, computed[0]), np.full(1, computed[1]), spec[1], np.zeros(1),
                                   dt=dt, terms=None)
            for side, end, beyond in (("upper", float(f[1][0]), 1), ("lower", float(f[0][0]), -1)):
                assert not bool(measure([G], [end], dt, **spec_kw(spec))["inside"][0])    # beyond the golden's
                assert not no_p[0][0] <= end <= no_p[1][0]                                   # and P's own
                yield f"vendor-path-{name}-{dt}-{side} end-at", padded(std, dt, G, end, pad=1, passed=True, n_over=0,
                                                                       spec=spec, vendor=computed, flush=False)
                yield f"vendor-path-{name}-{dt}-{side} end-one grid step past", padded(
                    std, dt, G, step(end, dt, beyond), pad=1, passed=False, n_over=1, spec=spec, vendor=computed,
                    flush=False)


def overflow_rows() -> Iterator[Tuple[str, Row]]:
    """Overflow to inf, a boundary of the golden: from the smallest golden whose window's upper end
    rounds to inf, inf is allowed (and max still); from the smallest whose lower end does, only inf."""
    for dt in DT:
        fmax = info(dt)[0]
        top = 2.0 * fmax
        below = fmax * (1 - 2.0 ** -18)         # (float32's window at max is 9 ulps wide)
        g1 = _first(lambda g: np.isinf(measure([g], [g], dt)["rhi"][0]), below, top)
        g2 = _first(lambda g: np.isinf(measure([g], [g], dt)["rlo"][0]), below, top)
        p1, p2 = float(np.nextafter(g1, -INF)), float(np.nextafter(g2, -INF))
        cases = [("inf below the upper end's", p1, INF, False), ("inf at the upper end's", g1, INF, True),
                 ("max below the upper end's", p1, fmax, True), ("max at the upper end's", g1, fmax, True),
                 ("max below the lower end's", p2, fmax, True), ("max at the lower end's", g2, fmax, False),
                 ("inf at the lower end's", g2, INF, True)]
        for name, std in STD.items():
            for sign in (1, -1):
                s = "" if sign > 0 else "negative "
                for label, g, x, ok in cases:
                    yield f"overflow-{name}-{dt}-{s}{label}", padded(
                        std, dt, sign * g, sign * x, pad=1, passed=ok, n_over=int(not ok), mismatches=int(not ok),
                        kind="mismatch")


def special_rows() -> Iterator[Tuple[str, Row]]:
    """NaN and infinities by position and sign, next to one correct element."""
    cases = [("NaN matched", NAN, NAN, True), ("inf matched", INF, INF, True), ("-inf matched", -INF, -INF, True),
             ("NaN for a number", G, NAN, False), ("a number for NaN", NAN, G, False),
             ("-inf for inf", INF, -INF, False), ("inf for -inf", -INF, INF, False), ("NaN for inf", INF, NAN, False),
             ("inf for NaN", NAN, INF, False), ("inf for a number", G, INF, False),
             ("-inf for a number", G, -INF, False), ("max for inf", INF, "max", False)]
    for name, std in STD.items():
        for dt in DT:
            for label, g, x, ok in cases:
                x = info(dt)[0] if x == "max" else x
                yield f"special-{name}-{dt}-{label}", Row(std, dt, [G, g], [G, x], ok, int(not ok), 1,
                                                          mismatches=int(not ok), kind="mismatch")


def _last_first(over: Callable[[int], bool]) -> Tuple[int, int]:
    """(last k where `over` is false, first where it is true) for a monotone `over` of k >= 0."""
    assert not over(0)
    hi = 1
    while not over(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if over(mid) else (mid, hi)
    return lo, hi


def _kit_ok(std: Standard, dt: str, golden: List[float], got: List[float]) -> bool:
    """The kit rules' verdict from the formulas of docs/precision.md (no mismatch, nothing gross)."""
    p = lambda key: std.param(key, dt)  # noqa: E731
    m = measure(golden, got, dt)
    k = kit_numbers(std, dt, golden, m, got)
    g = np.asarray(golden)
    over = m["excess"] > (p("atol") or 0.0) + (p("rtol") or 0.0) * np.abs(g)
    if std.rule == "mixed":
        return (len(g) - int(over.sum())) / len(g) >= p("matched") and k["max_abs"] <= k["limit"]
    if std.rule == "allclose":
        return int(over.sum()) / len(g) <= p("ptol")
    if std.rule == "stat_rel_err":
        return k["mere"] < p("threshold") and k["mare"] < 10 * p("threshold") and k["small_over"] == 0
    return 1.0 - k["cos"] <= p("rtol")


def _kit_row(std: Standard, dt: str, g: float, x: float, *, pad: int, n_over: int) -> Row:
    golden, got = [g] * pad, [g] * pad
    got[pad // 2] = x
    return Row(std, dt, golden, got, _kit_ok(std, dt, golden, got), n_over, pad // 2)


def _over_count(std: Standard, dt: str, g: float, x: float) -> int:
    """Elements the kit rule counts over for one element x at golden g (kit_numbers' rules)."""
    m = measure([g], [x], dt)
    p = lambda key: std.param(key, dt)  # noqa: E731
    e = float(m["excess"][0])
    if std.rule in ("mixed", "allclose"):
        return int(e > p("atol") + p("rtol") * abs(g))
    if std.rule == "stat_rel_err":
        small = p("small_value") is not None and abs(g) < p("small_value")
        return int(e > p("small_atol")) if small else int(e / (abs(g) + 1e-7) >= 10 * p("threshold"))
    return int(e > 0)


def kit_rows() -> Iterator[Tuple[str, Row]]:
    """The test kit's standards at, inside and outside each number, per dtype, the grid steps found
    by search from the formulas (kit_numbers): mixed's and close's element threshold atol +
    rtol*|golden| (and moved onto the first value over it), mixed's matched share (1 over in 100
    is 0.99, at the limit and allowed; 1 in 99 is not), its cap on the absolute error, fixed
    (max_abs) and from the golden (max_ulps ulps); close's ptol (1 in 1/ptol allowed, 2 not);
    stat_rel_err's MARE (below 10 t: at it fails) and MERE (below t: at it fails); single_bm's
    small-value domain (one grid step below small_value the absolute error is judged against
    small_atol, at it the relative error); cosine's 1 - cos against rtol, two elements moved apart."""
    for dt in DT:
        end = lambda g, side: float(measure([g], [g], dt)["rhi" if side > 0 else "rlo"][0])  # noqa: E731
        for name in ("mixed", "close"):
            std = STD[name]
            thr = lambda k, side, s=std: _over_count(s, dt, G, step(end(G, side), dt, side * k)) > 0  # noqa: E731
            for side, edge in ((1, "upper"), (-1, "lower")):
                k_in, k_out = _last_first(lambda k: thr(k, side))
                x_in, x_out = step(end(G, side), dt, side * k_in), step(end(G, side), dt, side * k_out)
                base = f"kit-{name}-{dt}-element-{edge} edge"
                yield f"{base}-inside ({k_in} steps)", _kit_row(std, dt, G, x_in, pad=1, n_over=0)
                yield f"{base}-outside ({k_out} steps)", _kit_row(std, dt, G, x_out, pad=1, n_over=1)
                e = float(measure([G], [x_out], dt)["excess"][0])
                moved = variant(std, dt, atol=e, rtol=0.0)
                yield f"{base}-at (moved onto {k_out} steps)", _kit_row(moved, dt, G, x_out, pad=1, n_over=0)
                yield f"{base}-past at", _kit_row(moved, dt, G, step(x_out, dt, side), pad=1, n_over=1)
            # the share: one element just over the element threshold among n
            k_out = _last_first(lambda k: thr(k, 1))[1]
            x = step(end(G, 1), dt, k_out)
            n = 100 if name == "mixed" else round(1 / std.param("ptol", dt))
            for label, pad in (("at", n), ("inside", n + 1), ("outside", n - 1)):
                row = _kit_row(std, dt, G, x, pad=pad, n_over=1)
                assert row.passed == (label != "outside"), (name, dt, label)
                yield f"kit-{name}-{dt}-share {label} (1 in {pad})", row
        # mixed's cap on the largest absolute error: fixed, then from the golden (32 ulps at it)
        std = STD["mixed"]
        for label, g in (("max_abs", {"float16": G, "bfloat16": 6.0, "float32": G}[dt]),
                         ("max_ulps", {"float16": 1024.0, "bfloat16": 1536.0, "float32": 2.0 ** 20}[dt])):
            lim = kit_numbers(std, dt, [g], measure([g], [g], dt), [g])["limit"]
            k_in, k_out = _last_first(lambda k: float(measure([g], [step(end(g, 1), dt, k)], dt)["excess"][0]) > lim)
            for what, k, ok in (("inside", k_in, True), ("outside", k_out, False)):
                x = step(end(g, 1), dt, k)
                row = _kit_row(std, dt, g, x, pad=100, n_over=_over_count(std, dt, g, x))
                assert row.passed == ok and row.n_gross == 0, (dt, label, what)
                yield f"kit-mixed-{dt}-cap {label} {what} ({k} steps, limit {lim:g})", row
        # stat_rel_err: MARE (one element among 1000, so that MERE is far below t) and MERE (alone)
        for name in ("stat_rel_err", "single_bm"):
            std = STD[name]
            t = std.param("threshold", dt)
            rel = lambda k: float(measure([G], [step(end(G, 1), dt, k)], dt)["excess"][0]) / (G + 1e-7)  # noqa: E731
            k_in, k_out = _last_first(lambda k: rel(k) >= 10 * t)
            x_in, x_out = step(end(G, 1), dt, k_in), step(end(G, 1), dt, k_out)
            yield f"kit-{name}-{dt}-MARE inside ({k_in} steps)", _kit_row(std, dt, G, x_in, pad=1000, n_over=0)
            yield f"kit-{name}-{dt}-MARE outside ({k_out} steps)", _kit_row(std, dt, G, x_out, pad=1000, n_over=1)
            moved = variant(std, dt, threshold=rel(k_out) / 10)
            at = _kit_row(moved, dt, G, x_out, pad=1000, n_over=1)
            assert not at.passed
            yield f"kit-{name}-{dt}-MARE at (moved onto {k_out} steps): not below", at
            x = step(end(G, 1), dt, 1)
            r = rel(1)
            for label, th, ok in (("at: not below", r, False), ("just above it", float(np.nextafter(r, INF)), True)):
                row = _kit_row(variant(std, dt, threshold=th), dt, G, x, pad=1, n_over=0)
                assert row.passed == ok, (name, dt, label)
                yield f"kit-{name}-{dt}-MERE threshold {label}", row
        std = STD["single_bm"]
        sv, sa = std.param("small_value", dt), std.param("small_atol", dt)
        below = step(sv, dt, -1)
        k_in, k_out = _last_first(lambda k: float(measure([below], [step(end(below, 1), dt, k)], dt)["excess"][0]) > sa)
        for label, g in (("one step below small_value", below), ("at small_value", sv)):
            for what, k in (("inside", k_in), ("outside", k_out)):
                x = step(end(g, 1), dt, k)
                yield f"kit-single_bm-{dt}-{label}-small_atol {what} ({k} steps)", _kit_row(
                    std, dt, g, x, pad=1, n_over=_over_count(std, dt, g, x))
        # cosine: golden (G, -G), the result (G + d, -(G - d)): 1 - cos = 1 - 1/sqrt(1 + (d/G)^2)
        std = STD["cosine"]

        def pair(k: int) -> Tuple[List[float], List[float]]:
            return [G, -G], [step(end(G, 1), dt, k), -step(end(G, -1), dt, -k)]

        def bad(k: int, s: Standard = std) -> bool:
            g, x = pair(k)
            return not _kit_ok(s, dt, g, x)
        k_in, k_out = _last_first(bad)
        for label, k in (("inside", k_in), ("outside", k_out)):
            g, x = pair(k)
            yield f"kit-cosine-{dt}-{label} ({k} steps)", Row(std, dt, g, x, label == "inside", 2, 0)
        g, x = pair(k_out)
        c = kit_numbers(std, dt, g, measure(g, x, dt), x)["cos"]
        moved = variant(std, dt, rtol=1.0 - c)
        yield f"kit-cosine-{dt}-at (moved onto {k_out} steps)", Row(moved, dt, g, x, True, 2, 0)
        g, x = pair(k_out + 1)
        yield f"kit-cosine-{dt}-past at", Row(moved, dt, g, x, False, 2, 0)


ROWS: Dict[str, Row] = {}
for gen in (element_rows, share_rows, mean_rows, abs_rows, gross_rows, window_rows, flush_rows, overflow_rows,
            special_rows, terms_rows, flushed_rows, vendor_rows, vendor_path_rows, kit_rows):
    for key, row in gen():
        assert key not in ROWS, key
        ROWS[key] = row


def _judge(row: Row) -> Verdict:
    g = np.asarray(row.golden, dtype=np.float64)
    with np.errstate(all="ignore"):
        got = np.asarray(row.got, dtype=np.float64).astype(np.float32).astype(DT[row.dt])
    assert np.array_equal(got.astype(np.float64), np.asarray(row.got), equal_nan=True), "not on the grid"
    scale = np.abs(g) if row.scale is None else np.full(g.shape, row.scale)
    path = None if row.path is None else np.full(g.shape, row.path)
    terms = None if row.terms is None else DT[row.terms]
    vendor = None
    if row.vendor is not None:
        def vendor(idx):
            return tuple(np.full(len(idx), v) for v in row.vendor)
    return judge(got, Golden(g, scale, row.nterms, path), DT[row.dt], row.std, SLACK, terms=terms, vendor=vendor,
                 flush=row.flush and row.vendor is not None)


@pytest.mark.parametrize("name", ROWS)
def test_boundary(name: str) -> None:
    row = ROWS[name]
    v = _judge(row)
    m = measure(row.golden, row.got, row.dt, scale=row.scale, nterms=row.nterms, path=row.path, terms=row.terms,
                vendor=row.vendor, flush=row.flush)
    n = len(row.golden)
    want = {"standard": row.std.name, "n": n, "n_over": row.n_over, "share_over": row.n_over / n,
            "mismatches": row.mismatches, "n_gross": row.n_gross, **metrics(m)}
    got = v.metrics()
    assert got == approx_metrics(want, rel=1e-12, abs=0), f"\n got  {got}\n want {want}"
    n_rule = row.n_over if row.n_rule is None else row.n_rule
    why = "" if row.passed else says(row.std, row.dt, n, n_rule=n_rule, mean=want["mean_ulp"], n_gross=row.n_gross,
                                     mismatches=row.mismatches, kit=kit_numbers(row.std, row.dt, row.golden, m, row.got))
    assert (v.passed, v.why) == (row.passed, why), (row.got[row.at], row.golden[row.at])
    if row.passed:
        assert (v.worst, v.elements) == ([], [])
    else:
        e = v.elements[0]
        assert (v.worst[0], e.index, e.why) == (row.at, row.at, row.kind if row.n_over else "")
        for a, b in ((e.got, row.got[row.at]), (e.golden, row.golden[row.at]), (e.lo, m["rlo"][row.at]),
                     (e.hi, m["rhi"][row.at]), (e.ulp, m["ulp"][row.at])):
            assert a == b or (math.isnan(a) and math.isnan(b)), (e, a, b)


# -- the literal tables against the formulas ------------------------------------------------------
def _k_of(dt: str, spec: str, side: int, over: Callable[[Dict[str, np.ndarray], float], bool]) -> Tuple[int, int]:
    """(last, first) grid steps beyond the window's edge where `over` holds, by search."""
    g = ATOL_G[dt] if spec == "atol" else G
    sc, n, p = (None, 1, None) if spec == "atol" else SPECS[spec]
    m0 = measure([g], [g], dt, scale=sc, nterms=n, path=p)
    edge = float(m0["rhi" if side > 0 else "rlo"][0])

    def bad(k: int) -> bool:
        x = step(edge, dt, side * k)
        return over(measure([g], [x], dt, scale=sc, nterms=n, path=p), g)
    return _last_first(bad)


def test_the_tables_sit_on_the_boundaries() -> None:
    for (spec, dt), k in WINDOW.items():
        m = measure([G], [G], dt, **spec_kw(SPECS[spec]))
        assert (m["rlo"][0], m["rhi"][0]) == (step(G, dt, -k), step(G, dt, k)), (spec, dt)
    t = lambda name, key, dt: STD[name].param(key, dt)  # noqa: E731
    rules = {"cann": lambda dt: lambda m, g: m["rel_excess"][0] > t("cann", "threshold", dt),
             "torch": lambda dt: lambda m, g: m["excess"][0] > t("torch", "atol", dt) + t("torch", "rtol", dt) * g,
             "msprobe-abs": lambda dt: lambda m, g: m["excess"][0] / g > t("msprobe-abs", "rtol", dt),
             "strict": lambda dt: lambda m, g: m["excess"][0] > 0}
    for dt in DT:
        for spec in SPECS:
            for side in (1, -1):
                for name, rule in rules.items():
                    assert _k_of(dt, spec, side, rule(dt)) == K_ELEMENT[name][dt], (name, dt, spec, side)
                ulp = _k_of(dt, spec, side, lambda m, g: m["ulp"][0] > t("msprobe-ulp", "max_ulp", dt))
                assert ulp == K_ULP[(spec, dt)], (dt, spec, side)
        for side in (1, -1):
            assert _k_of(dt, "elementwise", side, lambda m, g: m["rel_excess"][0] > 0.25) == K_GROSS[dt]
            assert _k_of(dt, "atol", side, lambda m, g: m["excess"][0] > t("msprobe-abs", "atol", dt)) \
                == K_ATOL[(dt, side)]
    assert _k_of("float32", "elementwise", 1, lambda m, g: m["ulp"][0] >= 64) == K_MEAN


def test_every_boundary_has_rows() -> None:
    """At least the kinds of row the module promises, per dtype and standard."""
    for dt in DT:
        for name in STD:
            assert any(k.startswith(f"gross-{name}-{dt}-") for k in ROWS)
            assert sum(k.startswith(f"flush-{name}-{dt}-") for k in ROWS) == 6
            assert sum(k.startswith(f"overflow-{name}-{dt}-") for k in ROWS) == 14
            assert sum(k.startswith(f"special-{name}-{dt}-") for k in ROWS) == 12
        for name in ("cann", "msprobe-ulp", "torch", "msprobe-abs"):
            assert sum(k.startswith(f"{name}-{dt}-") and "-at (" in k for k in ROWS) >= 6
        for name, least in (("mixed", 15), ("close", 11), ("stat_rel_err", 5), ("single_bm", 9), ("cosine", 4)):
            assert sum(k.startswith(f"kit-{name}-{dt}-") for k in ROWS) >= least, name
    assert len(ROWS) > 800
