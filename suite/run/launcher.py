"""The launcher: the process that forks every backend process of one pytest process
(`python -m suite.run.launcher FD`, started by suite/run/starter.py, which is pytest's side of it).

Why not multiprocessing's forkserver: before Python 3.14 its listener is an unauthenticated Unix
socket in the file system (/tmp/pymp-*/listener-*), so a backend could connect to it and have the
unconfined forkserver fork a process of its choosing: outside the confinement, and (once it had
killed the forkserver) outside the reaper's tree, free to rewrite the reports after pytest exits
(issue 43). A careless backend that cleaned /tmp unlinked the socket, and every later restart
failed. The launcher listens on nothing: its one channel is the socket pair pytest's process made,
inherited as FD, so no process but pytest's can ask it for anything. Like the forkserver it forks
from a clean, single-threaded process that has numpy, ml_dtypes and the child's code loaded already
(a backend process starts in milliseconds, with no thread of pytest's or xdist's).

How: each request brings the child's two sockets (SCM_RIGHTS) and child_main's arguments; the
launcher forks, the child closes every file descriptor but its own two (the control socket and the
other children's status pipes never reach a backend, which could otherwise forge another process's
exit status) and runs suite/run/child.py. The reply is the child's pid and the read end of a status
pipe whose write end the launcher keeps: it writes the exit code there once it has reaped the child.
The launcher is a child subreaper (PR_SET_CHILD_SUBREAPER), so whatever a backend process leaves
behind is reparented to it, where suite/run/reaper.py finds and ends it. When pytest's process goes
(the control socket reads EOF; PR_SET_PDEATHSIG sends SIGTERM) it ends everything below it and exits.
(PR_SET_PDEATHSIG fires when the *thread* that started it ends: pytest starts it from its main thread.)
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import struct
import sys
import traceback
from typing import Dict, List

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
MAX_REQUEST = 1 << 20           # bytes of one request (child_main's arguments: a policy's paths)
STATUS = struct.Struct("<i")    # a child's exit code, as multiprocessing gives it (-N: signal N)
PRELOAD = ("numpy", "ml_dtypes", "suite.run.child")
DESCRIBED = "private socket pair, no listening socket"     # how backend processes start (protections)


def _prctl(option: int, value: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _only(keep: List[int]) -> None:
    """Close every file descriptor but 0, 1, 2 and `keep`."""
    last = 2
    for fd in sorted(set(keep)):
        if fd > last:
            os.closerange(last + 1, fd)
            last = fd
    os.closerange(last + 1, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1 << 16)


class Launcher:
    def __init__(self, ctl: socket.socket) -> None:
        self.ctl = ctl
        self.status: Dict[int, int] = {}          # live child pid -> the write end of its status pipe
        self.wake_r, self.wake_w = os.pipe()      # SIGCHLD and SIGTERM wake the loop
        os.set_blocking(self.wake_w, False)
        self.ending = False

    def serve(self) -> None:
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._end)
        signal.set_wakeup_fd(self.wake_w)
        self.ctl.sendall(STATUS.pack(os.getpid()))        # ready
        while not self.ending:
            self._reap()
            try:
                ready, _, _ = select.select([self.ctl, self.wake_r], [], [])
            except InterruptedError:
                continue
            if self.wake_r in ready:
                os.read(self.wake_r, 4096)
            if self.ctl in ready and not self._request():
                break
        self._end_all()

    def _end(self, *_) -> None:
        self.ending = True

    def _request(self) -> bool:
        """Serve one request; False once pytest's process has gone (EOF)."""
        try:
            data, fds, _, _ = socket.recv_fds(self.ctl, MAX_REQUEST, 2)
        except OSError:
            return False
        if not data:
            for fd in fds:
                os.close(fd)
            return False
        try:
            args = pickle.loads(data)
            pid, status_r = self._fork(fds, args)
        except Exception as e:                    # fork refused, bad request: pytest says why
            for fd in fds:
                os.close(fd)
            self.ctl.sendall(STATUS.pack(0) + f"{type(e).__name__}: {e}".encode()[:4000])
            return True
        try:
            socket.send_fds(self.ctl, [STATUS.pack(pid)], [status_r])
        finally:
            os.close(status_r)
        return True

    def _fork(self, fds: List[int], args: tuple) -> tuple:
        if len(fds) != 2:
            raise ValueError(f"a request brings 2 sockets, not {len(fds)}")
        status_r, status_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(status_r)
            os.close(status_w)
            raise
        if pid == 0:
            self._child(fds, args, drop=[status_r, status_w])        # never returns
        os.close(fds[0])
        os.close(fds[1])
        self.status[pid] = status_w
        return pid, status_r

    def _child(self, fds: List[int], args: tuple, drop: List[int]) -> None:
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)
            self.ctl.close()
            for fd in [self.wake_r, self.wake_w, *drop, *self.status.values()]:
                os.close(fd)
            _only(fds)                            # nothing of the launcher's reaches the backend
            from suite.run.child import child_main
            spec, opts, policy, tmpdir = args
            child_main(socket.socket(fileno=fds[0]), spec, opts, socket.socket(fileno=fds[1]), policy, tmpdir)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:                     # noqa: B036  (as multiprocessing's process ends)
            traceback.print_exc()
        finally:
            for f in (sys.stdout, sys.stderr):
                try:
                    f.flush()
                except Exception:                 # noqa: BLE001
                    pass
            os._exit(code)

    def _reap(self) -> None:
        """Reap every child that has ended: a backend process's code goes to its status pipe; a
        stray reparented here (reaper.py ended it) is only reaped."""
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            w = self.status.pop(pid, None)
            if w is not None:
                try:
                    os.write(w, STATUS.pack(os.waitstatus_to_exitcode(st)))
                except OSError:                   # pytest's side has let it go
                    pass
                os.close(w)

    def _end_all(self) -> None:
        """pytest's process has gone: end every process below this one, then exit."""
        from suite.run import reaper
        reaper.end_strays(os.getpid())
        self._reap()


def main(argv: List[str]) -> None:
    fd = int(argv[0])
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)          # Ctrl-C is pytest's to handle
    ctl = socket.socket(fileno=fd)
    os.set_inheritable(fd, False)
    # pytest's folder and sys.path (a backend named as tests.x:Y imports as it would in pytest):
    # starter.py starts this module in the folder `suite` is imported from.
    head = ctl.recv(MAX_REQUEST)
    if not head:
        return
    path, cwd, owner = pickle.loads(head)
    if os.getppid() != owner:                             # pytest went before PDEATHSIG was set
        return
    os.chdir(cwd)
    sys.path[:] = path
    import importlib
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    Launcher(ctl).serve()


if __name__ == "__main__":
    main(sys.argv[1:])
