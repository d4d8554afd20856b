"""One call of a backend's run and what it came to (Outcome), in whichever process the backend
lives; and the backend in pytest's own process (`--isolation none`). Moved from suite/run/host.py,
which re-exports these names.

Every call has a mapping of outputs, name -> array, in signature order: a one-output operator's
has one entry, named by its declaration (`out`). The backend contract is kept as it was
(docs/backend-contract.md, "Several outputs"): a one-output call reaches the backend with
`OpCall.outputs` None and its one array is taken as the mapping's entry; a call with several
returns the mapping itself. Each written output exactly its shape and dtype, none of them an
input's memory, an earlier result's or another output's; an output the call does not write may be
absent or hold anything: it is dropped here, never judged."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from suite.common import dtypes, layout
from suite.run.backend import BackendInfo
from suite.run.trace import backend_frames
from suite.contract import AclnnError, DeviceFault, OpCall, Unsupported

# A request: op, inputs (name -> contiguous array or None), layout, attrs, out_shape, out_dtype
# (a dtype name or None), product, `outputs` (a list of [name, shape or None, dtype name or None]
# in signature order, the first out_shape's and out_dtype's) and `written` (the names the call
# writes). A request made without the last two has out's alone (`outputs_of`). Plain values, so it
# crosses the process boundary as it is.
Request = Dict[str, Any]
Output = Tuple[str, Optional[tuple], Optional[str]]       # (name, shape or None, dtype name or None)


def outputs_of(req: Request) -> List[Output]:
    """Every output of a request in signature order (out's alone where it names none)."""
    outs = req.get("outputs")
    if outs is None:
        return [("out", req["out_shape"], req["out_dtype"])]
    return [(n, s, d) for n, s, d in outs]


def written_of(req: Request) -> Tuple[str, ...]:
    """The outputs the request's call writes (the first alone where it names none)."""
    w = req.get("written")
    return tuple(w) if w is not None else (outputs_of(req)[0][0],)


@dataclass
class Outcome:
    """What one call of backend.run came to, in either process."""

    # The result: name -> array of each written output (exactly its shape and dtype), in signature
    # order; a one-output call's has one entry.
    arrays: Optional[Dict[str, np.ndarray]] = None
    status: Optional[int] = None           # AclnnError's status
    unsupported: Optional[str] = None      # Unsupported's reason
    raised: Optional[str] = None           # any other exception: "TypeError: ..."
    trace: Optional[str] = None            # ... and the backend's own frames of it (suite/run/trace.py)
    returned: Optional[str] = None         # what came back instead of such an array
    aliased: Optional[str] = None          # the result shares memory with: "input NAME" or "an earlier result"
    violation: Optional[str] = None        # what the backend gave breaks the contract: why
    device_fault: Optional[str] = None     # DeviceFault's message (with its status)
    device_lost: bool = False              # ... and the backend could not recover the device


def call_of(req: Request) -> OpCall:
    """The OpCall a backend receives: the inputs in the case's layout, read-only; `outputs` None
    for a one-output call (the contract's promise: such a call is exactly what it always was)."""
    views = {n: None if a is None else layout.view(req["layout"], a) for n, a in req["inputs"].items()}
    out_dtype = None if req["out_dtype"] is None or req["out_shape"] is None else dtypes.dtype_of(req["out_dtype"])
    outs = outputs_of(req)
    outputs = None if len(outs) == 1 else {
        n: (None if s is None else tuple(s), None if d is None else dtypes.dtype_of(d)) for n, s, d in outs}
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
    """Run one call and classify what came back. Also returns the raw result (a list of its
    arrays), kept by the caller so that a later call's result can be checked for sharing its memory."""
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
    return taken(call, req, got, earlier)


def taken(call: OpCall, req: Request, got: Any,
          earlier: Sequence[np.ndarray]) -> Tuple[Outcome, Optional[List[np.ndarray]]]:
    """(Outcome, the arrays kept for a later call's aliasing check) of what one call returned: a
    one-output call's array is its mapping's one entry; a call with several returns the mapping."""
    outputs, written = outputs_of(req), written_of(req)
    names = [n for n, _, _ in outputs]
    several = call.outputs is not None
    if not several:
        got = {names[0]: got}
    elif not isinstance(got, Mapping):
        return Outcome(returned=f"{_describe(got)}; a call with several outputs returns a mapping of output "
                                f"name to array ({', '.join(names)})"), None
    stray = [k for k in got.keys() if k not in names]
    if stray:
        return Outcome(returned=f"a mapping with {words(repr(stray[0]))[:80]}, which is no output of "
                                f"{call.op} (its outputs: {', '.join(names)})"), None
    missing = [n for n in written if n not in got]
    if missing:
        return Outcome(returned=f"a mapping without {', '.join(missing)}"), None
    arrays: Dict[str, np.ndarray] = {}
    for n, shape, dt in outputs:
        if n not in written:
            continue                          # unwritten: whatever it holds is no failure
        who = f"{n} as " if several else ""
        a, refused = _plain(got[n])
        if refused is not None:
            return Outcome(violation=f"the backend returned {who}{refused}"), None
        if not isinstance(a, np.ndarray) or shape is None or dt is None or tuple(a.shape) != tuple(shape) \
                or a.dtype != dtypes.dtype_of(dt):
            return Outcome(returned=f"{who}{_describe(a)}"), None
        arrays[n] = a
    return Outcome(arrays=arrays, aliased=_aliased(call, arrays, earlier, several)), list(arrays.values())


def _aliased(call: OpCall, arrays: Mapping[str, np.ndarray], earlier: Sequence[np.ndarray],
             several: bool) -> Optional[str]:
    """What one of the outputs shares memory with: "input NAME", "an earlier result" or "output
    NAME" (another output of the same call), None when each is memory of its own; each output
    beyond one named "(as NAME)"."""
    seen: List[Tuple[str, np.ndarray]] = []
    for n, a in arrays.items():
        if a.size:
            as_ = f" (as {n})" if several else ""
            for i, x in call.inputs.items():
                if x is not None and np.may_share_memory(a, x):
                    return f"input {i}{as_}"
            if any(np.may_share_memory(a, e) for e in earlier):
                return "an earlier result"
            for m, b in seen:
                if np.may_share_memory(a, b):
                    return f"output {m}{as_}"
            seen.append((n, a))
    return None


def _spell(name: str, shape: Optional[tuple], dt: Optional[str]) -> str:
    return f"{name} {dt}{list(shape) if shape is not None else 'NULL'}"


def outputs_text(outputs: Sequence[Sequence[Any]], written: Sequence[str]) -> str:
    """The outputs a call writes, as a message spells them: `out float32[4] and totalWeightOut float32[]`."""
    parts = [_spell(n, s, d) for n, s, d in outputs if n in written]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def aliased_text(aliased: str) -> str:
    """A result must be the backend's own new memory: not a view of an input, and not a buffer it
    handed out before (an earlier result would change under the caller)."""
    if aliased.startswith("output "):
        return (f"the result shares memory with {aliased}: two outputs of one call must each be "
                f"memory of their own")
    if aliased.startswith("input "):
        return (f"the result shares memory with {aliased}: the backend returned a view of its input, "
                f"not a result of its own")
    return ("the second call's result shares memory with the first's: the backend hands out a buffer "
            "it reuses, so an earlier result changes under the caller")


def run_calls(backend: Any, req: Request, repeat: int) -> List[Outcome]:
    """`repeat` calls on the same request (determinism makes two)."""
    outs: List[Outcome] = []
    kept: List[np.ndarray] = []
    for _ in range(repeat):
        out, raw = call_once(backend, req, kept)
        outs.append(out)
        kept.extend(raw or ())
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
        """One timing round (time_hook), in this process."""
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


# -- the timing hook, where the backend lives ---------------------------------------------------
# Its host's wall time is measured around it there: the protocol's host-clock rule
# (suite/perf/protocol.py) compares the two, and the wall must not include the socket to pytest.
# The answer is plain values, so it crosses the process boundary as it is.
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


def close_backend(backend: Any) -> Optional[str]:
    """Call the backend's optional close(); what went wrong comes back as one line."""
    close = getattr(backend, "close", None)
    if callable(close):
        try:
            close()
        except Exception as e:
            return f"the backend's close() raised {type(e).__name__}: {words(e)}"
    return None
