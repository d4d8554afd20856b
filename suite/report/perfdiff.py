"""The timing half of `report diff`: each case timed in BASE or NEW gets the gate's verdict
(suite/perf/gate.py), and the cases that are not SAME are listed, regressions first. A case timed
on one side only is UNKNOWN (never fast, never a failure); a run without any timing record adds
nothing, so such a diff reads exactly as it did before timing existed."""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Tuple

from suite.perf import gate
from suite.perf.pair import seconds  # noqa: F401 (its home moved there; still importable here)
from suite.perf.record import NotTimed, TimingRecord, read

ORDER = (gate.REGRESSION, gate.IMPROVED, gate.SAME, gate.UNKNOWN)
LISTED = (gate.REGRESSION, gate.IMPROVED, gate.UNKNOWN)


def _one_sided(side: str, t: Optional[object]) -> gate.Verdict:
    why = f"no timing record in {side}" if t is None else f"not timed in {side}: {t.reason}"
    return gate.Verdict(gate.UNKNOWN, None, None, None, None, why)


def timing_rows(base: Mapping, new: Mapping, threshold: float = gate.THRESHOLD,
                alpha: float = gate.ALPHA) -> Tuple[List[Tuple[str, gate.Verdict]], int]:
    """(key, verdict) for each case of both runs that either timed, by key; and how many cases
    both runs recorded as not timed (counted, not listed)."""
    b = {r["key"]: r for r in base["records"]}
    rows, neither = [], 0
    for nr in sorted(new["records"], key=lambda r: r["key"]):
        br = b.get(nr["key"])
        if br is None or ("timing" not in br and "timing" not in nr):
            continue
        bt = read(br["timing"]) if "timing" in br else None
        nt = read(nr["timing"]) if "timing" in nr else None
        if isinstance(bt, TimingRecord) and isinstance(nt, TimingRecord):
            rows.append((nr["key"], gate.compare(bt, nt, threshold=threshold, alpha=alpha)))
        elif isinstance(bt, TimingRecord):
            rows.append((nr["key"], _one_sided("NEW", nt)))
        elif isinstance(nt, TimingRecord):
            rows.append((nr["key"], _one_sided("BASE", bt)))
        elif isinstance(bt, NotTimed) and isinstance(nt, NotTimed):
            neither += 1
    return rows, neither


def _line(key: str, v: gate.Verdict) -> str:
    if v.kind == gate.UNKNOWN:
        return f"{v.kind:<10}  {key}  {v.reason}"
    return (f"{v.kind:<10}  {key}  {seconds(v.base_median)} -> {seconds(v.cand_median)}  x{v.ratio:.3f}  "
            f"p={v.p:.2g}")


def render(rows: List[Tuple[str, gate.Verdict]], neither: int, threshold: float, alpha: float,
           limit: int) -> List[str]:
    """The timing table: a head with the counts by verdict, then the REGRESSION, IMPROVED and
    UNKNOWN cases, `limit` lines at most."""
    if not rows:
        return []
    counts: Dict[str, int] = {k: sum(v.kind == k for _, v in rows) for k in ORDER}
    skipped = f" ({neither} not timed in either: not compared)" if neither else ""
    head = (f"timing, BASE -> NEW median per launch (--perf-threshold {threshold:g}, --perf-alpha {alpha:g}): "
            f"{len(rows)} cases{skipped}: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    shown = [_line(k, v) for kind in LISTED for k, v in rows if v.kind == kind]
    out = [head] + [f"  {x}" for x in shown[:limit]]
    if len(shown) > limit:
        out.append(f"  ... and {len(shown) - limit} more")
    return out
