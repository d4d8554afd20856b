"""Comparing runs: merging the results.json of a run's shards into one, and the diff of two runs
behind the CI gate (`aclnn-conform report merge` / `report diff`; the rules: docs/ci-gate.md).
The schema these read and write is suite/report/results.py's."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from suite.perf import gate
from suite.report import newfailures, perfdiff, rundiff, shard, trust
from suite.report.verdict import backend_change
from suite.report.results import RUN_FIELDS, ResultsError, is_complete, make_document, number

# -- merge -------------------------------------------------------------------------------------
SAME_RUN = ("schema_version", "suite_version", "manifest_hash", "tolerances_hash", "backend", "standard_override",
            "timing_baseline", "accuracy_baseline")


def _shard_of(spec: Any) -> Optional[Tuple[int, int]]:
    """A document's (K, N); None for an unsharded run, or a spec that is not K/N (shard.parse)."""
    if not isinstance(spec, str):
        return None
    try:
        return shard.parse(spec)
    except shard.ShardError:
        return None


def shard_set(docs: Sequence[Tuple[str, Mapping]]) -> List[str]:
    """What keeps the shards from being one complete set: one K/N scheme, every K once. Empty when
    they are complete (a single unsharded run is complete by itself)."""
    specs = [(name, d.get("shard")) for name, d in docs]
    if len(docs) == 1 and specs[0][1] is None:
        return []
    problems, parts = [], {}
    for name, spec in specs:
        kn = _shard_of(spec)
        if kn is None:
            problems.append(f"{name}: not a shard (shard {spec!r}); merge the shards of one --shard K/N run")
            continue
        k, n = kn
        parts.setdefault(n, []).append((k, name))
    if len(parts) > 1:
        problems.append("shards of different schemes: " + "; ".join(
            _listed(sorted(k for k, _ in v), n) for n, v in sorted(parts.items())))
    for n, got in sorted(parts.items()):
        seen = Counter(k for k, _ in got)
        missing = [k for k in range(1, n + 1) if k not in seen]
        twice = sorted(k for k, c in seen.items() if c > 1)
        if missing:
            problems.append(f"missing shard{'s' if len(missing) > 1 else ''} {_listed(missing, n)}")
        if twice:
            problems.append(f"shard{'s' if len(twice) > 1 else ''} given twice: {_listed(twice, n)}")
    return problems


LISTED = 10         # shards named in one problem; the rest are counted (N may be 100,000)


def _listed(ks: Sequence[int], n: int) -> str:
    """'1/4, 3/4', or the first LISTED and how many more."""
    shown = ", ".join(f"{k}/{n}" for k in ks[:LISTED])
    return shown + (f" and {len(ks) - LISTED} more" if len(ks) > LISTED else "")


def refuse_incomplete(docs: Sequence[Tuple[str, Mapping]], flag: str) -> None:
    """A run that did not finish is not a result to gate on: say which, and how to use it anyway."""
    for name, doc in docs:
        if not is_complete(doc):
            raise ResultsError(f"{name}: the run did not finish ({doc.get('incomplete') or 'incomplete'}); "
                               f"{flag} uses it anyway")


def refuse_empty(docs: Sequence[Tuple[str, Mapping]], unfinished_ok: bool = False) -> None:
    """A run with no record judged nothing: comparing or merging it would let it pass as a result.
    `unfinished_ok`: a shard interrupted before its first case may join a partial merge (the merge
    is marked unfinished); a finished run with no records never may."""
    for name, doc in docs:
        if not doc.get("records") and not (unfinished_ok and not is_complete(doc)):
            raise ResultsError(f"{name}: the run has no records (no case ran); there is nothing to compare "
                               f"or merge")


def merge(docs: Sequence[Tuple[str, Mapping]], allow_partial: bool = False,
          allow_incomplete: bool = False) -> Dict[str, Any]:
    """Join shards (name, document) into one run; they must be of the same configuration, finished
    (unless `allow_incomplete`) and one complete set of shards (unless `allow_partial`), and a case
    found in two of them must have the same record in both."""
    if not docs:
        raise ResultsError("nothing to merge")
    if not allow_incomplete:
        refuse_incomplete(docs, "--allow-incomplete")
    refuse_empty(docs, unfinished_ok=allow_incomplete)
    first_name, first = docs[0]
    records: Dict[str, Tuple[str, Mapping]] = {}
    for name, doc in docs:
        for f in SAME_RUN:
            if doc.get(f) != first.get(f):
                raise ResultsError(f"{name}: {f} {doc.get(f)!r} differs from {first_name}'s {first.get(f)!r}; "
                                   f"shards of one run share it")
        for r in doc["records"]:
            seen = records.get(r["key"])
            if seen is not None and seen[1] != r:
                raise ResultsError(f"{name}: conflicting records for {r['key']} (also in {seen[0]}): "
                                   f"{seen[1]['outcome']} vs {r['outcome']}")
            records[r["key"]] = (name, r)
    incomplete = shard_set(docs)
    if incomplete and not allow_partial:
        raise ResultsError("; ".join(incomplete) + " (--allow-partial merges them anyway)")
    products = sorted({p for _, d in docs for p in d["products"]})
    run = {f: first[f] for f in RUN_FIELDS if f not in ("schema_version", "suite_version", "counts", "records",
                                                        "complete", "incomplete", "incidents", "windows") and f in first}
    run.update(products=products, shard=None,
               merged_from=[d.get("shard") or n for n, d in docs])
    windows = trust.covering([d for _, d in docs])        # each shard's: its backend reached its own machine
    if windows is not None:
        run["windows"] = windows
    unfinished = [f"{n}: {d.get('incomplete') or 'incomplete'}" for n, d in docs if not is_complete(d)]
    incidents = [f"{n}: {x}" for n, d in docs for x in d.get("incidents") or []]
    return make_document(run, (r for _, r in records.values()),
                         "; ".join(unfinished) if unfinished else None, incidents)


# -- diff --------------------------------------------------------------------------------------
ULP_GROWTH = 1.0
ULP_RATIO = 2.0
FAILING = ("failed",)
GOOD = ("passed", "xpassed")
WAS_FAILING = ("failed", "xfailed")     # a case of these in BASE that is GOOD in NEW is fixed


@dataclass
class Diff:
    new_failures: List[Tuple[Mapping, Optional[Mapping]]] = field(default_factory=list)
    fixed: List[Tuple[Mapping, Mapping]] = field(default_factory=list)
    regressions: List[Tuple[Mapping, Mapping]] = field(default_factory=list)
    appeared: List[Mapping] = field(default_factory=list)
    vanished: List[Mapping] = field(default_factory=list)
    new_xfails: List[Tuple[Mapping, Optional[Mapping]]] = field(default_factory=list)
    incidents: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    judged_by: List[str] = field(default_factory=list)     # goldens or tolerances that differ
    allow_vanished: bool = False
    accept_golden_change: bool = False
    timing: List[Tuple[str, gate.Verdict]] = field(default_factory=list)   # cases either run timed
    not_timed: int = 0                                      # cases both runs recorded as not timed
    interleaved: Dict[str, gate.Verdict] = field(default_factory=dict)   # NEW's against its timing baseline
    perf_threshold: float = gate.THRESHOLD
    perf_alpha: float = gate.ALPHA

    @property
    def slower(self) -> List[Tuple[str, gate.Verdict]]:
        """Each case with a REGRESSION, sequential (BASE -> NEW) or NEW's interleaved, once."""
        seq = [(k, v) for k, v in self.timing if v.kind == gate.REGRESSION]
        seen = {k for k, _ in seq}
        return seq + [(k, v) for k, v in sorted(self.interleaved.items())
                      if v.kind == gate.REGRESSION and k not in seen]

    @property
    def worse(self) -> bool:
        return bool(self.new_failures or self.regressions or self.incidents or self.slower
                    or (self.vanished and not self.allow_vanished)
                    or (self.judged_by and not self.accept_golden_change))


def worst_ulp(r: Mapping) -> Optional[float]:
    m = r.get("metrics") or {}
    return number(m.get("max_ulp"))


def output_ulps(r: Mapping) -> Dict[str, Optional[float]]:
    """Each judged output's worst ulp error of a record of a call with several outputs (its
    optional `outputs` field); empty for one output."""
    outs = r.get("outputs")
    if not isinstance(outs, Mapping):
        return {}
    return {n: number(m.get("max_ulp")) for n, m in outs.items() if isinstance(m, Mapping)}


def regressed(br: Mapping, nr: Mapping, ulp_growth: float, ulp_ratio: float) -> List[Tuple[str, float, float]]:
    """Where a case passing in both runs lost precision: ("", base, new) for its record's metrics
    (the first output's), and (name, base, new) for each output both records judged (several
    outputs: a regression of the second output alone counts)."""
    found = []
    pairs = [("", worst_ulp(br), worst_ulp(nr))]
    bo, no = output_ulps(br), output_ulps(nr)
    pairs += [(n, bo[n], no[n]) for n in bo if n in no]
    for name, bu, nu in pairs:
        if bu is not None and nu is not None and nu - bu > ulp_growth and nu > ulp_ratio * bu:
            if not (name and found and found[0][1:] == (bu, nu)):      # the first output again
                found.append((name, bu, nu))
    return found


# What a run is judged by: NEW judged by other goldens or another tolerance table than BASE's is
# no comparison (a backend can rewrite both on disk), unless the change is accepted by name.
JUDGED_BY = ("manifest_hash", "tolerances_hash")
ACCEPT_FLAG = "--accept-golden-change"


def diff(base: Mapping, new: Mapping, ulp_growth: float = ULP_GROWTH, ulp_ratio: float = ULP_RATIO,
         allow_vanished: bool = False, accept_golden_change: bool = False, *,
         perf_threshold: float = gate.THRESHOLD, perf_alpha: float = gate.ALPHA) -> Diff:
    """What changed from BASE to NEW. A precision regression is a case passing in both whose worst
    ulp error grew by more than `ulp_growth` ulps AND to more than `ulp_ratio` times its old value.
    NEW's goldens (manifest_hash) or tolerance table (tolerances_hash) differing from BASE's make
    it worse unless `accept_golden_change`; a BASE written before tolerances_hash existed is not
    compared on it (a note says so). Cases timed in either run get the performance gate's verdict
    (suite/report/perfdiff.py), and NEW's cases timed against its timing baseline their interleaved
    verdict too, judged again with these options; a REGRESSION of either makes NEW worse."""
    d = Diff(allow_vanished=allow_vanished, accept_golden_change=accept_golden_change,
             perf_threshold=perf_threshold, perf_alpha=perf_alpha)
    d.timing, d.not_timed = perfdiff.timing_rows(base, new, perf_threshold, perf_alpha)
    d.interleaved = dict(rundiff.rows(new, perf_threshold, perf_alpha))
    if any("interleaved" in r for r in base["records"]):
        d.notes.append("BASE was timed against a timing baseline too: its interleaved verdicts are BASE's, "
                       "not compared (NEW's are)")
    d.incidents = list(new.get("incidents") or [])
    for name, doc in (("BASE", base), ("NEW", new)):
        if not is_complete(doc):
            d.notes.append(f"{name} did not finish ({doc.get('incomplete') or 'incomplete'}): its missing "
                           f"cases count as vanished")
    for f in ("suite_version", "backend", "standard_override"):
        if base.get(f) != new.get(f):
            if f == "backend" and isinstance(base.get(f), Mapping) and isinstance(new.get(f), Mapping):
                d.notes.append(f"backend differs: {backend_change(base[f], new[f])}")
            else:
                d.notes.append(f"{f} differs: {base.get(f)!r} -> {new.get(f)!r}")
    for f in JUDGED_BY:
        if base.get(f) == new.get(f):
            continue
        if f not in base and f != "manifest_hash":
            d.notes.append(f"BASE has no {f} (an older suite's): not compared")
        else:
            d.judged_by.append(f"{f} differs: {base.get(f)!r} -> {new.get(f)!r}")
    b = {r["key"]: r for r in base["records"]}
    n = {r["key"]: r for r in new["records"]}
    for key, nr in n.items():
        br = b.get(key)
        if br is None:
            d.appeared.append(nr)
            if nr["outcome"] in FAILING:
                d.new_failures.append((nr, None))
            elif nr["outcome"] == "xfailed":
                d.new_xfails.append((nr, None))
            continue
        if nr["outcome"] == "xfailed" and br["outcome"] != "xfailed":
            # A known-failures line that now covers a case: fine if it already failed, a hidden
            # regression if it passed in BASE.
            d.new_xfails.append((nr, br))
            if br["outcome"] in GOOD:
                d.new_failures.append((nr, br))
        elif nr["outcome"] in FAILING and br["outcome"] not in FAILING:
            d.new_failures.append((nr, br))
        elif br["outcome"] in WAS_FAILING and nr["outcome"] in GOOD:
            d.fixed.append((br, nr))
        elif br["outcome"] in GOOD and nr["outcome"] in GOOD:
            if regressed(br, nr, ulp_growth, ulp_ratio):
                d.regressions.append((br, nr))
    # A case that ran in BASE and is skipped in NEW (too little memory on this machine, a
    # capability the backend lost, Unsupported) is no longer tested: as good as vanished, whatever
    # its outcome in BASE (a failing case skipped now is hidden, not fixed).
    d.vanished = [r for k, r in b.items() if k not in n
                  or (r["outcome"] != "skipped" and n[k]["outcome"] == "skipped")]
    return d


def _fmt_ulp(v: float) -> str:
    return f"{v:.3g}"


def _regression_line(b: Mapping, n: Mapping) -> str:
    """`key  base -> new ulp`; for a record of several outputs each output that regressed (by the
    default thresholds), named."""
    if not output_ulps(n):
        return f"{n['key']}  {_fmt_ulp(worst_ulp(b))} -> {_fmt_ulp(worst_ulp(n))} ulp"
    found = regressed(b, n, ULP_GROWTH, ULP_RATIO)
    parts = [f"{name or 'out'} {_fmt_ulp(bu)} -> {_fmt_ulp(nu)} ulp" for name, bu, nu in found]
    return f"{n['key']}  " + ("; ".join(parts) if parts else f"{_fmt_ulp(worst_ulp(b))} -> {_fmt_ulp(worst_ulp(n))} ulp")


def _section(title: str, lines: List[str], limit: int) -> List[str]:
    if not lines:
        return []
    out = [f"{title} ({len(lines)}):"] + [f"  {x}" for x in lines[:limit]]
    if len(lines) > limit:
        out.append(f"  ... and {len(lines) - limit} more")
    return out


def _before(b: Optional[Mapping]) -> str:
    """What a case was in BASE, for a line of NEW's: 'new case' or 'failed before'."""
    return "new case" if b is None else f"{b['outcome']} before"


def render_diff(d: Diff, limit: int = 10) -> str:
    """One screen: the verdict first, the new failures' and incidents' counts per operator and kind,
    then each list truncated to `limit` lines with a count (the new failures: a few of each
    operator and kind, suite/report/newfailures.py)."""
    why = []
    if d.new_failures:
        why.append(f"{len(d.new_failures)} new failures")
    if d.regressions:
        why.append(f"{len(d.regressions)} precision regressions")
    if d.slower:
        why.append(f"{len(d.slower)} performance regressions")
    if d.vanished and not d.allow_vanished:
        why.append(f"{len(d.vanished)} vanished cases")
    if d.incidents:
        why.append(f"{len(d.incidents)} incidents")
    if d.judged_by and not d.accept_golden_change:
        why.append(f"judged by other goldens or tolerances than BASE ({ACCEPT_FLAG} accepts the change)")
    head = (f"WORSE: {', '.join(why)}" if d.worse else "OK: no new failures, no precision regressions"
            + (", no performance regressions" if d.timing or d.interleaved else "")
            + (f" ({len(d.vanished)} vanished cases allowed)" if d.vanished else "")
            + (f" (other goldens or tolerances accepted by {ACCEPT_FLAG})" if d.judged_by else ""))
    lines = [head]
    lines += [f"{'accepted' if d.accept_golden_change else 'differs'}: {x}" for x in d.judged_by]
    lines += [f"note: {x}" for x in d.notes]
    lines += newfailures.counts(d.new_failures, d.incidents)
    lines += _section("incidents (outside any case)", d.incidents, limit)
    lines += newfailures.lines(d.new_failures, limit, lambda r, b: _before(b) + (
        ", now a known failure" if r["outcome"] == "xfailed" else ""))
    lines += _section("precision regressions", [_regression_line(b, n) for b, n in d.regressions], limit)
    lines += perfdiff.render(d.timing, d.not_timed, d.perf_threshold, d.perf_alpha, limit, d.interleaved)
    lines += _section("vanished", [r["key"] for r in d.vanished], limit)
    lines += _section("new known failures (xfailed now, not before)",
                      [f"{r['key']}  ({_before(b)})"
                       + (f": {r['reason']}" if r.get("reason") else "") for r, b in d.new_xfails], limit)
    lines += _section("fixed", [n["key"] for _, n in d.fixed], limit)
    lines += _section("appeared", [r["key"] for r in d.appeared], limit)
    return "\n".join(lines)
