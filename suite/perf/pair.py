"""A record's `interleaved` field (results.json, docs/results-schema.md "interleaved"): the
baseline's timing record, taken round by round with the candidate's (the record's `timing`) in the
same run, and the gate's verdict on the two as the run computed it, with the threshold and alpha
it used. Its own small format, checked on reading like `timing`, so that `aclnn-conform report diff
RUN` can judge such a run alone, and again with its own options, from the rounds kept here."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from suite.perf import gate
from suite.perf.record import _is_num, problems as timing_problems

ORDER = "ABAB"
VERDICTS = (gate.REGRESSION, gate.IMPROVED, gate.SAME, gate.UNKNOWN)
# name -> (kind, may be null): "num" a finite number, "str" text; `baseline` a timing record.
FIELDS = {"order": ("str", False), "baseline": ("timing", False), "verdict": ("str", False),
          "base_median_s": ("num", True), "cand_median_s": ("num", True), "ratio": ("num", True),
          "p": ("num", True), "reason": ("str", False), "threshold": ("num", False), "alpha": ("num", False)}


def make(baseline: Mapping[str, Any], v: gate.Verdict, threshold: float, alpha: float) -> Dict[str, Any]:
    """The field for a case: the baseline's timing JSON (timed or not) and the verdict `v`."""
    return {"order": ORDER, "baseline": dict(baseline), "verdict": v.kind, "base_median_s": v.base_median,
            "cand_median_s": v.cand_median, "ratio": v.ratio, "p": v.p, "reason": v.reason,
            "threshold": float(threshold), "alpha": float(alpha)}


def problems(obj: Any) -> List[str]:
    """Every way an `interleaved` field departs from the schema; empty if none."""
    if not isinstance(obj, Mapping):
        return [f"interleaved is {type(obj).__name__}, not an object"]
    out = [f"interleaved: missing field '{k}'" for k in FIELDS if k not in obj]
    out += [f"interleaved: unknown field {k!r:.40}" for k in obj if k not in FIELDS]
    for k, (kind, nullable) in FIELDS.items():
        if k not in obj or (obj[k] is None and nullable):
            continue
        v = obj[k]
        if kind == "timing":
            out += [f"interleaved.baseline: {p}" for p in timing_problems(v)]
        elif not (_is_num(v) if kind == "num" else isinstance(v, str)):
            out.append(f"interleaved: field '{k}' is {v!r:.40}, expected {'a finite number' if kind == 'num' else 'str'}")
    if not out:
        if obj["order"] != ORDER:
            out.append(f"interleaved: order {obj['order']!r:.40} is not {ORDER}")
        if obj["verdict"] not in VERDICTS:
            out.append(f"interleaved: verdict {obj['verdict']!r:.40} is not one of {', '.join(VERDICTS)}")
    return out


def seconds(s: float) -> str:
    """A time per launch in the unit that keeps it short: '12 us', '1.07 ms' (the gate's tables
    and this message: one format, so a message and a table read the same)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def reason_line(v: gate.Verdict, spec: str, rounds: Optional[int], threshold: float, alpha: float) -> str:
    """A REGRESSION's message: the case fails with it (the caller prefixes the case id)."""
    return (f"performance REGRESSION against the timing baseline {spec}: median {seconds(v.base_median)} -> "
            f"{seconds(v.cand_median)} a launch, x{v.ratio:.3f}, p={v.p:.2g} (interleaved {ORDER}, "
            f"{rounds} rounds each; --perf-threshold {threshold:g}, --perf-alpha {alpha:g})")
