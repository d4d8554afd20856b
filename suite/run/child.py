"""The backend's process (the launcher forks it for suite/run/host.py: suite/run/launcher.py): confine itself, make the backend, then serve
the parent's requests (run, time, close) over the socket until told to close or the parent is gone.

Why a module of its own: this is all the code that runs beside the untrusted backend, so what the child
does is read in one place, apart from the parent's deadlines, restarts and reply checks (host.py).
Imports suite.common and suite.run (backend, calls, output, wire, confine); the timing hook runs
here too (suite/run/calls.py time_hook)."""
from __future__ import annotations

import atexit
import os
import signal
import socket
from typing import Any, Dict, Optional, Sequence, Tuple

from suite.contract import OpCall
from suite.run import confine
from suite.run.backend import BackendError, BackendInfo, make_backend
from suite.run.calls import Outcome, call_of, close_backend, run_calls, time_hook, words
from suite.run.output import flush_output, redirect_output
from suite.run.wire import recv, send


def _die_with_parent() -> None:
    """Linux: the kernel kills this process when its parent goes (a killed run leaves no backend
    behind holding a device)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)    # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _outcome_header(o: Outcome, index: Optional[int]) -> Dict[str, Any]:
    return {"array": index, "status": o.status, "unsupported": o.unsupported, "raised": o.raised,
            "trace": o.trace, "returned": o.returned, "aliased": o.aliased, "violation": o.violation,
            "device_fault": o.device_fault, "device_lost": o.device_lost}


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


def child_main(sock: socket.socket, spec: Optional[str], opts: Dict[str, str],
               out: Optional[socket.socket] = None, policy: Optional[confine.Policy] = None,
               tmpdir: Optional[str] = None) -> None:
    """The backend's process: its output to `out` (suite/run/output.py), its own TMPDIR, confine
    itself (suite/run/confine.py), make the backend, then serve requests until told to close."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)         # Ctrl-C is the parent's to handle
    _die_with_parent()
    redirect_output(out)
    confine.use_tmpdir(tmpdir)
    try:
        if policy is not None:
            policy.apply()
        backend = make_backend(spec, opts)
        info = BackendInfo.of(backend)
    except BackendError as e:
        send(sock, ("error", str(e)))
        return
    except BaseException as e:                # SystemExit included: a start-up that exits is an error
        send(sock, ("error", f"backend {spec or 'reference'!r} failed to start: {type(e).__name__}: {words(e)}"))
        return
    flush_output()
    send(sock, ("ready", {"name": info.name, "capabilities": sorted(info.capabilities),
                          "products": list(info.products), "deterministic": info.deterministic,
                          "working_memory": info.working_memory}))
    timed = None                               # the call being timed (a "time" request's)
    while True:
        try:
            header, arrays = recv(sock)
        except (EOFError, OSError):
            os._exit(0)                        # the parent is gone
        if header[0] == "run":
            seq, req, repeat = header[1], header[2], header[3]
            req["inputs"] = {n: None if i is None else arrays[i] for n, i in req["inputs"].items()}
            outs = run_calls(backend, req, repeat)
            payload, heads = [], []
            for o in outs:
                index: Any = None
                if o.arrays is not None:          # each written output's index, by name
                    index = {}
                    for n, a in o.arrays.items():
                        index[n] = len(payload)
                        payload.append(a)
                heads.append(_outcome_header(o, index))
            del outs
            flush_output()
            send(sock, ("done", seq, heads), payload)
            # Nothing of a call outlives its reply: a huge case's input and result would otherwise
            # stay held while the parent draws and sends the next case (and its memory check sees less).
            header = arrays = req = payload = o = a = None
        elif header[0] == "time":               # a timing round: the call is kept between rounds
            timed, answer = timing_round(backend, header, arrays, timed)
            flush_output()
            send(sock, ("timed", header[1], answer))
            header = arrays = None
        elif header[0] == "close":
            incident = close_backend(backend)
            # The backend's own exit handlers run here, where nothing they do reaches the run.
            atexit._run_exitfuncs()
            flush_output()
            send(sock, ("closed", incident))
            os._exit(0)
