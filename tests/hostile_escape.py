"""Backends of issue 43 that go around the confinement rather than through it (used by
tests/test_confine_escape.py; the conventions are tests/hostile.py's):

  ForkserverEscape  a broken kernel that looks for a listening Unix socket in its reach (a
                    multiprocessing forkserver's /tmp/pymp-*/listener-*, an abstract socket an
                    ancestor holds), asks it for a process, and has that unconfined process kill its
                    parent (leaving the reaper's tree) and forge results.json once pytest has exited.
  CleanTmp          a careless kernel whose test fixture does `rm -rf /tmp/*` on the run's first
                    call, then crashes: the case is lost, every later one must still run.

HOSTILE_TMP is the folder that stands in for /tmp: the test points the run's TMPDIR at it (the
forkserver's folder and the backends' TMPDIRs lie there) and marks it with MARK. CleanTmp cleans
only a folder so marked, never the machine's /tmp.
"""
from __future__ import annotations

import glob
import os
import signal
import time
from pathlib import Path
from typing import List

import numpy as np

from suite.backends.reference import ReferenceBackend
from suite.contract import OpCall
from tests.hostile import _Attack, _note, alive, ancestors, forge, _target

MARK = ".hostile-tmp-root"                  # CleanTmp cleans only a folder holding this file
LISTENING = 0x10000                         # __SO_ACCEPTCON in /proc/net/unix's flags


def _held_by(pids: List[int]) -> set:
    """The socket inodes the processes `pids` hold (where /proc lets this process see them)."""
    out = set()
    for pid in pids:
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for name in names:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{name}")
            except OSError:
                continue
            if link.startswith("socket:["):
                out.add(link[8:-1])
    return out


def listeners() -> List[str]:
    """Listening Unix sockets in reach: forkservers' in the run's temporary folder, and abstract
    ones ('@name') that an ancestor holds."""
    found = sorted(glob.glob(os.path.join(os.environ.get("HOSTILE_TMP", "/nonexistent"), "pymp-*", "listener-*")))
    held = _held_by(ancestors())
    try:
        with open("/proc/net/unix") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        lines = []
    for line in lines:
        cols = line.split()
        if len(cols) > 7 and int(cols[3], 16) & LISTENING and cols[7].startswith("@") and cols[6] in held:
            found.append(cols[7])
    return found


def _escaped(report: str, watch: List[int]) -> None:
    """In the process a forkserver forked, outside the backend's confinement: leave the reaper's
    tree (kill the forkserver, whose child this is), wait for the run to end, forge its report."""
    os.setsid()
    os.kill(os.getppid(), signal.SIGKILL)
    _note("escaped", str(os.getpid()))
    end = time.monotonic() + 120
    while time.monotonic() < end and any(alive(p) for p in watch):
        time.sleep(0.05)
    time.sleep(0.5)
    try:
        forge(Path(report))
        _note("forged", "yes")
    except OSError as e:
        _note("refused", f"escaped: {e}")


def _ask(address: str, report: str, watch: List[int]) -> None:
    """Have the forkserver at `address` start _escaped (multiprocessing's own client, told where)."""
    import multiprocessing
    from multiprocessing import forkserver, process
    server = forkserver._forkserver
    server._forkserver_address = "\0" + address[1:] if address.startswith("@") else address
    _, alive_w = os.pipe()
    server._forkserver_alive_fd = alive_w
    server.ensure_running = lambda: None         # it is running: someone else's
    process._current_process._config["daemon"] = False      # a multiprocessing child may not start one
    p = multiprocessing.get_context("forkserver").Process(target=_escaped, args=(report, watch))
    p.start()
    _note("asked", f"{address}: pid {p.pid}")


class ForkserverEscape(_Attack):
    def attack(self) -> None:
        found = listeners()
        _note("listeners", repr(found))
        if not found:
            raise FileNotFoundError("no listening socket in reach")
        watch, report = ancestors()[-1:], str(_target() / "results.json")
        errors = []
        for address in found:
            try:
                _ask(address, report, watch)
                return
            except (OSError, ValueError, EOFError) as e:
                errors.append(f"{address}: {type(e).__name__}: {e}")
        raise ConnectionRefusedError("; ".join(errors))


class CleanTmp(ReferenceBackend):
    name = "clean-tmp"

    def run(self, call: OpCall) -> np.ndarray:
        spy, root = os.environ.get("HOSTILE_SPY", ""), os.environ.get("HOSTILE_TMP", "")
        if not (spy and root and os.path.isfile(os.path.join(root, MARK))):
            return super().run(call)
        try:                                     # once in the run, whichever process comes first
            os.close(os.open(os.path.join(spy, "cleaned"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return super().run(call)
        removed = 0
        for folder, dirs, files in os.walk(root, topdown=False):
            for name in files + dirs:
                path = os.path.join(folder, name)
                if path == os.path.join(root, MARK):
                    continue
                try:
                    if name in dirs and not os.path.islink(path):
                        os.rmdir(path)
                    else:
                        os.unlink(path)
                    removed += 1
                except OSError:
                    pass
        _note("removed", str(removed))
        os._exit(3)
