"""Backends that attack the run instead of (or besides) computing wrongly: each is a broken kernel
(the mean results doubled, tests/misbehaving.py's Wrong) that, on its first mean call, tries to
hide it by writing where only the suite may write, by stopping the run, or by leaving a daemon
behind that forges the reports once pytest has exited. Used by tests/test_confine.py, which names
the targets in the environment (a real attacker finds them in /proc; the test keeps it short):

  HOSTILE_TARGET  the file or folder to write (suite code, golden/, the cache, the report folder)
  HOSTILE_SPARE   the pid of the test process itself, which the backend leaves alone
  HOSTILE_SPY     a folder of the test's where the backend notes what it did (pids, errors)

Every attack swallows its own errors: a refused write or signal must not be what fails the case.
"""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import List

import numpy as np

from suite.backends.reference import ReferenceBackend
from suite.contract import OpCall


def _note(name: str, text: str) -> None:
    spy = os.environ.get("HOSTILE_SPY")
    if spy:
        try:
            with open(os.path.join(spy, name), "a") as f:
                f.write(text + "\n")
        except OSError:
            pass


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def alive(pid: int) -> bool:
    """Not gone and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def ancestors() -> List[int]:
    """This process's ancestors below HOSTILE_SPARE (the forkserver, pytest, xdist's controller)."""
    spare, out, pid = int(os.environ.get("HOSTILE_SPARE", "1")), [], os.getpid()
    while True:
        pid = _ppid(pid)
        if pid in (0, 1, spare):
            return out
        out.append(pid)


def forge(path: Path) -> None:
    """Make results.json at `path` say every case passed and the run finished."""
    doc = json.loads(path.read_text())
    for r in doc["records"]:
        if r["outcome"] == "failed":
            r.update(outcome="passed", reason=None, fault=None, reproduce=None)
            r.pop("worst", None)
    doc["counts"] = {o: sum(r["outcome"] == o for r in doc["records"]) for o in doc["counts"]}
    doc.update(complete=True, incomplete=None, incidents=[])
    path.write_text(json.dumps(doc))


class _Attack(ReferenceBackend):
    name = "hostile"

    def __init__(self) -> None:
        super().__init__()
        self.done = False

    def attack(self) -> None:
        raise NotImplementedError

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        if call.attrs.get("reduction") != 1:
            return out
        if not self.done:
            self.done = True
            try:
                self.attack()
                _note("attacked", type(self).__name__)
            except OSError as e:
                _note("refused", f"{type(self).__name__}: {type(e).__name__}: {e}")
        return (out.astype(np.float64) * 2).astype(out.dtype)


def _target() -> Path:
    return Path(os.environ["HOSTILE_TARGET"])


class AppendToSuite(_Attack):
    """Appends to the suite's compare.py: `report diff` then exits 0 whatever it compares."""

    def attack(self) -> None:
        with open(_target() / "compare.py", "a") as f:
            f.write("\nimport os as _os\n_os._exit(0)\n")


class RewriteTree(_Attack):
    """Rewrites every file under the target folder (golden/, the cache) and adds one."""

    def attack(self) -> None:
        root = _target()
        for p in sorted(root.rglob("*")):
            if p.is_file():
                p.write_bytes(b"poisoned")
        (root / "poisoned.npz").write_bytes(b"poisoned")


class ForgeAndKill(_Attack):
    """Rewrites results.json to say all passed, then SIGKILLs the run so that nothing rewrites it."""

    def attack(self) -> None:
        forge(_target() / "results.json")
        for pid in reversed(ancestors()):       # the run first: the forkserver's end would end this one
            os.kill(pid, signal.SIGKILL)


class StopParents(_Attack):
    """SIGSTOPs its parent (the forkserver) and every ancestor up to the test: the run hangs."""

    def attack(self) -> None:
        refused = []
        for pid in ancestors():
            try:
                os.kill(pid, signal.SIGSTOP)
                _note("stopped", str(pid))
            except OSError as e:
                refused.append(f"{pid}: {e}")
        if refused:
            raise PermissionError("; ".join(refused))


class ForgingDaemon(_Attack):
    """Forks a daemon (double fork, new session, stdout kept) that waits until the run's processes
    have gone, sleeps a little, and forges results.json: the artifact says all passed although
    pytest exited 1."""

    def attack(self) -> None:
        watch = ancestors()[-1:]                # the run's first process: pytest, or xdist's controller
        if os.fork():
            return
        os.setsid()
        if os.fork():
            os._exit(0)
        _note("daemon", str(os.getpid()))
        end = time.monotonic() + 120
        while time.monotonic() < end and any(alive(p) for p in watch):
            time.sleep(0.05)
        time.sleep(0.5)
        try:
            forge(_target() / "results.json")
            _note("forged", "yes")
        except OSError as e:
            _note("refused", f"daemon: {e}")
        os._exit(0)
