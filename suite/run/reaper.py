"""Nothing of the backend outlives it: every process the backend's process started, at any depth,
is ended whenever a backend process ends (killed on a deadline, restarted, closed, or dead on its
own), so before the reports are written and before pytest exits.

Why: a daemon forked by a backend could rewrite results.json after pytest has exited (exit 1, but
the artifact says all passed), and an orphan holding pytest's stdout keeps `pytest -s | cat`
waiting for it. A digest of the reports would not help: the forger can recompute it.

How: the backend's process is forked by the suite's launcher (suite/run/launcher.py), which is a
child subreaper (PR_SET_CHILD_SUBREAPER). A process whose parent dies is reparented to its nearest
subreaper ancestor, so every descendant of a backend process, however it daemonizes (double fork,
setsid), stays below the launcher. The launcher's legitimate children are exactly the live backend
processes (`adopt`); any other process below it is a stray. `release` (called once a backend
process has ended) stops every stray (SIGSTOP: a stopped process cannot fork), walks again until no
new one appears, then kills them all (SIGKILL) and waits until none is left. pytest's own children
(the project's tests run subprocesses) are never looked at. A killed run (SIGKILL) calls nothing:
then the launcher, which ends with the run, ends what is below it, and the backend's process, whose
parent it is, dies with it (suite/run/child.py). No process outside the backend's can ask the
launcher for a process (it listens on nothing), so nothing started on a backend's behalf escapes
this tree (multiprocessing's forkserver, used before issue 43, could be asked by any process).

Where there is no subreaper (not Linux) or no /proc, `available()` says why, and the run says so.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from typing import Dict, List, Optional, Set, Tuple

_live: Dict[int, int] = {}                 # live backend pid -> its parent (the launcher)
ROUNDS = 200                               # walks of the tree before giving up (each a few ms)


def available() -> Tuple[bool, str]:
    """Whether strays can be found and ended here, and why not."""
    if not sys.platform.startswith("linux"):
        return False, f"no child subreaper on {sys.platform}"
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        return False, "no /proc/PID/task/TID/children (Linux 3.5+ with CONFIG_PROC_CHILDREN)"
    return True, ""


def describe() -> str:
    ok, why = available()
    return "subreaper" if ok else f"not available: {why}"


def children(pid: int) -> List[int]:
    """pid's children (every thread's), live or zombie; [] once it has gone."""
    out: List[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def _state(pid: int) -> Optional[str]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _ppid(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def adopt(pid: Optional[int]) -> None:
    """A backend process has started: it is the launcher's legitimate child."""
    if pid is not None and available()[0]:
        parent = _ppid(pid)
        if parent is not None and parent != os.getpid():       # the launcher (pytest itself is never reaped)
            _live[pid] = parent


def strays(server: int) -> List[int]:
    """Every live process below `server` that is not a live backend process, depth first."""
    out, todo, seen = [], [c for c in children(server) if c not in _live], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        if _state(pid) not in (None, "Z", "X"):
            out.append(pid)
        todo += children(pid)
    return out


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:                         # gone already
        pass


def end_strays(server: int, wait: float = 5.0) -> int:
    """Stop, then kill, every stray below `server`; returns how many were ended."""
    stopped: Set[int] = set()
    for _ in range(ROUNDS):
        new = [p for p in strays(server) if p not in stopped]
        if not new:
            break
        for pid in new:
            _signal(pid, signal.SIGSTOP)
            stopped.add(pid)
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    end = time.monotonic() + wait
    while time.monotonic() < end:
        left = strays(server)
        if not left:
            break
        for pid in left:
            _signal(pid, signal.SIGKILL)
        time.sleep(0.01)
    return len(stopped)


def release(pid: Optional[int]) -> int:
    """A backend process has ended (its exit code is known): end everything it left behind."""
    server = _live.pop(pid, None) if pid is not None else None
    if server is None:
        return 0
    return end_strays(server)
