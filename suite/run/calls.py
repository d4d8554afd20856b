"""One call of a backend's run and what it came to (Outcome), in whichever process the backend
lives; and the backend in pytest's own process (`--isolation none`). Moved from suite/run/host.py,
which re-exports these names."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from suite.common import dtypes, layout
from suite.run.backend import BackendInfo
from suite.run.trace import backend_frames
from suite.contract import AclnnError, DeviceFault, OpCall, Unsupported

# A request: op, inputs (name -> contiguous array or None), layout, attrs, out_shape, out_dtype
# (a dtype name or None), product; for an operator with several outputs also `outputs` (a list of
# [name, shape or None, dtype name or None] in signature order) and `written` (the names the call
# writes). Plain values, so it crosses the process boundary as it is.
Request = Dict[str, Any]



@dataclass
class Outcome:
    """What one call of backend.run came to, in either process."""

    array: Optional[np.ndarray] = None     # the result: an array of exactly out_shape and out_dtype
    status: Optional[int] = None           # AclnnError's status
    unsupported: Optional[str] = None      # Unsupported's reason
    raised: Optional[str] = None           # any other exception: "TypeError: ..."
    trace: Optional[str] = None            # ... and the backend's own frames of it (suite/run/trace.py)
    returned: Optional[str] = None         # what came back instead of such an array
    aliased: Optional[str] = None          # the result shares memory with: "input NAME" or "an earlier result"
    violation: Optional[str] = None        # what the backend gave breaks the contract: why
    device_fault: Optional[str] = None     # DeviceFault's message (with its status)
    device_lost: bool = False              # ... and the backend could not recover the device
    # A call with several outputs: name -> array of each written output (exactly its shape and
    # dtype), in signature order; `array` is then None. None for a call with one output.
    arrays: Optional[Dict[str, np.ndarray]] = None


def call_of(req: Request) -> OpCall:
    """The OpCall a backend receives: the inputs in the case's layout, read-only."""
    views = {n: None if a is None else layout.view(req["layout"], a) for n, a in req["inputs"].items()}
    out_dtype = None if req["out_dtype"] is None or req["out_shape"] is None else dtypes.dtype_of(req["out_dtype"])
    outputs = req.get("outputs")
    if outputs is not None:
        outputs = {n: (None if s is None else tuple(s), None if d is None else dtypes.dtype_of(d))
                   for n, s, d in outputs}
    return OpCall(op=req["op"], inputs=views, attrs=dict(req["attrs"]), out_shape=req["out_shape"],
                  out_dtype=out_dtype, product=req["product"], outputs=outputs)


def _describe(got: Any) -> str:
    if not isinstance(got, np.ndarray):
        return f"{type(got).__name__}, not a numpy array"
    return f"shape {tuple(got.shape)} dtype {dtypes.name_of(got.dtype)}"


MAX_WORDS = 2000                 # characters kept of a backend's own words (a message, a reason)


def words(v: Any) -> str:
    """A backend's own words as text, whatever they are: an object whose __str__ raises or returns
    something else costs its case nothing (and never the backend's process), and a message of a
    gigabyte is cut."""
    try:
        text = v if type(v) is str else str(v)
        if type(text) is not str:
            raise TypeError(f"__str__ returned {type(text).__name__}")
    except Exception as e:
        text = f"<unprintable {type(v).__name__}: its __str__ raised {type(e).__name__}>"
    return text if len(text) <= MAX_WORDS else text[:MAX_WORDS] + f"... ({len(text) - MAX_WORDS} more characters)"


def _device_fault(e: DeviceFault) -> Outcome:
    message, code = words(getattr(e, "message", e)), getattr(e, "status", None)
    if code is not None and type(code) is not int:
        return Outcome(violation=f"DeviceFault's status is {words(repr(code))} ({type(code).__name__}), not an int")
    status = "" if code is None or str(code) in message else f" (status {code})"
    recovered = getattr(e, "recovered", True)
    if type(recovered) is not bool:
        # Not the promise the contract asks for: the device is taken as lost (the safe reading).
        return Outcome(device_fault=f"{message}{status} [recovered={words(repr(recovered))} is not a bool: "
                                    f"the device is taken as not recovered]", device_lost=True)
    return Outcome(device_fault=f"{message}{status}", device_lost=not recovered)


def _plain(got: Any) -> Tuple[Any, Optional[str]]:
    """A result of a numpy subclass as a plain ndarray (np.matrix and the like are judged by their
    values), or why it cannot be: a masked array with masked elements has no value there."""
    if not isinstance(got, np.ndarray) or type(got) is np.ndarray:
        return got, None
    if isinstance(got, np.ma.MaskedArray):
        masked = int(np.count_nonzero(np.ma.getmaskarray(got)))
        if masked:
            return None, (f"a numpy.ma.MaskedArray with {masked} masked elements: a masked element has "
                          f"no value to judge; the contract asks for a plain numpy.ndarray")
    return got.view(np.ndarray), None


def call_once(backend: Any, req: Request, earlier: Sequence[np.ndarray]) -> Tuple[Outcome, Any]:
    """Run one call and classify what came back. Also returns the raw result (a list of them for a
    call with several outputs), kept by the caller so that a later call's result can be checked
    for sharing its memory."""
    call = call_of(req)
    try:
        got = backend.run(call)
    except AclnnError as e:
        status = getattr(e, "status", None)
        if type(status) is not int:
            return Outcome(violation=f"AclnnError's status is {words(repr(status))} ({type(status).__name__}), "
                                     f"not an int"), None
        return Outcome(status=status), None
    except Unsupported as e:
        return Outcome(unsupported=words(e)), None
    except DeviceFault as e:
        return _device_fault(e), None
    except Exception as e:
        return Outcome(raised=f"{type(e).__name__}: {words(e)}", trace=backend_frames(e)), None
    if req.get("outputs") is not None:
        from suite.run.several import several          # (it reads this module's helpers)
        return several(call, req, got, earlier)
    got, refused = _plain(got)
    if refused is not None:
        return Outcome(violation=f"the backend returned {refused}"), None
    want_dt = None if req["out_dtype"] is None else dtypes.dtype_of(req["out_dtype"])
    if (not isinstance(got, np.ndarray) or req["out_shape"] is None
            or tuple(got.shape) != tuple(req["out_shape"]) or got.dtype != want_dt):
        return Outcome(returned=_describe(got)), None
    aliased = None
    if got.size:
        aliased = next((f"input {n}" for n, a in call.inputs.items()
                        if a is not None and np.may_share_memory(got, a)), None)
        if aliased is None and any(np.may_share_memory(got, e) for e in earlier):
            aliased = "an earlier result"
    return Outcome(array=got, aliased=aliased), got


def run_calls(backend: Any, req: Request, repeat: int) -> List[Outcome]:
    """`repeat` calls on the same request (determinism makes two)."""
    outs: List[Outcome] = []
    kept: List[np.ndarray] = []
    for _ in range(repeat):
        out, raw = call_once(backend, req, kept)
        outs.append(out)
        if isinstance(raw, list):               # a call with several outputs: every array it returned
            kept.extend(raw)
        elif raw is not None:
            kept.append(raw)
    return outs


# -- in pytest's own process ------------------------------------------------------------------
class InProcess:
    """`--isolation none`: the backend is an object in this process (a debugger reaches it; a crash
    ends the run)."""

    copies = 0                                # the backend reads the case's own arrays

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.info: Optional[BackendInfo] = BackendInfo.of(backend)

    def run(self, req: Request, repeat: int = 1, deadline: Optional[float] = None) -> List[Outcome]:
        return run_calls(self.backend, req, repeat)

    def close(self) -> Optional[str]:
        return close_backend(self.backend)

    def time(self, req: Request, launches: int, flush: bool, deadline: Optional[float] = None) -> Dict[str, Any]:
        """One timing round (suite/perf/launch.py), in this process."""
        from suite.perf.launch import time_hook
        if getattr(self, "_timed", (None,))[0] is not req:
            self._timed = (req, call_of(req))
        return time_hook(self.backend, self._timed[1], launches, flush)

    # The answers of a host that has no process of the backend's (suite/run/seams.py, Host).
    def deadline_for(self, elements: int) -> Optional[float]:
        """None: nothing can end a call in pytest's own process without ending the run."""
        return None

    def take_output(self) -> None:
        """None: the backend prints into pytest's capture, as any code in the process does."""
        return None

    def twin(self) -> None:
        """None: one process, so the determinism tests make their two calls only."""
        return None


def close_backend(backend: Any) -> Optional[str]:
    """Call the backend's optional close(); what went wrong comes back as one line."""
    close = getattr(backend, "close", None)
    if callable(close):
        try:
            close()
        except Exception as e:
            return f"the backend's close() raised {type(e).__name__}: {words(e)}"
    return None
