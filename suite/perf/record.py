"""What a backend's timing hook returns (`Timing`) and the per-case `timing` field of results.json
(`TimingRecord`, or `NotTimed`): the one format the measuring side writes and the gate reads
(docs/results-schema.md, "timing"). Reading checks every field, so a hand-edited or foreign file
is one clear error (`TimingError`), never a wrong verdict."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

CLOCKS = ("device", "host")
CACHES = ("cold", "warm")


class TimingError(ValueError):
    """A timing record that is off-schema: one line saying which field and why."""


@dataclass(frozen=True)
class Timing:
    """One call of `backend.time_launches(call, launches, flush=...)`: `seconds` has one entry per
    launch, in order, each from its own event pair. `clock` says whose clock measured them (a host
    clock times the launch, not the kernel, so the gate never compares it with a device clock);
    `source` names the timer ("aclrtEvent", "torch.cuda.Event", "perf_counter_ns", "simulated")."""
    clock: str
    source: str
    seconds: Tuple[float, ...]


@dataclass(frozen=True)
class NotTimed:
    """A case without timing: a backend without the hook, or a case not in the timing set. Never
    read as fast: the gate calls it UNKNOWN."""
    reason: str

    def to_json(self) -> Dict[str, Any]:
        return {"status": "not timed", "reason": self.reason}


# name -> (accepted types, may be null); the same table is docs/results-schema.md's.
FIELDS: Dict[str, Tuple[Tuple[type, ...], bool]] = {
    "clock": ((str,), False), "source": ((str,), False), "cache": ((str,), False),
    "rounds": ((list, tuple), False), "launches": ((int,), False),
    "median_s": ((float, int), False), "min_s": ((float, int), False), "iqr_s": ((float, int), False),
    "bytes": ((int,), False), "gbps": ((float, int), False),
    "peak_gbps": ((float, int), True), "peak_source": ((str,), True), "peak_fraction": ((float, int), True),
    "cache_resident": ((bool,), False),
}


@dataclass(frozen=True)
class TimingRecord:
    """One timed case: the round medians (seconds per launch) and what follows from them. median,
    min and IQR are of the round medians; gbps is bytes over the median; peak_fraction is gbps over
    the product's peak where a peak with a source is known (else null), and a fraction above 1 is
    `cache_resident`: faster than the memory can be, so the data came from a cache."""
    clock: str
    source: str
    cache: str
    rounds: Tuple[float, ...]
    launches: int
    median_s: float
    min_s: float
    iqr_s: float
    bytes: int
    gbps: float
    peak_gbps: Optional[float]
    peak_source: Optional[str]
    peak_fraction: Optional[float]
    cache_resident: bool

    @classmethod
    def of_rounds(cls, rounds: Sequence[float], *, clock: str, source: str, cache: str, launches: int,
                  nbytes: int, peak_gbps: Optional[float] = None,
                  peak_source: Optional[str] = None) -> "TimingRecord":
        """The record of measured round medians: every derived figure computed here, in one place,
        so the measuring side and the benchmark cannot disagree on what IQR or GB/s means. A peak
        given without its source is marked "unverified"."""
        r = np.asarray(rounds, dtype=np.float64)
        if r.size == 0 or not np.all(np.isfinite(r)) or np.any(r <= 0):
            raise TimingError(f"rounds must be positive finite seconds, got {list(rounds)[:5]}")
        median = float(np.median(r))
        q1, q3 = np.percentile(r, [25, 75])
        gbps = nbytes / median / 1e9
        peak = None if peak_gbps is None else float(peak_gbps)
        fraction = None if peak is None or peak <= 0 else gbps / peak
        return cls.from_json({
            "clock": clock, "source": source, "cache": cache, "rounds": [float(x) for x in r],
            "launches": int(launches), "median_s": median, "min_s": float(r.min()), "iqr_s": float(q3 - q1),
            "bytes": int(nbytes), "gbps": gbps, "peak_gbps": peak, "peak_source": (peak_source or "unverified") if peak else None,
            "peak_fraction": fraction, "cache_resident": fraction is not None and fraction > 1.0})

    @classmethod
    def from_json(cls, obj: Any) -> "TimingRecord":
        """A timed record from its results.json object; TimingError names the first bad field."""
        problems = _problems(obj)
        if problems:
            raise TimingError(problems[0])
        return cls(**{k: (tuple(float(x) for x in obj[k]) if k == "rounds"
                          else float(obj[k]) if FIELDS[k][0][0] is float and obj[k] is not None
                          else obj[k]) for k in FIELDS})

    def to_json(self) -> Dict[str, Any]:
        return {k: (list(getattr(self, k)) if k == "rounds" else getattr(self, k)) for k in FIELDS}


def read(obj: Any) -> Union[TimingRecord, NotTimed]:
    """A record's `timing` field, timed or not; TimingError for anything else."""
    if isinstance(obj, Mapping) and "status" in obj:
        if obj.get("status") != "not timed" or set(obj) != {"status", "reason"} \
                or not isinstance(obj.get("reason"), str):
            raise TimingError('a record without timing is exactly {"status": "not timed", "reason": str}')
        return NotTimed(obj["reason"])
    return TimingRecord.from_json(obj)


def problems(obj: Any) -> List[str]:
    """Every way a `timing` field departs from the schema (timed or not timed); empty if none."""
    if isinstance(obj, Mapping) and "status" in obj:
        try:
            read(obj)
        except TimingError as e:
            return [str(e)]
        return []
    return _problems(obj)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _problems(obj: Any) -> List[str]:
    if not isinstance(obj, Mapping):
        return [f"timing is {type(obj).__name__}, not an object"]
    out = [f"timing: missing field '{k}'" for k in FIELDS if k not in obj]
    out += [f"timing: unknown field {k!r}" for k in obj if k not in FIELDS]
    for k, (types, nullable) in FIELDS.items():
        if k not in obj or (obj[k] is None and nullable):
            continue
        v = obj[k]
        numeric = types[0] is float
        ok = (_is_num(v) if numeric else isinstance(v, types) and not (types[0] is int and isinstance(v, bool)))
        if not ok:
            out.append(f"timing: field '{k}' is {v!r:.40}, expected {'a finite number' if numeric else types[0].__name__}")
    if out:
        return out
    if obj["clock"] not in CLOCKS:
        out.append(f"timing: clock {obj['clock']!r} is not one of {', '.join(CLOCKS)}")
    if obj["cache"] not in CACHES:
        out.append(f"timing: cache {obj['cache']!r} is not one of {', '.join(CACHES)}")
    if not obj["rounds"] or not all(_is_num(x) and x > 0 for x in obj["rounds"]):
        out.append("timing: rounds must be a non-empty list of positive seconds")
    if obj["launches"] < 1 or obj["bytes"] < 0:
        out.append("timing: launches must be >= 1 and bytes >= 0")
    if obj["median_s"] <= 0 or obj["min_s"] <= 0 or obj["iqr_s"] < 0:
        out.append("timing: median_s and min_s must be > 0, iqr_s >= 0")
    return out
