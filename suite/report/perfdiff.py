"""The timing half of `report diff`: each case timed in BASE or NEW gets the gate's verdict
(suite/perf/gate.py), and the cases that are not SAME are listed, regressions first. A case timed
on one side only is UNKNOWN (never fast, never a failure); a run without any timing record adds
nothing, so such a diff reads exactly as it did before timing existed. NEW's own verdicts against
its timing baseline (records' `interleaved`, pytest --timing-baseline) are shown beside the
sequential ones (`beside`): either one's REGRESSION fails the diff (docs/perf-gate.md)."""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

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


NOT_IN_BASE = gate.Verdict(gate.UNKNOWN, None, None, None, None, "not in BASE")


def with_beside(rows: Sequence[Tuple[str, gate.Verdict]],
                beside: Mapping[str, gate.Verdict]) -> List[Tuple[str, gate.Verdict]]:
    """`rows` and a row for each case of `beside` they lack (timed against a baseline in NEW, not
    compared with BASE: UNKNOWN, not in BASE), by key."""
    have = {k for k, _ in rows}
    return sorted([*rows, *((k, NOT_IN_BASE) for k in beside if k not in have)], key=lambda kv: kv[0])


def _verdict(v: gate.Verdict) -> str:
    if v.kind == gate.UNKNOWN:
        return v.reason
    return f"{seconds(v.base_median)} -> {seconds(v.cand_median)}  x{v.ratio:.3f}  p={v.p:.2g}"


def _line(key: str, v: gate.Verdict, b: Optional[gate.Verdict] = None) -> str:
    return f"{v.kind:<10}  {key}  {_verdict(v)}" + ("" if b is None else f"  |  interleaved {b.kind}  {_verdict(b)}")


def _counts(verdicts: Sequence[gate.Verdict]) -> str:
    return ", ".join(f"{n} {k}" for k, n in ((k, sum(v.kind == k for v in verdicts)) for k in ORDER) if n)


def render(rows: List[Tuple[str, gate.Verdict]], neither: int, threshold: float, alpha: float,
           limit: int, beside: Optional[Mapping[str, gate.Verdict]] = None) -> List[str]:
    """The timing table: a head with the counts by verdict, then the REGRESSION, IMPROVED and
    UNKNOWN cases, `limit` lines at most. `beside`: NEW's interleaved verdict by key, shown after
    the sequential one; a case is listed under the first of LISTED that either verdict is."""
    beside = beside or {}
    rows = with_beside(rows, beside)
    if not rows:
        return []
    skipped = f" ({neither} not timed in either: not compared)" if neither else ""
    head = (f"timing, BASE -> NEW median per launch (--perf-threshold {threshold:g}, --perf-alpha {alpha:g}): "
            f"{len(rows)} cases{skipped}: " + _counts([v for _, v in rows]))
    if beside:
        head += (f"; NEW against its timing baseline, interleaved in one run: {len(beside)} cases: "
                 + _counts(list(beside.values())))
    rank = {k: min(LISTED.index(x.kind) if x.kind in LISTED else len(LISTED) for x in (v, beside.get(k, v)))
            for k, v in rows}
    shown = [_line(k, v, beside.get(k)) for i in range(len(LISTED)) for k, v in rows if rank[k] == i]
    out = [head] + [f"  {x}" for x in shown[:limit]]
    if len(shown) > limit:
        out.append(f"  ... and {len(shown) - limit} more")
    return out
