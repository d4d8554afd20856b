"""What the backend's process prints, kept per case in bounded memory.

Why: the backend's file descriptors 1 and 2 would otherwise be pytest's capture files, and pytest
keeps about 1.5 bytes of memory per byte printed until the test's report is made: a native library
logging a megabyte a call would run a default run out of memory. So the backend's process writes
its fd 1 and 2 (Python's print and native writes alike) into a socket that a thread of the
suite's process reads as it comes, keeping only the first and last HEAD bytes of each case and
counting the rest. A failing case's message shows them; a passing case's are dropped."""
from __future__ import annotations

import os
import select
import socket
import sys
import threading
from typing import Any, List, Optional, Sequence, Tuple

HEAD = TAIL = 4096            # bytes kept from the start and from the end of one case's output
_CHUNK = 1 << 16


class Log:
    """One case's output: its first HEAD bytes, its last TAIL bytes, and how many there were."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = HEAD - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data[-TAIL:]
            if len(self.tail) > TAIL:
                del self.tail[:len(self.tail) - TAIL]

    @property
    def left_out(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def lines(self, who: str = "the backend's process") -> List[str]:
        """The failure message's part: what was printed, cut in the middle where it was long."""
        if not self.total:
            return []
        def text(b: bytearray) -> List[str]:
            return ["    | " + line for line in bytes(b).decode("utf-8", "replace").splitlines()]
        if not self.left_out:
            return [f"  {who} wrote {self.total} bytes to its stdout and stderr:"] + text(self.head + self.tail)
        return ([f"  {who} wrote {self.total} bytes to its stdout and stderr; the first {len(self.head)} and "
                 f"the last {len(self.tail)}, {self.left_out} bytes left out between them:"]
                + text(self.head) + [f"    | [... {self.left_out} bytes left out ...]"] + text(self.tail))


class Drain:
    """Reads the backend process's output socket in a daemon thread into the current Log, so the
    process never blocks on a full pipe; `take` hands over the Log and starts the next one."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self._sock = sock
        self._lock = threading.Lock()
        self._log = Log()
        self._eof = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="aclnn-conformance-output", daemon=True)
        self._thread.start()

    def _read(self, chunks: int = -1) -> bool:
        """What is readable now, at most `chunks` chunks (-1: all), under the lock (False: the other
        end is closed)."""
        while chunks:
            chunks -= 1
            try:
                data = self._sock.recv(_CHUNK)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                return False
            if not data:
                return False
            self._log.add(data)
        return True

    def _loop(self) -> None:
        while not self._stop:
            try:
                ready, _, _ = select.select([self._sock], [], [], 0.5)
            except (OSError, ValueError):
                break
            if ready:
                with self._lock:
                    if not self._read(16):
                        break
        self._eof.set()

    def take(self, wait: float = 0.0) -> Log:
        """The output since the last take. The process flushes its buffers before each reply, so
        all it wrote during a call is in the socket by the time the reply is read. `wait`: after
        the process ended, how long to wait for the rest (a child of its own may hold the socket)."""
        if wait:
            self._eof.wait(wait)
        with self._lock:
            if not self._eof.is_set():
                self._read()
            log, self._log = self._log, Log()
        return log

    def close(self) -> None:
        self._stop = True
        self._thread.join(2.0)
        try:
            self._sock.close()
        except OSError:
            pass


def output_lines(logs: Sequence[Tuple[str, Optional[Log]]]) -> List[str]:
    """(who, Log or None) pairs as message lines."""
    out: List[str] = []
    for who, log in logs:
        if log is not None:
            out += log.lines(who)
    return out


# -- the child's half: its fd 1 and 2 are the socket the parent's Drain reads ----------------------
def redirect_output(out: Optional[socket.socket]) -> None:
    """The process's fd 1 and 2 become `out` (read by suite.output.Drain in the parent): print and
    native writes alike, never pytest's capture files."""
    if out is None:
        return
    flush_output()
    for fd in (1, 2):
        os.dup2(out.fileno(), fd)
    out.close()


def flush_output() -> None:
    """Python's and C's buffered output, written now: what a call printed belongs to its case."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:                      # replaced or closed by the backend: nothing to flush
            pass
    try:
        _libc().fflush(None)
    except (OSError, AttributeError):
        pass


_LIBC: Any = None


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        import ctypes
        _LIBC = ctypes.CDLL(None)
    return _LIBC
