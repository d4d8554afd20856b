"""Where the backend under test runs: in a process of its own (the default), or in pytest's.

Why a process: a backend is native code. It may segfault, call exit() with any code (0 included),
hang, or scribble on memory; inside the pytest process any of these ends the run, loses the reports
or turns a failing run green. In a process of its own each of them costs the one case it happened
in: the suite sees the process die, or overrun the case's deadline, kills it, fails the case with
the signal, exit code or deadline, starts a fresh backend for the next case and goes on. A backend
that faults on more than `restarts` cases in a row is not started again: every remaining case
fails at once, naming the last fault, so a backend that crashes on everything still ends quickly.

One process per pytest process (one per xdist worker). Why not pytest-xdist's crash handling and
pytest-timeout: they guard only `-n` runs (a serial run still dies with its backend), pytest-timeout
can interrupt native code only by ending the whole process, and neither outlives an exit(0) in a
backend's close() or atexit handler. Process pools (pebble, loky) pickle their arguments, which
turns every strided or reversed view into a contiguous copy and doubles a 2^31-element case.

The transport is a Unix socket pair. A message is a header of plain values (pickled without any
class: the child's replies are unpickled with no globals allowed) and raw array bytes read straight
into the receiving arrays: one copy each way and no /dev/shm. The child gets the case's contiguous
inputs and builds the layout's views itself, so a backend sees exactly the views it would see
in-process.
"""
from __future__ import annotations

import atexit
import io
import multiprocessing
import os
import pickle
import signal
import socket
import struct
import sys
import time
import types
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from suite import dtypes, layout
from suite import confine, reaper
from suite.backend import BackendError, BackendInfo, make_backend
from suite.contract import AclnnError, DeviceFault, OpCall, Unsupported

# A request: op, inputs (name -> contiguous array or None), layout, attrs, out_shape, out_dtype
# (a dtype name or None), product. Plain values, so it crosses the process boundary as it is.
Request = Dict[str, Any]

STARTUP_FLOOR = 120.0        # seconds a backend may take to start (device init, library loading)
CLOSE_GRACE = 30.0           # seconds close() and the exit handlers may take


@dataclass
class Outcome:
    """What one call of backend.run came to, in either process."""

    array: Optional[np.ndarray] = None     # the result: an array of exactly out_shape and out_dtype
    status: Optional[int] = None           # AclnnError's status
    unsupported: Optional[str] = None      # Unsupported's reason
    raised: Optional[str] = None           # any other exception: "TypeError: ..."
    returned: Optional[str] = None         # what came back instead of such an array
    aliased: Optional[str] = None          # the result shares memory with: "input NAME" or "an earlier result"
    device_fault: Optional[str] = None     # DeviceFault's message (with its status)
    device_lost: bool = False              # ... and the backend could not recover the device


class Fault(Exception):
    """The backend's process died, exited or overran its deadline during a call (or was not
    restarted). `kind` is the short form for records: 'signal 11 (SIGSEGV)', 'exit 0', 'deadline'."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def call_of(req: Request) -> OpCall:
    """The OpCall a backend receives: the inputs in the case's layout, read-only."""
    views = {n: None if a is None else layout.view(req["layout"], a) for n, a in req["inputs"].items()}
    out_dtype = None if req["out_dtype"] is None or req["out_shape"] is None else dtypes.dtype_of(req["out_dtype"])
    return OpCall(op=req["op"], inputs=views, attrs=dict(req["attrs"]), out_shape=req["out_shape"],
                  out_dtype=out_dtype, product=req["product"])


def _describe(got: Any) -> str:
    if not isinstance(got, np.ndarray):
        return f"{type(got).__name__}, not a numpy array"
    return f"shape {tuple(got.shape)} dtype {dtypes.name_of(got.dtype)}"


def call_once(backend: Any, req: Request, earlier: Sequence[np.ndarray]) -> Tuple[Outcome, Optional[np.ndarray]]:
    """Run one call and classify what came back. Also returns the raw result, kept by the caller
    so that a later call's result can be checked for sharing its memory."""
    call = call_of(req)
    try:
        got = backend.run(call)
    except AclnnError as e:
        return Outcome(status=e.status), None
    except Unsupported as e:
        return Outcome(unsupported=str(e)), None
    except DeviceFault as e:
        status = "" if e.status is None or str(e.status) in e.message else f" (status {e.status})"
        return Outcome(device_fault=f"{e.message}{status}", device_lost=not e.recovered), None
    except Exception as e:
        return Outcome(raised=f"{type(e).__name__}: {e}"), None
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
        if raw is not None:
            kept.append(raw)
    return outs


# -- in pytest's own process ------------------------------------------------------------------
class InProcess:
    """`--isolation none`: the backend is an object in this process (a debugger reaches it; a crash
    ends the run)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.info = BackendInfo.of(backend)

    def run(self, req: Request, repeat: int = 1, deadline: Optional[float] = None) -> List[Outcome]:
        return run_calls(self.backend, req, repeat)

    def close(self) -> Optional[str]:
        return close_backend(self.backend)


def close_backend(backend: Any) -> Optional[str]:
    """Call the backend's optional close(); what went wrong comes back as one line."""
    close = getattr(backend, "close", None)
    if callable(close):
        try:
            close()
        except Exception as e:
            return f"the backend's close() raised {type(e).__name__}: {e}"
    return None


# -- the wire ---------------------------------------------------------------------------------
# A message: a fixed part (header length, number of arrays, their total bytes), the header, then
# the arrays' bytes. A small message goes in one write and is read in two; a large one is read
# straight into its arrays.
_HEAD = struct.Struct("<QQQ")
_MAX_HEADER = 1 << 26
_MAX_ARRAYS = 64
_CHUNK = 1 << 24
_SMALL = 1 << 20
_SOCKET_BUFFER = 4 << 20       # the kernel's default (~200 kB) makes large transfers 7x slower


class _Plain(pickle.Unpickler):
    """Containers, strings and numbers only: a reply naming any class is malformed."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a reply may not name {module}.{name}")


class _Timeout(Exception):
    pass


def _deadline_left(deadline: Optional[float]) -> Optional[float]:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Timeout()
    return left


def socket_pair() -> Tuple[socket.socket, socket.socket]:
    pair = socket.socketpair()
    for sock in pair:
        for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, _SOCKET_BUFFER)
            except OSError:                  # capped or refused: slower, not wrong
                pass
    return pair


def send(sock: socket.socket, header: Any, arrays: Sequence[np.ndarray] = (),
         deadline: Optional[float] = None) -> None:
    metas, raws = [], []
    for a in arrays:
        a = a if a.flags.c_contiguous else np.array(a, order="C")      # (ascontiguousarray makes 0-d 1-d)
        metas.append((dtypes.name_of(a.dtype), tuple(int(n) for n in a.shape)))
        if a.size:
            raws.append(memoryview(a.reshape(-1).view(np.uint8)))
    head = pickle.dumps((header, metas), protocol=4)
    total = sum(len(r) for r in raws)
    fixed = _HEAD.pack(len(head), len(metas), total)
    if total <= _SMALL:
        chunks = [b"".join([fixed, head, *raws])]
    else:
        chunks = [fixed + head] + [r[i:i + _CHUNK] for r in raws for i in range(0, len(r), _CHUNK)]
    try:
        for chunk in chunks:
            sock.settimeout(_deadline_left(deadline))
            sock.sendall(chunk)
    except socket.timeout:
        raise _Timeout() from None


def _read_into(sock: socket.socket, view: memoryview, deadline: Optional[float]) -> None:
    pos, n = 0, len(view)
    while pos < n:
        sock.settimeout(_deadline_left(deadline))
        try:
            got = sock.recv_into(view[pos:], min(n - pos, _CHUNK))
        except socket.timeout:
            raise _Timeout() from None
        if got == 0:
            raise EOFError("the connection closed")
        pos += got


def _dtype(name: Any) -> np.dtype:
    if not isinstance(name, str):
        raise ValueError(f"dtype {name!r}")
    try:
        return dtypes.dtype_of(name)
    except KeyError:
        raise ValueError(f"unexpected dtype {name!r}") from None


def _metas(metas: Any, count: int, total: int, expect: Optional[List[Tuple[str, tuple]]]) -> List[Tuple[np.dtype, tuple, int]]:
    if not isinstance(metas, list) or len(metas) != count:
        raise ValueError("array list does not match the header")
    out, size = [], 0
    for meta in metas:
        name, shape = meta
        if expect is not None and (name, tuple(shape)) not in expect:
            raise ValueError(f"an array of dtype {name} shape {shape} that was not asked for")
        if not isinstance(shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise ValueError(f"shape {shape!r}")
        dt = _dtype(name)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        out.append((dt, shape, nbytes))
        size += nbytes
    if size != total:
        raise ValueError(f"arrays of {size} bytes announced as {total}")
    return out


def recv(sock: socket.socket, deadline: Optional[float] = None,
         expect: Optional[List[Tuple[str, tuple]]] = None) -> Tuple[Any, List[np.ndarray]]:
    """One message. Arrays are allocated from the header's dtype and shape, and must be among
    `expect` where given (the parent never allocates what it did not ask for)."""
    fixed = bytearray(_HEAD.size)
    _read_into(sock, memoryview(fixed), deadline)
    hlen, count, total = _HEAD.unpack(fixed)
    if hlen > _MAX_HEADER or count > _MAX_ARRAYS:
        raise ValueError(f"a header of {hlen} bytes with {count} arrays")
    small = total <= _SMALL
    buf = bytearray(hlen + total if small else hlen)
    _read_into(sock, memoryview(buf), deadline)
    header, metas = _Plain(io.BytesIO(bytes(buf[:hlen]))).load()
    arrays, pos = [], hlen
    for dt, shape, nbytes in _metas(metas, count, total, expect):
        if small:
            a = np.frombuffer(buf, dtype=dt, count=nbytes // dt.itemsize, offset=pos).reshape(shape)
            pos += nbytes
        else:
            a = np.empty(shape, dtype=dt)
            if a.size:
                _read_into(sock, memoryview(a.reshape(-1).view(np.uint8)), deadline)
        arrays.append(a)
    return header, arrays


# -- the child --------------------------------------------------------------------------------
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
            "returned": o.returned, "aliased": o.aliased, "device_fault": o.device_fault,
            "device_lost": o.device_lost}


def child_main(sock: socket.socket, spec: Optional[str], opts: Dict[str, str],
               policy: Optional[confine.Policy] = None) -> None:
    """The backend's process: confine itself (suite/confine.py), make the backend, then serve
    requests until told to close."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)         # Ctrl-C is the parent's to handle
    _die_with_parent()
    try:
        if policy is not None:
            policy.apply()
        backend = make_backend(spec, opts)
        info = BackendInfo.of(backend)
    except BackendError as e:
        send(sock, ("error", str(e)))
        return
    except BaseException as e:                # SystemExit included: a start-up that exits is an error
        send(sock, ("error", f"backend {spec or 'reference'!r} failed to start: {type(e).__name__}: {e}"))
        return
    send(sock, ("ready", {"name": info.name, "capabilities": sorted(info.capabilities),
                          "products": list(info.products), "deterministic": info.deterministic,
                          "working_memory": info.working_memory}))
    while True:
        try:
            header, arrays = recv(sock)
        except (EOFError, OSError):
            os._exit(0)                        # the parent is gone
        if header[0] == "run":
            req, repeat = header[1], header[2]
            req["inputs"] = {n: None if i is None else arrays[i] for n, i in req["inputs"].items()}
            outs = run_calls(backend, req, repeat)
            payload = [o.array for o in outs if o.array is not None]
            heads, k = [], 0
            for o in outs:
                heads.append(_outcome_header(o, k if o.array is not None else None))
                k += o.array is not None
            del outs
            send(sock, ("done", heads), payload)
            # Nothing of a call outlives its reply: a huge case's input and result would otherwise
            # stay held while the parent draws and sends the next case (and its memory check sees less).
            header = arrays = req = payload = o = None
        elif header[0] == "close":
            incident = close_backend(backend)
            # The backend's own exit handlers run here, where nothing they do reaches the run.
            atexit._run_exitfuncs()
            send(sock, ("closed", incident))
            os._exit(0)


# -- the parent -------------------------------------------------------------------------------
def _context() -> Any:
    """forkserver where there is one: children fork from a clean server process (no threads of
    pytest's or xdist's, no CUDA state), in milliseconds."""
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["numpy", "ml_dtypes", "suite.host", "suite._subreaper"])
        return ctx
    return multiprocessing.get_context("spawn")


def _start_without_main(proc: Any) -> None:
    """Start `proc` as if `__main__` were empty: spawn and forkserver otherwise run the main script
    again in the child (a test runner script without a main guard would start a second run)."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        proc.start()
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _exit_text(code: Optional[int]) -> Tuple[str, str]:
    if code is None:
        return "closed its connection", "closed"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown"
        return f"was killed by signal {-code} ({name})", f"signal {-code} ({name})"
    return f"exited with code {code}", f"exit {code}"


class Hosted:
    """The backend in a child process: started on first need and again after each fault."""

    copies = 1                                # of the inputs and results, one per process
    policy: Optional[confine.Policy] = None   # what the backend's process is confined to (the plugin's)

    def __init__(self, spec: Optional[str], opts: Dict[str, str], timeout: float = 60.0,
                 restarts: int = 8) -> None:
        self.spec, self.opts, self.timeout, self.restarts = spec, dict(opts), timeout, restarts
        self.backend = None                   # no object in this process
        self._proc: Any = None
        self._sock: Optional[socket.socket] = None
        self.info: Optional[BackendInfo] = None
        self.in_row = 0                       # faults since the last call that came back
        self._busy = False                    # a call is in flight (the run was interrupted in it)
        self.incidents: List[str] = []        # what went wrong outside any case
        self.last_fault: Optional[str] = None
        self.starts = 0

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> BackendInfo:
        """Start the process and make the backend; BackendError if it cannot be made."""
        ctx = _context()
        mine, theirs = socket_pair()
        proc = ctx.Process(target=child_main, args=(theirs, self.spec, self.opts, self.policy), daemon=True,
                           name="aclnn-conformance-backend")
        _start_without_main(proc)
        reaper.adopt(proc.pid)
        theirs.close()
        self._proc, self._sock = proc, mine
        self.starts += 1
        limit = None if not self.timeout else max(STARTUP_FLOOR, 3 * self.timeout)
        try:
            header, _ = recv(mine, None if limit is None else time.monotonic() + limit, expect=[])
            kind, fields = header
        except _Timeout:
            self._kill()
            raise BackendError(f"backend {self.spec or 'reference'!r} did not start within {limit:g} s "
                               f"(--case-timeout sets the start-up allowance too)") from None
        except (EOFError, OSError, ValueError, pickle.UnpicklingError, TypeError):
            text, _ = _exit_text(self._reap())
            raise BackendError(f"backend {self.spec or 'reference'!r}: its process {text} while starting") from None
        if kind == "error":
            self._reap()
            raise BackendError(str(fields))
        info = BackendInfo(name=fields["name"], capabilities=frozenset(fields["capabilities"]),
                           products=tuple(fields["products"]), deterministic=fields["deterministic"],
                           working_memory=fields["working_memory"])
        if self.info is not None and info != self.info:
            self._kill()
            raise BackendError(f"backend restarted as {info}, not as it first started ({self.info})")
        self.info = info
        return info

    def _reap(self, wait: float = 5.0) -> Optional[int]:
        """The process's exit code once it has ended (killed if it has not within `wait`)."""
        proc, self._proc = self._proc, None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if proc is None:
            return None
        proc.join(wait)
        code = proc.exitcode
        if code is None:
            proc.kill()
            proc.join()
        reaper.release(proc.pid)              # what it left behind ends with it (suite/reaper.py)
        return code

    def _kill(self) -> None:
        if self._proc is not None and self._proc.exitcode is None:
            self._proc.kill()
        self._reap()

    # -- calls --------------------------------------------------------------------------------
    def deadline_for(self, elements: int) -> Optional[float]:
        """Seconds a call may take: the base, plus 0.1 s per million elements it reads and writes."""
        return None if not self.timeout else self.timeout + elements * 1e-7

    def run(self, req: Request, repeat: int = 1, deadline: Optional[float] = None) -> List[Outcome]:
        if self.in_row > self.restarts:
            raise Fault(f"not run: the backend faulted on {self.in_row} cases in a row, the last "
                        f"{self.last_fault}; it is not restarted again (--backend-restarts {self.restarts})",
                        "gave up")
        if self._proc is not None and not self._proc.is_alive():
            # It ended after its last reply (a thread of its own, a timer): no case was running,
            # so none fails; the run does (an incident), and a fresh backend serves this case.
            text, _ = _exit_text(self._reap())
            self.incidents.append(f"the backend's process {text} between calls, after a call had "
                                  f"returned; it was restarted")
        if self._proc is None:
            try:
                self.start()
            except BackendError as e:
                return self._fault(f"the backend could not be restarted: {e}", "restart failed")
        names, arrays = {}, []
        for n, a in req["inputs"].items():
            names[n] = None if a is None else len(arrays)
            if a is not None:
                arrays.append(a)
        header = ("run", {**req, "inputs": names}, repeat)
        want = []
        if req["out_shape"] is not None and req["out_dtype"] is not None:
            want = [(dtypes.canonical(req["out_dtype"]), tuple(req["out_shape"]))]
        end = None if deadline is None else time.monotonic() + deadline * repeat
        self._busy = True
        try:
            send(self._sock, header, arrays, end)
            reply, results = recv(self._sock, end, expect=want)
            if reply[0] != "done" or len(reply[1]) != repeat:
                raise ValueError(f"reply {reply[0]!r}")
            outs = []
            for h in reply[1]:
                i = h.pop("array")
                outs.append(Outcome(array=None if i is None else results[i], **h))
        except _Timeout:
            self._kill()
            return self._fault(f"the call overran its deadline of {deadline * repeat:.4g} s "
                               f"(--case-timeout); the backend's process was killed", "deadline")
        except (EOFError, OSError):
            text, kind = _exit_text(self._reap())
            return self._fault(f"the backend's process {text} during the call", kind)
        except (ValueError, TypeError, KeyError, IndexError, pickle.UnpicklingError) as e:
            self._kill()
            return self._fault(f"the backend's process sent a malformed reply ({e}); it was killed", "protocol")
        self.in_row = 0
        self._busy = False
        return outs

    def _fault(self, message: str, kind: str) -> List[Outcome]:
        self._busy = False
        self.in_row += 1
        self.last_fault = f"({message})"
        after = ("; a fresh backend process serves the next case" if self.in_row <= self.restarts else
                 f"; that is {self.in_row} faults in a row, so it is not restarted (--backend-restarts "
                 f"{self.restarts}) and every remaining case fails")
        raise Fault(message + after, kind)

    def close(self) -> Optional[str]:
        """End the process: the backend's close() and exit handlers run there. What went wrong, if
        anything, comes back as one line (an incident of the run), never as an exception."""
        found = self._end()
        return "; ".join(self.incidents + ([found] if found else [])) or None

    def _end(self) -> Optional[str]:
        if self._proc is None:
            return None
        if not self._busy and not self._proc.is_alive():
            text, _ = _exit_text(self._reap())
            return f"the backend's process {text} after its last call, before close()"
        if self._busy:
            # The run was interrupted inside a call: nothing to wait for, and not the backend's fault.
            self._kill()
            return None
        try:
            send(self._sock, ("close",), (), time.monotonic() + CLOSE_GRACE)
            reply, _ = recv(self._sock, time.monotonic() + CLOSE_GRACE, expect=[])
            incident = reply[1] if reply[0] == "closed" else f"unexpected reply {reply[0]!r} to close"
        except _Timeout:
            self._kill()
            return f"the backend's close() did not return within {CLOSE_GRACE:g} s; its process was killed"
        except (EOFError, OSError, ValueError, pickle.UnpicklingError, TypeError):
            text, _ = _exit_text(self._reap())
            return f"the backend's process {text} during close() or its exit handlers"
        code = self._reap()
        if incident is None and code not in (0, None):
            text, _ = _exit_text(code)
            incident = f"the backend's process {text} after close()"
        return incident
