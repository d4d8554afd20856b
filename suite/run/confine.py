"""Confining the backend's process: it may not write what the suite reads or writes (its code, the
case files and goldens, the golden cache, the report folder and journal), nor what the next run
starts from (the interpreter, every sys.path and PATH folder, the home folder's start-up files:
suite/run/protected.py), nor anything in the system's temporary folder but its own TMPDIR; and it
may not signal any process outside its own (pytest, the launcher, xdist's controller).

Why: a backend is untrusted code running as the user. Unconfined, it can append to
suite/report/compare.py (the next `report diff` exits 0), rewrite golden/ or the cache (the next run
agrees with it), rewrite results.json, plant a sitecustomize.py or a .pth (the next run's
interpreter exits 0), or SIGSTOP pytest (the run hangs past every deadline).

How, and why this way (the measurements are in docs/backend-contract.md, "Confinement"):
Landlock (Linux 5.13+), applied by the backend's process to itself before the backend is made,
after PR_SET_NO_NEW_PRIVS; no privilege, no dependency (three syscalls through ctypes). Only
write-type rights are handled: reading, executing and ioctl on devices are never restricted.
Landlock grants, it cannot deny below a grant, so the rules grant every write right on each
*sibling* along the paths from / down to each protected path (every entry of every ancestor
folder except the next step towards a protected path), and none on the protected paths or their
ancestors themselves; a rule's rights hold for everything below it, so a granted path inside a
protected tree (the process's own TMPDIR in the temporary folder, /dev, $HOME/ascend) gets a rule
of its own. Consequences: everything outside the protected trees is writable as before (/dev,
$HOME/ascend, the backend's own folders), except that no new entry can be made directly in an
ancestor folder (e.g. a new file in $HOME), and a missing protected path cannot be made (the user
site folder). For that, the suite makes $HOME/ascend (CANN's logs) if it is missing. Signals (ABI
6, Linux 6.12+): scoped to the backend's own domain, which its descendants inherit; the same for
abstract Unix sockets.

The alternative measured against it, user and mount namespaces with read-only bind mounts, is
exact about new entries but fails where unprivileged user namespaces are refused (Docker's default
seccomp profile, Ubuntu's AppArmor restriction), leaves the backend root of its namespace (able
to undo its own mounts without a second namespace), does not stop signals to same-uid processes,
and does not stop writes through /proc/<pytest>/root.

Where Landlock is missing, the run says so (header, results.json `protections`, `doctor`) and goes
on unconfined: a missing protection is reported, not an error.
"""
from __future__ import annotations

import ctypes
import os
import re
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from suite.run import protected as wall

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446     # the same number on every architecture
_VERSION = 1                                                   # LANDLOCK_CREATE_RULESET_VERSION
_PATH_BENEATH = 1                                              # LANDLOCK_RULE_PATH_BENEATH
_NO_NEW_PRIVS = 38                                             # PR_SET_NO_NEW_PRIVS

# LANDLOCK_ACCESS_FS_*: the write-type rights (reading, executing and device ioctl are not handled)
WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKE = sum(1 << b for b in range(6, 13))       # MAKE_CHAR, DIR, REG, SOCK, FIFO, BLOCK, SYM
REFER, TRUNCATE = 1 << 13, 1 << 14             # ABI 2, ABI 3
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1   # ABI 6
SIGNAL_ABI = 6


class ConfineError(Exception):
    """Confinement the kernel offered could not be applied (the backend is not started)."""


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def landlock_abi() -> Tuple[int, str]:
    """(ABI version, why not) : (0, the reason) where Landlock is not available."""
    if not sys.platform.startswith("linux"):
        return 0, f"no Landlock on {sys.platform}"
    try:
        libc = _libc()
    except OSError as e:
        return 0, f"no C library to call ({e})"
    abi = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    if abi < 0:
        err = ctypes.get_errno()
        return 0, ("Landlock is not enabled in this kernel (boot with lsm=...,landlock)" if err == 95
                   else "this kernel has no Landlock (Linux 5.13+)" if err == 38 else os.strerror(err))
    return int(abi), ""


def write_rights(abi: int) -> Tuple[int, int]:
    """(rights on a folder, rights on a file) handled at this ABI."""
    folder = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE | (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)
    return folder, WRITE_FILE | (TRUNCATE if abi >= 3 else 0)


WRITES_COVER = ("the suite, its data, cache and reports; the interpreter, sys.path and PATH; the home "
                "folder's start-up files; the temporary folder but for the process's own TMPDIR")


def protections(abi: int, why: str, on: bool = True) -> Dict[str, str]:
    """What the backend's process is confined by, in words (header, results.json, doctor)."""
    if not on:
        return {"writes": "off (--confine=off)", "signals": "off (--confine=off)"}
    if abi < 1:
        return {"writes": f"not available: {why}", "signals": f"not available: {why}"}
    return {"writes": f"landlock abi {abi}: {WRITES_COVER}",
            "signals": "landlock scope" if abi >= SIGNAL_ABI else
            f"not available: Landlock ABI {abi} has no signal scoping (ABI {SIGNAL_ABI}, Linux 6.12)"}


def siblings(protected: Iterable[Path], granted: Iterable[Path] = ()) -> Tuple[List[str], List[str]]:
    """The paths to grant write rights on. Each path is writable or not as the nearest of the
    `protected` and `granted` paths at or above it says (none: writable); a path both protected and
    granted is protected. Granted: every entry of every folder on the way from / to a protected or
    granted path, except the steps of those ways, where that folder is writable, and each granted
    path holding no protected path whole. Nothing new can be made in a folder on the way (so a
    missing protected path cannot be made). Also returned: the folders that could not be listed
    (nothing in them is granted). Symbolic links are not granted (a write through one is judged at
    its target)."""
    protected = list(protected)
    # a protected path both as named and as its link's target: ~/.bashrc linked into a dotfiles
    # folder can then neither be rewritten nor replaced
    guarded = {os.path.realpath(p) for p in protected} | {os.path.abspath(p) for p in protected}
    holes = {os.path.realpath(p) for p in granted} - guarded
    marks = guarded | holes
    keep: Set[str] = set()
    for p in marks:
        parts = Path(p).parts
        keep.update(os.path.join(*parts[:i]) for i in range(1, len(parts) + 1))

    def free(path: str) -> bool:              # the nearest mark at or above `path` is a grant, or none is
        while True:
            if path in marks:
                return path in holes
            up = os.path.dirname(path)
            if up == path:
                return True
            path = up

    def below(path: str, which: Set[str]) -> bool:
        return any(q.startswith(path.rstrip("/") + "/") for q in which)

    whole = {h for h in holes if not below(h, guarded)}       # granted with everything below
    grant, unlisted = [], []
    for folder in sorted(keep):
        if any(folder.startswith(h.rstrip("/") + "/") for h in whole):
            continue                                          # inside a path granted whole
        if folder in whole:
            if os.path.lexists(folder) and not os.path.islink(folder):
                grant.append(folder)
            continue
        writable = free(folder)
        if not os.path.isdir(folder) or os.path.islink(folder) or not (writable or below(folder, holes)):
            continue
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            unlisted.append(folder)
            continue
        for name in names:
            path = os.path.join(folder, name)
            if writable and path not in keep and not os.path.islink(path):
                grant.append(path)
    return sorted(grant), unlisted


@dataclass
class Policy:
    """What the backend's process is confined to: made in pytest's process, applied in the
    backend's (it crosses the process boundary as plain data)."""

    protected: List[str]
    abi: int
    tmpdir: Optional[str] = None           # the backend's own TMPDIR (granted: it lies in the protected temp root)
    granted: List[str] = field(default_factory=list)    # writable even inside a protected tree

    def for_process(self, tmpdir: Optional[str]) -> "Policy":
        """This policy for one backend process whose own TMPDIR is `tmpdir` (fresh_tmpdir)."""
        return Policy(protected=list(self.protected), abi=self.abi, tmpdir=tmpdir, granted=list(self.granted))

    def rules(self) -> List[str]:
        """The paths apply() grants write rights on (siblings), the process's own TMPDIR among them."""
        return siblings(self.protected, self.granted + ([self.tmpdir] if self.tmpdir else []))[0]

    def apply(self) -> None:
        """Confine this process (and everything it starts). ConfineError if the kernel refuses."""
        use_tmpdir(self.tmpdir)
        libc = _libc()
        folder_rights, file_rights = write_rights(self.abi)
        scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL if self.abi >= SIGNAL_ABI else 0
        attr = (ctypes.c_uint64 * 3)(folder_rights, 0, scoped)
        size = 24 if self.abi >= SIGNAL_ABI else 8
        fd = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            raise ConfineError(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
        try:
            for path in self.rules():
                self._grant(libc, fd, path, folder_rights, file_rights)
            if libc.prctl(_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise ConfineError(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
            if libc.syscall(_RESTRICT_SELF, fd, ctypes.c_uint32(0)) != 0:
                raise ConfineError(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(fd)

    @staticmethod
    def _grant(libc, ruleset: int, path: str, folder_rights: int, file_rights: int) -> None:
        try:
            pfd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return                          # gone since it was listed: nothing to grant
        try:
            mode = os.fstat(pfd).st_mode
            if stat.S_ISLNK(mode):
                return
            rule = _PathBeneath(folder_rights if stat.S_ISDIR(mode) else file_rights, pfd)
            # EBADFD: a pseudo-filesystem Landlock takes no rules on; it stays unwritable
            libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0))
        finally:
            os.close(pfd)


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def make_policy(paths: Sequence[Path], abi: int) -> Policy:
    """The policy for a session: `paths` (the suite's checkout or package, its data, reports and
    cache) protected, and with them the interpreter, every sys.path and PATH folder, the home
    folder's start-up files and the system's temporary folder (suite/run/protected.py); devices
    and $HOME/ascend granted. Makes, in pytest's process, what the backend could not make once
    confined: $HOME/ascend (CANN's logs) where it is missing. (Each backend process's own TMPDIR
    is made, and granted, as it starts: fresh_tmpdir, Policy.for_process.)"""
    ascend = os.path.join(os.path.realpath(os.path.expanduser("~")), wall.CANN_LOGS)
    if not os.path.exists(ascend):
        try:
            os.mkdir(ascend)
        except OSError:
            pass
    return Policy(protected=wall.everything(str(p) for p in paths), abi=abi,
                  granted=wall.always_granted())


TMP_PREFIX = "aclnn-backend-"
_swept: Set[str] = set()                  # temporary folders swept of killed runs' TMPDIRs


def fresh_tmpdir() -> str:
    """A new TMPDIR for one backend process, in the system's temporary folder, named for this
    process (sweep_stale removes it after a killed run). Why one per process: no two backend
    processes (the determinism tests' two, a restart and the process before it) share a temporary
    folder, so no result cached on disk there makes them agree, and a backend that deletes or fills
    its TMPDIR costs only itself (the folder goes with its process: remove_tmpdir)."""
    tmp = os.path.realpath(tempfile.gettempdir())
    if tmp not in _swept:
        sweep_stale(tmp)
        _swept.add(tmp)
    return tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", dir=tmp)


def use_tmpdir(tmpdir: Optional[str]) -> None:
    """Point this process's TMPDIR (and tempfile's cached choice) at `tmpdir`, in the backend's
    process before anything of the backend runs."""
    if tmpdir:
        for name in ("TMPDIR", "TEMP", "TMP"):
            os.environ[name] = tmpdir
        tempfile.tempdir = None
_MADE_BY = re.compile(re.escape(TMP_PREFIX) + r"(\d+)-")


def sweep_stale(tmp: str) -> List[str]:
    """Remove the backend TMPDIRs left by runs that ended without their cleanup (a pytest or xdist
    worker killed by SIGKILL or a segfault): each is named for the process that made it, and one
    whose process is gone is no one's. Why: whatever a killed run's backend wrote there would
    otherwise stay on the machine for good. Returns what it removed."""
    import shutil
    removed = []
    try:
        names = os.listdir(tmp)
    except OSError:
        return removed
    for name in names:
        m = _MADE_BY.match(name)
        path = os.path.join(tmp, name)
        if m is None or _alive(int(m[1])) or not _ours(path):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _ours(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:             # it exists and is someone else's
        return True
    return True


def remove_tmpdir(tmpdir: Optional[str]) -> None:
    """Remove a backend process's TMPDIR once the process and everything it started have ended
    (a folder it made unwritable to its owner is made writable first)."""
    import shutil
    if not tmpdir:
        return

    def writable(func, path, _exc):
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass
    shutil.rmtree(tmpdir, onerror=writable)


def in_force(on: bool = True, isolation: str = "process") -> Dict[str, str]:
    """Which protections a run with these options has here, in words: results.json's
    `protections`, the run's header and `aclnn-conform doctor` show it."""
    from suite.run import launcher, namespace, reaper
    if isolation == "none":
        why = "not available: --isolation none (the backend runs in pytest's process)"
        return {"writes": why, "signals": why, "descendants": why, "launcher": why, "namespace": why}
    abi, why = landlock_abi()
    return {**protections(abi, why, on), "descendants": reaper.describe(), "launcher": launcher.DESCRIBED,
            "namespace": namespace.describe(on)}
