"""Whether a run's backend could have written the baseline `report diff` compares with (issue 43,
item 5). A backend reads and writes as the user: a baseline results.json lying on the run's machine
where the backend could write (in /tmp, in $HOME) can be rewritten so that the diff shows no new
failure. The run records, in results.json's optional `windows` (one per run; a merged file one per
shard), its host, when its backend could write (`start_ns`, `end_ns`) and the folders its
confinement protected (`protected`). `report diff` refuses a BASE on the same host that changed
inside a window, or that lies outside every protected folder, unless --trust-baseline
(docs/ci-gate.md, "Where the baseline lives").

Why an inode's change time: the kernel sets st_ctime on every write, truncate, rename, link, chmod
and utime, and no process can set it back (utime sets mtime and atime, and moves ctime to now).
Only a file that lay in a protected folder and changed outside every window is one the run's
backend cannot have touched: the window alone misses a file written during the run and then
touched after it (a chmod, a `touch`), and the place alone misses an unconfined run.

Imports nothing of the suite (results.validate calls `problems`)."""
from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

FLAG = "--trust-baseline"
FIELDS = {"hostname": ("str",), "start_ns": ("int",), "end_ns": ("int", "null"), "protected": ("list", "null")}
OPTIONAL = {"granted": ("list",)}          # paths left writable inside the protected ones (/dev, ~/ascend)
# CLOCK_REALTIME_COARSE (Linux): the clock the kernel stamps files with; Python names no constant for it
_COARSE = getattr(time, "CLOCK_REALTIME_COARSE", 5 if sys.platform.startswith("linux") else None)


def start_ns() -> int:
    """Now, at most any time stamp the kernel gives a later write: a file's change time comes from
    the kernel's coarse clock, which lags time.time_ns() by up to a tick (4 ms here), so a write
    just after time.time_ns() could carry a time before it."""
    now = time.time_ns()
    if _COARSE is None:
        return now
    try:
        return min(now, time.clock_gettime_ns(_COARSE))
    except OSError:
        return now


def end_ns() -> int:
    """Now, at least the time stamp of every write so far."""
    return time.time_ns()


def window(start: int, end: Optional[int], protected: Optional[Sequence[str]],
           granted: Sequence[str] = ()) -> Dict[str, Any]:
    """One entry of `windows`: this host, the run's start and end (None: not recorded, a run still
    going or killed), the folders its backend could not write (None: not known yet; []: none) and
    those it could write although they lie inside them (`granted`, left out when none)."""
    out = {"hostname": socket.gethostname(), "start_ns": start, "end_ns": end,
           "protected": None if protected is None else sorted(str(p) for p in protected)}
    if granted:
        out["granted"] = sorted(str(p) for p in granted)
    return out


def problems(value: Any, where: str = "run.windows") -> List[str]:
    """How a `windows` value departs from the schema (docs/results-schema.md); empty when it conforms."""
    if not isinstance(value, list):
        return [f"{where}: not a list"]
    out = []
    for i, w in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(w, dict):
            out.append(f"{at}: not an object")
            continue
        if not set(FIELDS) <= set(w) <= set(FIELDS) | set(OPTIONAL):
            out.append(f"{at}: fields must be {', '.join(FIELDS)} (and optionally {', '.join(OPTIONAL)})")
            continue
        for name, types in {**FIELDS, **OPTIONAL}.items():
            if name in w and not _is(w[name], types):
                out.append(f"{at}: field '{name}' is not {' or '.join(types)}")
        if all(_is(w[n], t) for n, t in FIELDS.items()):
            if w["start_ns"] < 0 or (w["end_ns"] is not None and w["end_ns"] < w["start_ns"]):
                out.append(f"{at}: needs 0 <= start_ns <= end_ns")
            for name in ("protected", "granted"):
                if isinstance(w.get(name), list) and not all(isinstance(p, str) and p for p in w[name]):
                    out.append(f"{at}: field '{name}' must list paths")
    return out


def _is(v: Any, types: Sequence[str]) -> bool:
    return any((t == "str" and isinstance(v, str)) or (t == "null" and v is None)
               or (t == "int" and isinstance(v, int) and not isinstance(v, bool))
               or (t == "list" and isinstance(v, list)) for t in types)


@dataclass(frozen=True)
class Place:
    """Where a file lies and when its inode last changed: the path as given made absolute (its
    links not followed), the path it resolves to, and st_ctime in ns."""

    absolute: str
    real: str
    ctime_ns: int


def place_of(path: Path) -> Place:
    """OSError when the file cannot be looked at."""
    st = os.stat(path)
    return Place(os.path.abspath(path), os.path.realpath(path), st.st_ctime_ns)


def _inside(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _nearest(path: str, folders: Sequence[str]) -> int:
    """The length of the longest of `folders` at or above `path` (-1: none): the nearest of the
    protected and granted paths above a file decides whether the backend could write it."""
    return max((len(f) for f in folders if _inside(path, [f])), default=-1)


def when(ns: Optional[int]) -> str:
    """A time in ns since the epoch as UTC, to the microsecond ('2026-12-07T02:41:03.123456Z')."""
    if ns is None:
        return "its end (not recorded)"
    t = datetime.fromtimestamp(ns // 1000 / 1e6, tz=timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def refusal(place: Place, new: Mapping, host: str) -> Optional[str]:
    """Why NEW's run (results.json `new`) could have written the file at `place` on this `host`, or
    None: no window of NEW's on this host, or each of them had it in a protected folder and saw
    it unchanged. Each window on this host is judged: a shard's backend reaches its own machine."""
    for i, w in enumerate(new.get("windows") or ()):
        if w["hostname"] != host:
            continue
        at = f"windows[{i}]"
        start, end = w["start_ns"], w["end_ns"]
        if place.ctime_ns >= start and (end is None or place.ctime_ns <= end):
            return (f"changed at {when(place.ctime_ns)}, while the run on {host} could write it ({at}: "
                    f"{when(start)} to {when(end)})")
        if w["protected"] is None:
            return f"the run on {host} did not record which folders it protected ({at}: protected null, an unfinished run)"
        if not w["protected"]:
            writes = (new.get("protections") or {}).get("writes", "not recorded")
            return (f"the run on {host} protected no folder ({at}: protected [], protections.writes: {writes}), "
                    f"so its backend could write it")
        shown = place.absolute if place.absolute == place.real else f"{place.absolute} -> {place.real}"
        if not (_inside(place.absolute, w["protected"]) and _inside(place.real, w["protected"])):
            return (f"{shown} lies outside every folder the run on {host} protected ({at}: protected, "
                    f"{len(w['protected'])} paths), so its backend could write it")
        granted = w.get("granted") or []
        if any(_nearest(p, granted) > _nearest(p, w["protected"]) for p in (place.absolute, place.real)):
            return (f"{shown} lies in a folder the run on {host} left writable inside the protected ones "
                    f"({at}: granted), so its backend could write it")
    return None


def judge(base: Path, new: Mapping, host: Optional[str] = None) -> Tuple[Optional[str], Optional[str]]:
    """(why BASE is refused, a warning) for `report diff BASE NEW` on this host (None: neither).
    A NEW without `windows` (an earlier suite's) whose machine is this host: a warning, not a
    refusal (removing the field takes a write to NEW, which a backend that could make would rather
    forge whole)."""
    host = socket.gethostname() if host is None else host
    if "windows" not in new:
        if (new.get("machine") or {}).get("hostname") == host:
            return None, (f"no field 'windows' (a results.json of a suite before it): whether its run could "
                          f"have written {base} is not checked")
        return None, None
    try:
        place = place_of(base)
    except OSError as e:
        return f"cannot look at it ({e.strerror or e})", None
    return refusal(place, new, host), None


def covering(docs: Sequence[Mapping]) -> Optional[List[Dict[str, Any]]]:
    """A merged file's `windows`: every shard's, in order; None (the field left out) when a shard
    has none, as a file with no windows is not checked (judge)."""
    if not all(isinstance(d.get("windows"), list) for d in docs):
        return None
    return [w for d in docs for w in d["windows"]]
