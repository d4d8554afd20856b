"""Backends that misbehave as native code does: each is the reference backend, with one fault
planted on the calls with reduction=mean (the other calls must still pass, proving the run went
on). Named on the command line as tests.misbehaving:NAME by tests/test_faults.py."""
from __future__ import annotations

import atexit
import ctypes
import os
import socket
import sys
import threading
import time

import numpy as np

from suite.backends.reference import ReferenceBackend
from suite.contract import AclnnError, DeviceFault, OpCall


def _mean(call: OpCall) -> bool:
    return call.attrs.get("reduction") == 1


class _OnMean(ReferenceBackend):
    """The reference backend, with `fault` planted on the calls with reduction=mean."""

    def fault(self) -> None:
        raise NotImplementedError

    def run(self, call: OpCall) -> np.ndarray:
        if _mean(call):
            self.fault()
        return super().run(call)


class Segfault(_OnMean):
    name = "segfault"

    def fault(self) -> None:
        ctypes.string_at(0)                      # a real SIGSEGV: reads address 0


class ExitZero(_OnMean):
    name = "exit-0"

    def fault(self) -> None:
        os._exit(0)


class ExitThree(_OnMean):
    name = "exit-3"

    def fault(self) -> None:
        os._exit(3)


class SysExit(_OnMean):
    name = "sys-exit"

    def fault(self) -> None:
        sys.exit(0)


class Hang(_OnMean):
    name = "hang"

    def fault(self) -> None:
        time.sleep(3600)


class ReusedBuffer(ReferenceBackend):
    """Hands out one preallocated buffer per shape: a second result overwrites the first."""
    name = "reused-buffer"

    def __init__(self) -> None:
        super().__init__()
        self._buffers: dict = {}

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        if not _mean(call):
            return out
        buf = self._buffers.setdefault((out.shape, out.dtype.str), np.empty_like(out))
        buf[...] = out
        return buf


class Wrong(ReferenceBackend):
    """Doubles the mean results: a plain numeric failure."""
    name = "wrong"

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        return (out.astype(np.float64) * 2).astype(out.dtype) if _mean(call) else out


class ExitInClose(Wrong):
    """Fails a case, then exits with 0 while closing: the run must still fail."""
    name = "exit-in-close"

    def close(self) -> None:
        os._exit(0)


class ExitAtExit(Wrong):
    """Fails a case, then exits with 0 from an exit handler."""
    name = "exit-at-exit"

    def __init__(self) -> None:
        super().__init__()
        atexit.register(os._exit, 0)


def after_the_reply(then) -> None:
    """Call `then` from a thread of the backend's own once its reply has gone: when the serving loop
    (suite/run/child.py) waits in suite/run/wire.py's recv for the next request. Not after a fixed
    time: on a loaded machine the reply may not have gone 50 ms later (issue 42 item 16)."""
    main = threading.main_thread().ident

    def waiting() -> bool:
        f = sys._current_frames().get(main)
        while f is not None:
            if f.f_code.co_name == "recv" and f.f_code.co_filename.endswith(os.path.join("run", "wire.py")):
                return True
            f = f.f_back
        return False

    def watch() -> None:
        while not waiting():
            time.sleep(0.005)
        then()
    threading.Thread(target=watch, daemon=True).start()


class ExitAfterReturning(_OnMean):
    """Answers the mean calls correctly, then a thread of its own ends the process (once the reply
    has gone)."""
    name = "exit-after-returning"

    def fault(self) -> None:
        after_the_reply(lambda: os._exit(0))


class RaisingInit(ReferenceBackend):
    name = "raising-init"

    def __init__(self) -> None:
        raise RuntimeError("no device 0")


class CrashAlways(ReferenceBackend):
    name = "crash-always"

    def run(self, call: OpCall) -> np.ndarray:
        os._exit(7)


# -- the wire, the output, the contract's small print (issue 20) ------------------------------
def wire_socket() -> socket.socket:
    """The suite's socket in the backend's process: its one socket past fds 0-2 (found, as a
    native library could, by scanning its descriptors)."""
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            link = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if int(name) > 2 and link.startswith("socket:"):
            return socket.socket(fileno=os.dup(int(name)))
    raise RuntimeError("no socket")


class SocketJunk(_OnMean):
    """Writes 24 zero bytes to the suite's socket (a frame that announces nothing), then answers
    correctly."""
    name = "socket-junk"

    def fault(self) -> None:
        with wire_socket() as s:
            s.sendall(bytes(24))


class ForgedReply(_OnMean):
    """Writes a well-framed message of its own ahead of the real reply: ('done', ['x']), the shape
    of a reply whose outcome is a string."""
    name = "forged-reply"

    def fault(self) -> None:
        from suite.run.wire import send
        with wire_socket() as s:
            send(s, ("done", ["x"]))


class Noisy(Wrong):
    """Prints about a megabyte on every call, half through Python, half straight to fd 2 (as a
    native library logs); its mean results are wrong, so those cases fail and show the output."""
    name = "noisy"
    size = 1 << 20

    def run(self, call: OpCall) -> np.ndarray:
        half = self.size // 2
        print("NOISY-START " + "p" * (half - 24) + " NOISY-PY-END")
        os.write(2, b"n" * (half - 16) + b" NOISY-FD-END\n")
        return super().run(call)


class CachedNondeterministic(ReferenceBackend):
    """A kernel whose mean results differ from one process to the next in their last bit (as
    atomic adds in arrival order do), behind a per-process result cache, so that two calls in one
    process agree. Which process it is (the first of the run, or one started while another lives:
    the determinism tests' second) is read from its parent's children, the launcher's, so the
    difference is certain, not a coin toss. (Each process has a TMPDIR of its own: a mark file
    there would tell nothing.)"""
    name = "cached-nondeterministic"

    def __init__(self) -> None:
        super().__init__()
        self._cache: dict = {}
        ppid, others = os.getppid(), []
        for tid in os.listdir(f"/proc/{ppid}/task"):
            with open(f"/proc/{ppid}/task/{tid}/children") as f:
                others += [int(p) for p in f.read().split() if int(p) != os.getpid()]
        self._later = bool(others)

    def run(self, call: OpCall) -> np.ndarray:
        if not _mean(call):
            return super().run(call)
        key = tuple((n, None if a is None else a.tobytes()) for n, a in call.inputs.items())
        if key not in self._cache:
            out = np.array(super().run(call), copy=True)
            if self._later and out.size:
                flat = out.reshape(-1)
                flat[0] = np.nextafter(flat[0], np.inf, dtype=flat.dtype)
            self._cache[key] = out
        return self._cache[key].copy()


class FloatStatus(_OnMean):
    """Rejects the mean calls with a status that is not an int."""
    name = "float-status"

    def fault(self) -> None:
        e = AclnnError(161002)
        e.status = 161002.5
        raise e


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no words")


class BrokenStr(_OnMean):
    """Raises an exception whose __str__ raises."""
    name = "broken-str"

    def fault(self) -> None:
        raise _Unprintable()


class MaskedResult(ReferenceBackend):
    """Returns the mean results as masked arrays: one element masked."""
    name = "masked-result"

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        if not _mean(call) or not out.size:
            return out
        mask = np.zeros(out.shape, bool)
        mask.reshape(-1)[0] = True
        return np.ma.masked_array(out, mask=mask)


class MatrixResult(ReferenceBackend):
    """Returns every 2-d result as an np.matrix and every other as an unmasked masked array:
    correct values in numpy subclasses."""
    name = "matrix-result"

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        return np.asmatrix(out) if out.ndim == 2 else np.ma.masked_array(out)


class RecoveredNo(_OnMean):
    """A device fault whose `recovered` is the string "no"."""
    name = "recovered-no"

    def fault(self) -> None:
        raise DeviceFault("aicore exception", 507015, recovered="no")
