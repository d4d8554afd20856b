"""`aclnn-conform report diff RUN`: the gate of one run timed against a baseline in itself (pytest
--timing --timing-baseline; docs/perf-gate.md "One run"). Its records hold both sides' rounds (the
candidate's `timing`, the baseline's `interleaved.baseline`), so the verdict is computed again
here, with this command's --perf-threshold and --perf-alpha, by the same gate as two files'
diff (suite/perf/gate.py): no second file is needed, and none could be as fair (the second run's
device is not the first run's). Its other failures make it worse too: one file is the whole
story, and a failing run never reads OK."""
from __future__ import annotations

from typing import List, Mapping, Tuple

from suite.perf import gate
from suite.perf.record import TimingRecord, TimingError, read
from suite.report import perfdiff
from suite.report.results import ResultsError


def rows(doc: Mapping, threshold: float, alpha: float) -> List[Tuple[str, gate.Verdict]]:
    """(key, verdict) for each record timed against the baseline, by key."""
    out = []
    for r in sorted(doc["records"], key=lambda r: r["key"]):
        v = r.get("interleaved")
        if v is None:
            continue
        try:
            b, c = read(v["baseline"]), read(r.get("timing", {"status": "not timed", "reason": "no timing"}))
        except TimingError as e:
            raise ResultsError(f"{r['key']}: {e}") from None
        if isinstance(b, TimingRecord) and isinstance(c, TimingRecord):
            out.append((r["key"], gate.compare(b, c, threshold=threshold, alpha=alpha)))
        else:
            out.append((r["key"], gate.Verdict(gate.UNKNOWN, None, None, None, None, v["reason"])))
    return out


def render(name: str, doc: Mapping, threshold: float, alpha: float, limit: int) -> Tuple[bool, str]:
    """(worse, the text): REGRESSION rows, and failures that are not the run's own performance
    failures (a case the run failed for its REGRESSION is judged again here, with these options)."""
    found = rows(doc, threshold, alpha)
    if not found:
        raise ResultsError(f"{name}: no record was timed against a baseline (pytest --timing "
                           f"--timing-baseline); name BASE and NEW to compare two runs")
    slower = [k for k, v in found if v.kind == gate.REGRESSION]
    other = [r for r in doc["records"] if r["outcome"] == "failed"
             and (r.get("interleaved") or {}).get("verdict") != gate.REGRESSION]
    why = [f"{len(slower)} performance regressions"] * bool(slower) + [f"{len(other)} failed cases"] * bool(other) \
        + [f"{len(doc.get('incidents') or [])} incidents"] * bool(doc.get("incidents"))
    head = f"WORSE: {', '.join(why)}" if why else "OK: no failures, no performance regressions"
    table = perfdiff.render(found, 0, threshold, alpha, limit)
    table[0] = table[0].replace("BASE -> NEW", "BASELINE -> CANDIDATE, interleaved in one run,", 1)
    lines = [head] + table + (["failed cases:"] + [f"  {r['key']}: {r.get('reason') or ''}" for r in other[:limit]]
                              if other else []) + [f"incident: {x}" for x in doc.get("incidents") or []][:limit]
    return bool(why), "\n".join(lines)
