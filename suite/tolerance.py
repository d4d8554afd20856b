"""Judging a backend's output against the float64 golden, by named standards (spec/precision.md).

Every standard measures the same thing first: where a correct kernel may land. A kernel that
widens to float32, takes a few rounding steps and rounds once to the output dtype lands within
[golden - slack, golden + slack] rounded to the output dtype, where slack is a few float32 ulps of
the result, plus one float32 ulp per summed term of the sum of the terms' magnitudes (a
condition-aware budget: a sum of mixed-sign terms has no relative-error bound of its own). A
result inside that rounded interval has zero excess error under every standard; standards differ
in how much excess they then forgive. NaN and infinity must match by position and sign; a
golden past the dtype's range expects infinity; a result flushed to zero is allowed where the
golden is subnormal.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional

import numpy as np

from suite import dtypes
from suite.ops.base import Golden
from suite.yamlfile import FileError, LineDict, load

F32_U = 2.0 ** -24
F32_SUB = 2.0 ** -149
RULES = {
    "share": ("threshold",),
    "ulp": ("max_ulp", "share"),
    "abs_rel": ("small_value", "atol", "rtol"),
    "allclose": ("rtol", "atol"),
    "exact": (),
}
OPTIONAL = {"ulp": ("mean_ulp",)}


@dataclass(frozen=True)
class Standard:
    name: str
    rule: str
    params: Mapping[str, Mapping[str, float]]
    doc: str = ""

    def param(self, key: str, dtype_name: str) -> Optional[float]:
        return self.params.get(key, {}).get(dtype_name)


@dataclass
class ToleranceTable:
    standards: Dict[str, Standard]
    default: str
    operators: Dict[str, str]
    slack_ulps: float
    source: str = ""

    def for_op(self, op: str, override: Optional[str] = None) -> Standard:
        return self.standards[override or self.operators.get(op, self.default)]


def load_table(path: Path) -> ToleranceTable:
    """Read and check the tolerance table; every mistake names file, line and field."""
    doc = load(path)
    if not isinstance(doc, LineDict):
        raise FileError(path, 1, None, "the tolerance table is a mapping")
    allowed = {"default", "operators", "standards", "float32_slack_ulps"}
    for k in doc:
        if k not in allowed:
            raise FileError(path, doc.line_of(k), k, f"unknown key (allowed: {', '.join(sorted(allowed))})")
    stds = doc.get("standards")
    if not isinstance(stds, LineDict) or not stds:
        raise FileError(path, doc.line_of("standards"), "standards", "is a mapping of standard name to its rule")
    standards: Dict[str, Standard] = {}
    for name, body in stds.items():
        where = f"standards.{name}"
        if not isinstance(body, LineDict) or "rule" not in body:
            raise FileError(path, stds.line_of(name), where, "gives a 'rule'")
        rule = body["rule"]
        if rule not in RULES:
            raise FileError(path, body.line_of("rule"), f"{where}.rule",
                            f"unknown rule {rule!r} (known: {', '.join(RULES)})")
        params: Dict[str, Dict[str, float]] = {}
        for key, val in body.items():
            if key in ("rule", "doc"):
                continue
            if key not in RULES[rule] + OPTIONAL.get(rule, ()):
                raise FileError(path, body.line_of(key), f"{where}.{key}", f"not a parameter of rule {rule}")
            if not isinstance(val, LineDict):
                raise FileError(path, body.line_of(key), f"{where}.{key}", "is a mapping of dtype to number")
            params[key] = {}
            for dt, num in val.items():
                if dt not in dtypes.DTYPES:
                    raise FileError(path, val.line_of(dt), f"{where}.{key}.{dt}", "unknown dtype")
                if isinstance(num, bool) or not isinstance(num, (int, float)) or num < 0:
                    raise FileError(path, val.line_of(dt), f"{where}.{key}.{dt}",
                                    f"expected a non-negative number, got {num!r}")
                params[key][dt] = float(num)
        for key in RULES[rule]:
            missing = [d for d in dtypes.DTYPES if d not in params.get(key, {})]
            if missing:
                line = body.line_of(key) if key in body else stds.line_of(name)
                raise FileError(path, line, f"{where}.{key}", f"no value for {', '.join(missing)}")
        standards[name] = Standard(name, rule, params, str(body.get("doc", "")))
    default = doc.get("default")
    if default not in standards:
        raise FileError(path, doc.line_of("default"), "default", f"names no standard ({', '.join(standards)})")
    operators = doc.get("operators", {}) or {}
    for op, std in operators.items():
        if std not in standards:
            raise FileError(path, operators.line_of(op), f"operators.{op}", f"names no standard {std!r}")
    slack = doc.get("float32_slack_ulps", 8)
    if isinstance(slack, bool) or not isinstance(slack, (int, float)) or slack < 0:
        raise FileError(path, doc.line_of("float32_slack_ulps"), "float32_slack_ulps", "a non-negative number")
    return ToleranceTable(standards, default, dict(operators), float(slack), str(path))


@dataclass
class Verdict:
    passed: bool
    standard: str
    n: int
    n_over: int = 0
    share_over: float = 0.0
    mismatches: int = 0              # NaN/inf by position and sign, expected overflow
    max_ulp: float = 0.0             # distance to [golden +- slack], in ulps of the output dtype
    mean_ulp: float = 0.0
    max_abs: float = 0.0
    max_rel: float = 0.0
    rmse: float = 0.0
    worst: List[int] = field(default_factory=list)     # flat indices, worst first
    why: str = ""
    # per element, for messages
    _got: Optional[np.ndarray] = None
    _golden: Optional[np.ndarray] = None
    _ulp: Optional[np.ndarray] = None
    _allowed: Optional[tuple] = None

    def metrics(self) -> dict:
        return {k: getattr(self, k) for k in ("standard", "n", "n_over", "share_over", "mismatches",
                                               "max_ulp", "mean_ulp", "max_abs", "max_rel", "rmse")}


def judge(got: np.ndarray, golden: Golden, out_dtype: np.dtype, standard: Standard,
          slack_ulps: float, worst: int = 5) -> Verdict:
    """Measure `got` (already of the right shape and dtype) against `golden` under `standard`."""
    dt = np.dtype(out_dtype)
    dname = dtypes.name_of(dt)
    fi = dtypes.finfo(dt)
    g = np.asarray(golden.out, dtype=np.float64).reshape(-1)
    scale = np.broadcast_to(np.asarray(golden.scale, dtype=np.float64), golden.out.shape).reshape(-1)
    x = np.asarray(got).astype(np.float64).reshape(-1)
    n = g.size
    if n == 0:
        return Verdict(True, standard.name, 0)

    with np.errstate(all="ignore"):
        k = slack_ulps + golden.nterms
        slack = k * F32_U * np.where(np.isfinite(scale), scale, 0.0) + k * F32_SUB
        fin_g = np.isfinite(g)
        lo = np.where(fin_g, g - slack, g)
        hi = np.where(fin_g, g + slack, g)
        rlo = dtypes.round_to(lo, dt).astype(np.float64)
        rhi = dtypes.round_to(hi, dt).astype(np.float64)
        # A result flushed to zero is allowed where a correct one would be subnormal.
        flush = fin_g & (rlo < fi.tiny) & (rhi > -fi.tiny)
        rlo, rhi = np.where(flush, np.minimum(rlo, 0.0), rlo), np.where(flush, np.maximum(rhi, 0.0), rhi)
        lo, hi = np.where(flush, np.minimum(lo, 0.0), lo), np.where(flush, np.maximum(hi, 0.0), hi)

        inside = (x >= rlo) & (x <= rhi)
        excess = np.where(inside, 0.0, np.minimum(np.abs(x - rlo), np.abs(x - rhi)))
        raw = np.abs(x - np.clip(x, lo, hi))
        overflow_ok = inside & np.isinf(x)                # golden beyond range, got inf
        raw = np.where(overflow_ok, 0.0, raw)
        nan_g, nan_x = np.isnan(g), np.isnan(x)
        special_ok = (nan_g & nan_x) | (np.isinf(g) & (x == g))
        mismatch = (nan_g != nan_x) | (np.isinf(g) & (x != g)) | (fin_g & ~np.isfinite(x) & ~inside) \
            | (fin_g & np.isinf(rlo) & (rlo == rhi) & (x != rlo))
        excess = np.where(special_ok, 0.0, np.where(mismatch, np.inf, excess))
        raw = np.where(special_ok, 0.0, np.where(mismatch, np.inf, raw))

        ulp = raw / dtypes.ulp(np.where(fin_g, g, fi.max), dt)
        ref = np.where(fin_g & (g != 0), np.abs(g), fi.tiny)
        rel_raw = raw / ref
        rel_excess = excess / np.maximum(np.abs(rlo + rhi) / 2, fi.tiny)

        rule = standard.rule
        p = lambda key: standard.param(key, dname)  # noqa: E731
        if rule == "share":
            over = rel_excess > p("threshold")
            ok = over.mean() < p("threshold")
            why = f"{over.mean():.4%} of elements have relative error > {p('threshold'):g} (limit: below that share)"
        elif rule == "ulp":
            over = ulp > p("max_ulp")
            share_ok = over.mean() < p("share")
            mean_lim = p("mean_ulp")
            mean_ok = mean_lim is not None and float(np.mean(ulp)) < mean_lim
            ok = share_ok or mean_ok
            why = f"{over.mean():.4%} of elements are over {p('max_ulp'):g} ulp (limit {p('share'):g})" + (
                f" and the mean ulp error {float(np.mean(ulp)):.3g} is not below {mean_lim:g}" if mean_lim else "")
        elif rule == "abs_rel":
            small = np.abs(g) < p("small_value")
            over = np.where(small, excess > p("atol"), excess / ref > p("rtol"))
            ok = not over.any()
            why = (f"{int(over.sum())} elements over: |golden| < {p('small_value'):g} needs abs error <= "
                   f"{p('atol'):g}, others relative error <= {p('rtol'):g}")
        elif rule == "allclose":
            over = excess > p("atol") + p("rtol") * np.abs(g)
            ok = not over.any()
            why = f"{int(over.sum())} elements over |got - golden| <= {p('atol'):g} + {p('rtol'):g}*|golden|"
        else:  # exact
            over = excess > 0
            ok = not over.any()
            why = f"{int(over.sum())} elements are not a correct rounding of the golden (+- {slack_ulps:g} float32 ulps)"
        over = over | mismatch
        if mismatch.any():
            ok = False
            why = f"{int(mismatch.sum())} elements differ in NaN/inf (position, sign, or expected overflow); " + why

        finite_err = raw[np.isfinite(raw)]
        v = Verdict(
            passed=bool(ok), standard=standard.name, n=n, n_over=int(over.sum()),
            share_over=float(over.mean()), mismatches=int(mismatch.sum()),
            max_ulp=float(np.max(ulp)), mean_ulp=float(np.mean(ulp)) if np.isfinite(ulp).all() else float("inf"),
            max_abs=float(np.max(raw)), max_rel=float(np.max(rel_raw)),
            rmse=float(np.sqrt(np.mean(finite_err ** 2))) if finite_err.size else 0.0,
            why="" if ok else why)
        if not ok:
            # mismatches first, then elements over the standard, each by ulp error, largest first
            # (one float key such as 1e300 + ulp cannot hold the ulps: they vanish in its rounding)
            u = np.where(np.isnan(ulp), np.inf, ulp)
            v.worst = [int(i) for i in np.lexsort((-u, ~over, ~mismatch))[:worst]]
            v._got, v._golden, v._ulp, v._allowed = x, g, ulp, (rlo, rhi)
    return v
