"""The mount-namespace wall around the backend's processes (bubblewrap), where the OS offers one.

Why: Landlock (suite/run/confine.py) confines writes and signals, not connect(): a backend could
still reach any pathname Unix socket of the same user (a tmux server in /tmp/tmux-UID, an
ssh-agent, the session D-Bus in /run/user/UID, /var/run/docker.sock for root), and each of those
runs commands outside the confinement, e.g. rewrite results.json after pytest has exited (issue 43).

How: where `bwrap` is on PATH and a probe shows it can make a namespace here (unprivileged user
namespaces may be refused: Docker's seccomp profile, Ubuntu's AppArmor), suite/run/starter.py
starts the launcher under bwrap, so every backend process runs in a mount namespace that sees the
whole file system as it is (`--dev-bind / /`: devices such as /dev/davinci* keep working) except:
a private, empty /tmp and /run (and /var/run where it is a folder of its own), into which are bound
back, at the same paths, only this process's folder of backend TMPDIRs (`root`), the folders the
launcher imports from (pytest's sys.path and working folder, the interpreter), the folders of
PATH and LD_LIBRARY_PATH, the absolute paths among the backend's options (--backend-opt
lib_dir=...) and the folders named in ACLNN_CONFORMANCE_BIND, where they lie under a hidden one. `--new-session`: no
controlling terminal (TIOCSTI cannot type into the user's shell); `--die-with-parent`. Landlock is
still applied inside, by each backend process (and forbids it mount and umount).

Not unshared: the pid namespace (pytest's reaper walks /proc below the launcher and signals the
pids the launcher reports, and a device driver keys its contexts by host pid) and SysV IPC (an NPU
runtime may share memory with the driver's daemons). Signals stay confined by Landlock's scope.

Only a pytest session of the suite asks for the wall (`want`, from its --confine): 'landlock'
(Landlock only) or 'off' go without it; the run says which walls it has (results.json
`protections`, `namespace`; the header; doctor, which says what a run would have).
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

from suite.run import confine

HIDDEN = ("/tmp", "/run", "/var/run")        # made private and empty, where they are folders
BIND_ENV = "ACLNN_CONFORMANCE_BIND"          # more folders to bind back (os.pathsep-separated)
PROBE_S = 20.0

_probed: Optional[Tuple[str, str, str]] = None      # (bwrap, version, why not): once per process
_wanted: Optional[Tuple[bool, str]] = None         # a session's choice (want); None: no session's
_needed: List[str] = []                             # paths its backend's options name
_roots: dict = {}                                   # pid -> that process's folder of TMPDIRs


def want(confine_option: str, opts: Dict[str, str]) -> None:
    """A pytest session is about to host its backend (its --confine; its backend's options, whose
    paths stay in view): the wall where available, for 'auto' only. Backend processes no session
    asked for (the project's own tests of hosting, doctor's probe) start without it."""
    global _wanted, _needed
    _wanted = (confine_option == "auto", f"--confine={confine_option}")
    _needed = [v for v in opts.values() if isinstance(v, str) and os.path.isabs(v)]


def chosen(protections: Dict[str, str], confine_option: str) -> Dict[str, str]:
    """confine.in_force's words for a session whose --confine is `confine_option`: 'landlock' says
    the wall is off."""
    if confine_option == "landlock" and "namespace" in protections and \
            not protections["namespace"].startswith("not available: --isolation"):
        return {**protections, "namespace": "off (--confine=landlock)"}
    return protections


def hidden() -> List[str]:
    """The folders the namespace makes private: /tmp, /run and /var/run unless a link to /run."""
    return [h for h in HIDDEN if os.path.isdir(h) and not (os.path.islink(h) and
                                                           os.path.realpath(h) in map(os.path.realpath, HIDDEN[:2]))]


def _flags(binds: List[str]) -> List[str]:
    out = ["--dev-bind", "/", "/"]
    for h in hidden():
        out += ["--tmpfs", h]
    for b in binds:
        out += ["--bind", b, b]
    return out + ["--die-with-parent", "--new-session", "--"]


def probe() -> Tuple[str, str, str]:
    """(bwrap's path, its version, why not): why not is '' where a namespace can be made here.
    Asked once per process."""
    global _probed
    if _probed is None:
        _probed = _probe()
    return _probed


def _probe() -> Tuple[str, str, str]:
    if not sys.platform.startswith("linux"):
        return "", "", f"no mount namespaces on {sys.platform}"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "", "", "no bwrap on PATH"
    try:
        got = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=PROBE_S)
        version = got.stdout.strip() or "bubblewrap"
        tried = subprocess.run([bwrap, *_flags([]), "true"], capture_output=True, text=True,
                               timeout=PROBE_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        return bwrap, "", f"bwrap did not run ({type(e).__name__}: {e})"
    if tried.returncode != 0:
        said = " ".join((tried.stderr.strip().splitlines() or ["no message"])[-1:])
        return bwrap, version, f"bwrap cannot make a namespace here (exit {tried.returncode}: {said})"
    return bwrap, version, ""


def active() -> bool:
    """Whether backend processes started now run behind the wall."""
    return _wanted is not None and _wanted[0] and not probe()[2]


def describe(on: bool = True) -> str:
    """The wall in words (results.json `protections`, the header, doctor)."""
    if not on:
        return "off (--confine=off)"
    _, version, why = probe()
    if why:
        return f"not available: {why}"
    return f"{version}: private " + " and ".join(hidden())


def root() -> str:
    """This process's folder of backend TMPDIRs (made on first need, named as confine.fresh_tmpdir
    names a TMPDIR, so that sweep_stale removes a killed run's; removed when this process exits)."""
    pid = os.getpid()
    made = _roots.get(pid)
    if made is None or not os.path.isdir(made):
        made = _roots[pid] = confine.fresh_tmpdir()
    return made


@atexit.register
def _remove_root() -> None:
    confine.remove_tmpdir(_roots.pop(os.getpid(), None))


def fresh_tmpdir() -> str:
    """A new TMPDIR for one backend process: in `root` behind the wall, else confine.fresh_tmpdir's."""
    if not active():
        return confine.fresh_tmpdir()
    return tempfile.mkdtemp(prefix=f"{confine.TMP_PREFIX}{os.getpid()}-", dir=root())


def _under_hidden(path: str) -> bool:
    return any(path == h or path.startswith(h + "/") for h in map(os.path.realpath, hidden()))


def binds(needed: List[str]) -> List[str]:
    """The folders to bind back: those of `needed` (and ACLNN_CONFORMANCE_BIND's) that exist and lie
    under a hidden folder, by their real path, outermost first, none below another."""
    named = [p for p in os.environ.get(BIND_ENV, "").split(os.pathsep) if p]
    real = {os.path.realpath(p) for p in needed + named if p and os.path.exists(p)}
    tops = [os.path.realpath(h) for h in hidden()]
    out: List[str] = []
    for p in sorted({p if os.path.isdir(p) else os.path.dirname(p) for p in real}):    # a file: its folder
        if _under_hidden(p) and p not in tops and not any(p.startswith(q + "/") or p == q for q in out):
            out.append(p)
    return out


def argv(needed: List[str]) -> List[str]:
    """The command prefix that starts a process behind the wall ([] where it is not in force)."""
    if not active():
        return []
    searched = [p for name in ("PATH", "LD_LIBRARY_PATH") for p in os.environ.get(name, "").split(os.pathsep)]
    return [probe()[0], *_flags(binds([root(), *needed, *_needed, *searched]))]
