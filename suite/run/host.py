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

The process is forked by the suite's launcher (suite/run/launcher.py; pytest's side of it,
suite/run/starter.py), a clean process that listens on nothing: multiprocessing's forkserver, used
before, listened on a socket in /tmp that a backend could ask for an unconfined process. Any failure
to start a process (the launcher gone, /tmp cleaned by a backend, a refused fork) is a BackendError
of one line, so the case and those after it are reported, not lost to a traceback.

The transport is a Unix socket pair (suite/run/wire.py). A message is a header of plain values (pickled
without any class: the child's replies are unpickled with no globals allowed) and raw array bytes
read straight into the receiving arrays: one copy each way and no /dev/shm. The child gets the
case's contiguous inputs and builds the layout's views itself, so a backend sees exactly the views
it would see in-process. Every reply is checked whole (suite/run/protocol.py): the backend shares its
process with the serving code, and a malformed reply kills the process and fails only its case.
The serving code, the child's side, is suite/run/child.py; this module is the parent's.

The child's fd 1 and 2 are a second socket, read by a thread here into bounded per-case logs
(suite/run/output.py): pytest's capture would keep every byte a backend prints.

Determinism cases make their last call in a second process of the same backend (`Hosted.twin`),
so a result remembered by the first process is compared with one computed elsewhere, after a
history of calls of its own (suite/run/decoys.py).
"""
from __future__ import annotations

import signal
import socket
import time
from typing import Any, Dict, List, Optional, Tuple

from suite.run import confine, namespace, reaper, starter
from suite.common import dtypes
from suite.run.backend import BackendError, BackendInfo, make_backend
from suite.run.calls import InProcess, Outcome, Request, outputs_of, words, written_of
from suite.run.decoys import Decoys
from suite.run.output import Drain, Log
from suite.run import protocol
from suite.run.wire import ProtocolError, _Timeout, pending, recv, send, socket_pair

STARTUP_FLOOR = 120.0        # seconds a backend may take to start (device init, library loading)
CLOSE_GRACE = 30.0           # seconds close() and the exit handlers may take
_MAX_REPLY = 1 << 20         # bytes of a reply's header: a few outcomes of bounded text


class Fault(Exception):
    """The backend's process died, exited or overran its deadline during a call (or was not
    restarted). `kind` is the short form for records: 'signal 11 (SIGSEGV)', 'exit 0', 'deadline'."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


# -- the parent -------------------------------------------------------------------------------
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


def _indexed(inputs: Dict[str, Any]) -> Tuple[Dict[str, Optional[int]], List[Any]]:
    """A request's inputs as (name -> index into the message's arrays or None, the arrays)."""
    names: Dict[str, Optional[int]] = {}
    arrays: List[Any] = []
    for n, a in inputs.items():
        names[n] = None if a is None else len(arrays)
        if a is not None:
            arrays.append(a)
    return names, arrays


class Hosted:
    """The backend in a child process: started on first need and again after each fault."""

    copies = 1                                # of the inputs and results, one per process
    policy: Optional[confine.Policy] = None   # what the backend's process is confined to (the plugin's)
    decoys: Optional[Decoys] = None           # the second process's decoy calls (suite/run/decoys.py)

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
        self._seq = 0                         # numbers each request; its reply must carry the number
        self._drain: Optional[Drain] = None   # the process's stdout and stderr (suite/run/output.py)
        self._twin: Optional[Hosted] = None   # the second process of the determinism tests
        self._timed: Optional[Request] = None # the request whose call the process keeps for timing
        self._tmpdir: Optional[str] = None    # the process's own TMPDIR

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> BackendInfo:
        """Start the process and make the backend; BackendError if it cannot be made."""
        proc, mine, out_mine, tmpdir = self._launch()
        if self._drain is not None:
            self._drain.close()
        self._drain = Drain(out_mine)
        self._proc, self._sock, self._tmpdir = proc, mine, tmpdir
        self._timed = None                    # a fresh process keeps no call
        self.starts += 1
        limit = None if not self.timeout else max(STARTUP_FLOOR, 3 * self.timeout)
        try:
            header, _ = recv(mine, None if limit is None else time.monotonic() + limit, expect=[],
                             max_header=_MAX_REPLY, max_arrays=0)
            kind, fields = protocol.ready(header)
        except _Timeout:
            self._kill()
            raise BackendError(f"backend {self.spec or 'reference'!r} did not start within {limit:g} s "
                               f"(--case-timeout sets the start-up allowance too)") from None
        except ProtocolError as e:
            self._kill()
            raise BackendError(f"backend {self.spec or 'reference'!r}: protocol violation while starting: {e}") from None
        except (EOFError, OSError):
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

    def _launch(self) -> Tuple[starter.Child, socket.socket, socket.socket, str]:
        """A fresh backend process from the launcher (suite/run/starter.py), with its own TMPDIR
        and sockets; any failure to make one is a BackendError of one line (a backend that cleaned
        /tmp, a launcher that died: the case and the next are reported, not a traceback)."""
        tmpdir, socks = None, []
        try:
            tmpdir = namespace.fresh_tmpdir()  # the process's own (removed with it: _reap)
            policy = self.policy.for_process(tmpdir) if self.policy is not None else None
            mine, theirs = socket_pair()
            socks += [mine, theirs]
            out_mine, out_theirs = socket.socketpair()
            socks += [out_mine, out_theirs]
            proc = starter.start((self.spec, self.opts, policy, tmpdir), [theirs.fileno(), out_theirs.fileno()])
        except Exception as e:                # noqa: BLE001  (whatever it was, one line)
            for sock in socks:
                sock.close()
            confine.remove_tmpdir(tmpdir)
            why = " ".join(words(e if isinstance(e, starter.LaunchError) else f"{type(e).__name__}: {e}").split())
            raise BackendError(f"backend {self.spec or 'reference'!r}: its process could not be started ({why})") from None
        reaper.adopt(proc.pid)
        theirs.close()
        out_theirs.close()
        return proc, mine, out_mine, tmpdir

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
        reaper.release(proc.pid)              # what it left behind ends with it (suite/run/reaper.py)
        confine.remove_tmpdir(self._tmpdir)   # ... and so does its TMPDIR
        self._tmpdir = None
        return code

    def _kill(self) -> None:
        if self._proc is not None and self._proc.exitcode is None:
            self._proc.kill()
        self._reap()

    # -- calls --------------------------------------------------------------------------------
    def deadline_for(self, elements: int) -> Optional[float]:
        """Seconds a call may take: the base, plus 0.1 s per million elements it reads and writes."""
        return None if not self.timeout else self.timeout + elements * 1e-7

    def _serving(self) -> None:
        """A healthy process for the next request, or Fault: given up, or it could not be restarted."""
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
        if self._proc is not None and pending(self._sock):
            # Bytes nobody asked for, written after the last reply: the next reply could not be told
            # from them, so this process is done; no case was running (an incident, as above).
            self._kill()
            self.incidents.append("protocol violation: the backend's process wrote to the suite's socket "
                                  "between calls; it was killed and restarted")
        if self._proc is None:
            try:
                self.start()
            except BackendError as e:
                return self._fault(f"the backend could not be restarted: {e}", "restart failed")

    def run(self, req: Request, repeat: int = 1, deadline: Optional[float] = None) -> List[Outcome]:
        self._serving()
        if self.decoys is not None:
            self.decoys.before(self.starts, req, lambda r: self.run(r, 1, deadline))
        names, arrays = _indexed(req["inputs"])
        self._seq += 1
        header = ("run", self._seq, {**req, "inputs": names}, repeat)
        written = [(n, dtypes.canonical(d), tuple(s)) for n, s, d in outputs_of(req)      # each one, by name
                   if n in written_of(req) and s is not None and d is not None]
        want = [(d, s) for _, d, s in written]
        end = None if deadline is None else time.monotonic() + deadline * repeat
        self._busy = True
        try:
            send(self._sock, header, arrays, end)
            reply, results = recv(self._sock, end, expect=want, max_header=_MAX_REPLY,
                                  max_arrays=repeat * max(1, len(want)))
            outs = []
            for h in protocol.done(reply, self._seq, repeat, len(results), written, results):
                i = h.pop("array")
                outs.append(Outcome(arrays=None if i is None else {n: results[k] for n, k in i.items()}, **h))
        except _Timeout:
            self._kill()
            return self._fault(f"the call overran its deadline of {deadline * repeat:.4g} s "
                               f"(--case-timeout); the backend's process was killed", "deadline")
        except (EOFError, OSError):
            text, kind = _exit_text(self._reap())
            return self._fault(f"the backend's process {text} during the call", kind)
        except ProtocolError as e:
            self._kill()
            return self._fault(f"protocol violation: the backend's process sent a malformed reply ({e}); "
                               f"it was killed", "protocol")
        self.in_row = 0
        self._busy = False
        return outs

    def time(self, req: Request, launches: int, flush: bool, deadline: Optional[float] = None) -> Dict[str, Any]:
        """One timing round of `req`'s call in the backend's process (suite/run/calls.py time_hook), its
        arrays sent only when `req` is new; a fault raises Fault, as in run()."""
        self._serving()
        fresh = self._timed is not req
        names, arrays = _indexed(req["inputs"]) if fresh else ({}, [])
        self._seq += 1
        header = ("time", self._seq, {**req, "inputs": names} if fresh else None, launches, bool(flush))
        end = None if deadline is None else time.monotonic() + deadline
        self._busy = True
        try:
            send(self._sock, header, arrays, end)
            reply, _ = recv(self._sock, end, expect=[], max_header=_MAX_REPLY, max_arrays=0)
            answer = protocol.timed(reply, self._seq, launches)
        except _Timeout:
            self._kill()
            return self._fault(f"timing overran its deadline of {deadline:.4g} s; the process was killed", "deadline")
        except (EOFError, OSError):
            text, kind = _exit_text(self._reap())
            return self._fault(f"the backend's process {text} during timing", kind)
        except ProtocolError as e:
            self._kill()
            return self._fault(f"protocol violation: a malformed timing reply ({e}); the process was killed", "protocol")
        self._timed, self.in_row, self._busy = req, 0, False
        return answer

    def _fault(self, message: str, kind: str) -> List[Outcome]:
        self._busy = False
        self.in_row += 1
        self.last_fault = f"({message})"
        after = ("; a fresh backend process serves the next case" if self.in_row <= self.restarts else
                 f"; that is {self.in_row} faults in a row, so it is not restarted (--backend-restarts "
                 f"{self.restarts}) and every remaining case fails")
        raise Fault(message + after, kind)

    def twin(self) -> "Hosted":
        """A second process of the same backend, started on the first determinism case and kept:
        it makes that test's last call, so a result that is the same twice only because the first
        process remembers it (a cache, state left over from the numbers test of the same case)
        is compared with one computed elsewhere, from inputs received into fresh memory."""
        if self._twin is None:
            self._twin = Hosted(self.spec, self.opts, self.timeout, self.restarts)
            self._twin.info = self.info           # it must start as the first did
            self._twin.policy = self.policy       # ... and be confined as the first is
            self._twin.decoys = Decoys()          # ... but see a call history of its own
        return self._twin

    def take_output(self) -> Optional[Log]:
        """What the backend's process wrote to its stdout and stderr since the last take: the last
        call's output, with whatever it wrote before the call (start-up, between calls)."""
        if self._drain is None:
            return None
        ended = self._proc is None or not self._proc.is_alive()
        return self._drain.take(wait=1.0 if ended else 0.0)

    def close(self) -> Optional[str]:
        """End the process: the backend's close() and exit handlers run there. What went wrong, if
        anything, comes back as one line (an incident of the run), never as an exception."""
        found = self._end()
        if self._drain is not None:
            self._drain.close()               # what close() printed is dropped with it
            self._drain = None
        twin, self._twin = self._twin, None
        if twin is not None:
            other = twin.close()
            if other:
                found = "; ".join(filter(None, [found, f"the backend's second process: {other}"]))
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
            reply, _ = recv(self._sock, time.monotonic() + CLOSE_GRACE, expect=[], max_header=_MAX_REPLY,
                            max_arrays=0)
            incident = protocol.closed(reply)
        except _Timeout:
            self._kill()
            return f"the backend's close() did not return within {CLOSE_GRACE:g} s; its process was killed"
        except ProtocolError as e:
            self._kill()
            return f"protocol violation: the backend's process sent a malformed reply to close ({e}); it was killed"
        except (EOFError, OSError):
            text, _ = _exit_text(self._reap())
            return f"the backend's process {text} during close() or its exit handlers"
        code = self._reap()
        if incident is None and code not in (0, None):
            text, _ = _exit_text(code)
            incident = f"the backend's process {text} after close()"
        return incident


def make_host(spec: Optional[str], opts: Dict[str, str], *, isolation: str, timeout: float, restarts: int,
              policy: Optional[confine.Policy]) -> Any:
    """The host of a backend as --isolation says: a process of its own, started now with these
    deadlines, restarts and confinement, or (`none`) an object in pytest's process. The candidate
    and the timing baseline are both made here, so that they are hosted alike. BackendError if the
    backend cannot be made."""
    if isolation == "none":
        return InProcess(make_backend(spec, opts))
    hosted = Hosted(spec, opts, timeout, restarts)
    hosted.policy = policy
    hosted.start()
    return hosted
