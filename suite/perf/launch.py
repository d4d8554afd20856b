"""Calling a backend's time_launches hook where the backend lives (its own process, or pytest's
with --isolation none), and measuring the host's wall time around it there: the protocol's
host-clock rule (suite/perf/protocol.py) compares the two, and the wall must not include the
socket to pytest. The answer is plain values, so it crosses the process boundary as it is."""
from __future__ import annotations

import time
from typing import Any, Dict, Optional, Sequence, Tuple

from suite.contract import OpCall, Unsupported
from suite.run.calls import call_of, words


def no_hook(backend: Any) -> str:
    """Why a backend without the hook is not timed."""
    name = getattr(backend, "name", type(backend).__name__)
    return (f"backend {words(name)} has no time_launches(call, launches, *, flush) "
            f"(docs/backend-contract.md, Timing): not timed")


def time_hook(backend: Any, call: OpCall, launches: int, flush: bool) -> Dict[str, Any]:
    """{"clock", "source", "seconds" (list of float), "wall_s"}, or {"not_timed": why}: the backend
    has no hook, raised Unsupported (it cannot time here: a CPU build), raised anything else, or
    returned something that is not a Timing."""
    hook = getattr(backend, "time_launches", None)
    if not callable(hook):
        return {"not_timed": no_hook(backend)}
    start = time.perf_counter_ns()
    try:
        t = hook(call, launches, flush=flush)
    except Unsupported as e:
        return {"not_timed": f"the backend cannot time this call: {words(e)}"}
    except Exception as e:
        return {"not_timed": f"time_launches raised {type(e).__name__}: {words(e)}"}
    wall = (time.perf_counter_ns() - start) / 1e9
    clock, source, seconds = (getattr(t, k, None) for k in ("clock", "source", "seconds"))
    try:
        secs = [float(s) for s in seconds]
    except (TypeError, ValueError):
        return {"not_timed": f"time_launches returned {words(type(t).__name__)}, not a Timing "
                             f"(clock, source, seconds)"}
    if len(secs) != launches:
        return {"not_timed": f"time_launches returned {len(secs)} launch times for {launches} launches"}
    if type(clock) is not str or type(source) is not str:
        return {"not_timed": f"time_launches returned clock {words(repr(clock))} and source "
                             f"{words(repr(source))}: each a str"}
    return {"clock": words(clock), "source": words(source), "seconds": secs, "wall_s": wall}


def timing_round(backend: Any, header: tuple, arrays: Sequence[Any],
                 timed: Optional[OpCall]) -> Tuple[Optional[OpCall], Dict[str, Any]]:
    """The backend's process serving ("time", seq, request or None, launches, flush): a request
    (a new case) is made into its call, kept for the rounds that follow (None: the kept one);
    returns the call kept and the round's answer."""
    _, _, req, launches, flush = header
    if req is not None:
        req["inputs"] = {n: None if i is None else arrays[i] for n, i in req["inputs"].items()}
        timed = call_of(req)
    if timed is None:
        return None, {"not_timed": "a timing round without a call to time (the suite's bug)"}
    return timed, time_hook(backend, timed, launches, flush)
