"""pytest's side of the launcher (suite/run/launcher.py, which says why there is one): starts it on
first need, and again where it has died (a backend on a kernel without Landlock's signal scoping
could kill it) or where this process is a fork of the one that started it (mutmut forks the test
process: the parent's launcher is not the fork's to use); asks it for a backend process; and
`Child`, the handle host.py keeps of one (pid, exitcode, is_alive, join, kill), read from the
status pipe the launcher writes the exit code to.

Where a session asked for the mount-namespace wall and bubblewrap works (suite/run/namespace.py),
the launcher is started under bwrap: its parent is then bwrap (which dies with this process,
--die-with-parent), and that is the parent it checks for; pids are the same on both sides (no pid
namespace), so the reaper's walk and the Child handles are unchanged.

Any failure to start a process (the launcher would not start, died during the request, the fork
was refused) is a LaunchError with one line saying why: host.py makes it the backend's start-up
error, never a traceback.
"""
from __future__ import annotations

import atexit
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from suite.run import namespace
from suite.run.launcher import MAX_REQUEST, STATUS

START_S = 120.0                 # seconds the launcher may take to start (a fresh interpreter, numpy)
REPLY_S = 60.0                  # seconds it may take to fork one process
_ROOT = str(Path(__file__).resolve().parents[2])     # the folder `suite` is imported from


class LaunchError(Exception):
    """A backend process could not be started; the message is one line."""


class Child:
    """A backend process the launcher forked: its pid, and its exit code once the launcher has
    reaped it (None before). If the launcher ends first, the process has ended with it (its
    parent-death signal, suite/run/child.py): its exit code then reads as SIGKILL."""

    def __init__(self, pid: int, status: int) -> None:
        self.pid, self._status = pid, status
        self.exitcode: Optional[int] = None

    def _ended(self, timeout: Optional[float]) -> bool:
        if self._status is None:
            return True
        ready, _, _ = select.select([self._status], [], [], timeout)
        if not ready:
            return False
        data = os.read(self._status, STATUS.size)
        self.exitcode = STATUS.unpack(data)[0] if len(data) == STATUS.size else -signal.SIGKILL
        os.close(self._status)
        self._status = None
        return True

    def is_alive(self) -> bool:
        return not self._ended(0)

    def join(self, timeout: Optional[float] = None) -> None:
        self._ended(timeout)

    def kill(self) -> None:
        if self._ended(0):
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:                          # ended since
            pass


def _wall() -> list:
    """The command prefix of the mount-namespace wall, where it is in force (suite/run/namespace.py):
    the folders the launcher needs (it imports from pytest's sys.path, in pytest's folder) stay in view."""
    return namespace.argv([*sys.path, os.getcwd(), _ROOT, sys.prefix, sys.base_prefix, sys.exec_prefix,
                           sys.executable])


class _Launcher:
    """One launcher process and the socket pair that is its only channel."""

    def __init__(self, wall: Sequence[str] = ()) -> None:
        self.owner, self.wall = os.getpid(), list(wall)
        self.key: Optional[str] = None           # launcher()'s: the wall's folder of TMPDIRs
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            # Started in the folder `suite` is imported from (a `suite` folder where pytest runs is not
            # this one); it moves to pytest's folder and takes pytest's sys.path before it forks.
            self.proc = subprocess.Popen([*self.wall, sys.executable, "-m", "suite.run.launcher", str(theirs.fileno())],
                                         pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, cwd=_ROOT,
                                         start_new_session=True)   # no controlling terminal (TIOCSTI)
        except OSError as e:
            self.sock.close()
            raise LaunchError(f"the launcher could not be started: {e}") from None
        finally:
            theirs.close()
        try:
            self.sock.settimeout(START_S)
            parent = self.proc.pid if self.wall else self.owner      # under the wall its parent is bwrap
            self.sock.sendall(pickle.dumps((list(sys.path), os.getcwd(), parent)))
            ready = self.sock.recv(STATUS.size)
        except OSError as e:
            ready = f"{type(e).__name__}: {e}"
        if not isinstance(ready, bytes) or len(ready) != STATUS.size:
            self.end()
            raise LaunchError(f"the launcher did not start ({ready or 'it exited'}, code {self.proc.returncode})")
        self.pid = STATUS.unpack(ready)[0]

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def start(self, args: Any, fds: Sequence[int]) -> Child:
        try:
            self.sock.settimeout(REPLY_S)
            socket.send_fds(self.sock, [pickle.dumps(args)], list(fds))
            data, got, _, _ = socket.recv_fds(self.sock, MAX_REQUEST, 1)
        except OSError as e:
            self.end()
            raise LaunchError(f"the launcher failed: {type(e).__name__}: {e}") from None
        for fd in got:
            os.set_inheritable(fd, False)
        pid = STATUS.unpack(data[:STATUS.size])[0] if len(data) >= STATUS.size else 0
        if pid > 0 and len(got) == 1:
            return Child(pid, got[0])
        for fd in got:
            os.close(fd)
        if not data:
            self.end()
            raise LaunchError("the launcher has ended")
        raise LaunchError(f"the launcher could not fork: {data[STATUS.size:].decode('utf-8', 'replace')}")

    def end(self, wait: float = 5.0) -> None:
        """Close the channel (the launcher ends what is below it and exits on EOF) and reap it."""
        self.sock.close()
        if self.owner != os.getpid():
            return                               # a fork's copy: the parent's launcher goes on
        try:
            self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_launchers: Dict[Optional[str], _Launcher] = {}   # by wall: None (none), else its folder of TMPDIRs


def launcher() -> _Launcher:
    """This process's launcher for the wall in force now (behind it, and which folder of TMPDIRs it
    shows, or not), started now if there is none that is alive and its own. One for each: a
    session's walled launcher serves its backend while the project's own tests, in the same xdist
    worker, start backend processes without the wall; ending one launcher for the other killed the
    session's backend processes (an incident of the whole run). Not keyed by its other binds:
    sys.path grows during a run, and the launcher took pytest's sys.path as it started anyway."""
    key = namespace.root() if namespace.active() else None
    current = _launchers.get(key)
    if current is not None and not current.alive():
        current.end()
        current = None
    if current is None:
        current = _launchers[key] = _Launcher(_wall())
        current.key = key
    return current


def start(args: Any, fds: Sequence[int]) -> Child:
    """Fork a backend process running child_main(*fds, *args) (suite/run/launcher.py); LaunchError
    if it cannot be. A launcher found dead during the request is replaced, and asked once more."""
    first = launcher()
    try:
        return first.start(args, fds)
    except LaunchError:
        if first.alive():
            raise                                # the launcher is alive: its refusal stands
        return launcher().start(args, fds)


@atexit.register
def _end_at_exit() -> None:
    for each in list(_launchers.values()):
        if each.owner == os.getpid():
            each.end()
