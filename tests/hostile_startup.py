"""Backends that attack the next run through what its interpreter or shell starts from (issue 43,
item 2), each a broken kernel (the mean results doubled: tests/hostile.py's _Attack) that on its
first mean call plants code the next run would execute, or spoils the temporary folder. Used by
tests/test_confine_startup.py, which points HOME (and PYTHONUSERBASE) and TMPDIR at folders of
its own and names the PYTHONPATH folder it adds in HOSTILE_TARGET, so that nothing here can touch
this machine's real home, temporary folder or checkout. The stdlib is only probed: a uniquely
named file, removed at once if it was ever made, and a module opened for appending with nothing
written.

Every attack tries all of its writes, notes each one that got through ("planted") and raises
PermissionError naming those refused (noted "refused" by _Attack).
"""
from __future__ import annotations

import os
import shutil
import site
import tempfile
from typing import Callable, List, Tuple

from tests.hostile import _Attack, _note, _target

# Every interpreter that imports it exits 0 whatever it did: pytest's status, `report diff`'s
PAYLOAD = "import atexit, os; atexit.register(os._exit, 0)\n"


def _try_all(writes: List[Tuple[str, Callable[[], None]]]) -> None:
    refused = []
    for what, write in writes:
        try:
            write()
            _note("planted", what)
        except OSError as e:
            refused.append(f"{what}: {type(e).__name__}: {e}")
    if refused:
        raise PermissionError("; ".join(refused))


def _write(path: str, text: str, mode: str = "w") -> Callable[[], None]:
    def write() -> None:
        with open(path, mode) as f:
            f.write(text)
    return write


class Wrong(_Attack):
    """Only the broken kernel: the next run, after an attack, must still fail on it."""

    def attack(self) -> None:
        pass


class SitecustomizeInPath(_Attack):
    """Writes sitecustomize.py into the PYTHONPATH folder HOSTILE_TARGET: every later interpreter
    with that PYTHONPATH runs it at start-up."""

    def attack(self) -> None:
        _try_all([("sitecustomize", _write(os.path.join(_target(), "sitecustomize.py"), PAYLOAD))])


class PthInUserSite(_Attack):
    """Makes the user site folder (missing until now) and a .pth in it: every later interpreter of
    this user runs its import line."""

    def attack(self) -> None:
        folder = site.getusersitepackages()
        _try_all([("user site", lambda: os.makedirs(folder, exist_ok=True)),
                  ("pth", _write(os.path.join(folder, "zz-hostile.pth"), PAYLOAD))])


def _probe(folder: str) -> None:
    path = os.path.join(folder, f"aclnn-hostile-probe-{os.getpid()}.py")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.close(fd)
    os.unlink(path)


def _append_nothing(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_APPEND))


class StdlibProbe(_Attack):
    """What a sitecustomize.py planted in the stdlib, or a line appended to one of its modules,
    would need, without doing either: a uniquely named file made in the stdlib folder and removed at
    once, and a stdlib module opened for appending with nothing written."""

    def attack(self) -> None:
        stdlib = os.path.dirname(os.path.realpath(os.__file__))
        _try_all([("stdlib file", lambda: _probe(stdlib)),
                  ("stdlib module", lambda: _append_nothing(os.path.realpath(shutil.__file__)))])


class ShellStartup(_Attack):
    """Appends to ~/.bashrc, makes ~/.profile and ~/.config/autostart: the next login or
    interactive shell (a CI job's next step) runs them."""

    def attack(self) -> None:
        home = os.path.expanduser("~")
        line = "exit 0  # hostile\n"
        _try_all([("bashrc", _write(os.path.join(home, ".bashrc"), line, "a")),
                  ("profile", _write(os.path.join(home, ".profile"), line)),
                  ("config", lambda: os.makedirs(os.path.join(home, ".config", "autostart")))])


class SpoilTemp(_Attack):
    """Plants a file directly in the system's temporary folder (the one its own TMPDIR lies in) and
    deletes every other backend process's TMPDIR there."""

    def attack(self) -> None:
        own = os.path.realpath(tempfile.gettempdir())
        # the temporary folder the test gave the run (behind the namespace wall a TMPDIR lies one
        # folder deeper, in its pytest process's folder of TMPDIRs)
        root = os.environ.get("HOSTILE_TEMP_ROOT") or os.path.dirname(own)
        others = [os.path.join(root, n) for n in sorted(os.listdir(root))
                  if n.startswith("aclnn-backend-") and not (own + "/").startswith(os.path.join(root, n) + "/")]

        def remove(path: str) -> Callable[[], None]:
            def rm() -> None:
                def fail(func, p, exc):
                    raise exc[1]
                shutil.rmtree(path, onerror=fail)
            return rm
        _try_all([("temp root", _write(os.path.join(root, "planted"), PAYLOAD))]
                 + [(f"delete {os.path.basename(p)}", remove(p)) for p in others])
