"""Which paths a confined backend may not write besides the run's own files, and which it may always
write (suite/run/confine.py turns both into Landlock rules).

Why: the next run starts an interpreter and often a shell. A backend that plants a sitecustomize.py
in a PYTHONPATH folder, a module in the stdlib, a .pth in the user site folder, a line in ~/.bashrc
or a `python` in a folder on PATH runs its own code in the next run, which then passes a wrong
kernel. So, besides the suite's files (make_policy's `paths`), these are protected:

- the interpreter (python_environment): a virtual environment whole, the site-packages folders, the
  base prefix's stdlib, its lib-dynload and the interpreter's own folder, and the user site folder
  even where it is missing (the rules leave no way to create a missing protected path);
- every folder the next run imports from (search_path): each sys.path entry (PYTHONPATH's, the
  current folder where '' is on it, pytest's inserted rootdirs), the folder of a zip entry (it holds
  the zip, and in a pyenv or system Python libpython too), and PYTHONPATH's entries even where
  missing; and every folder on PATH, where the next run's `python`, `pytest` and shell come from;
- the home folder's start-up files (startup_files);
- the system's temporary folder itself (temp_root): nothing can be planted, filled or deleted there
  except in the backend process's own TMPDIR (granted: confine.fresh_tmpdir makes one per process).

A sys.path or PATH entry that is `/` or the home folder is protected whole, like any other: that
makes nearly everything unwritable, so the grants (always_granted, and the process's own TMPDIR)
keep devices, CANN's logs and temporary files working; the rest is the price of running from there.
"""
from __future__ import annotations

import os
import sys
import tempfile
from typing import Iterable, List, Mapping, Optional, Set

# In the home folder, whether they exist or not (a missing one can then not be made):
STARTUP_FILES = (
    ".profile",                                         # sh, and bash's login shell without its own
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout",      # bash (interactive, login, logout)
    ".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout",        # zsh (every shell, login, interactive)
    ".config",              # XDG config: pip.conf, git's config (core.fsmonitor runs a command), autostart
    ".gitconfig",           # the same for git: a CI job's next checkout runs what it names
    ".pythonrc", ".pythonrc.py",                        # PYTHONSTARTUP's usual names
    ".pip",                 # pip's old config folder (an index that serves the next install)
    ".local/bin", "bin",    # Debian's ~/.profile puts them on PATH once they exist: a planted `python`
)
# Environment variables naming such a file elsewhere: interactive Python's start-up, pip's config,
# XDG's config folder, what a non-interactive bash and an sh read first.
STARTUP_VARIABLES = ("PYTHONSTARTUP", "PIP_CONFIG_FILE", "XDG_CONFIG_HOME", "BASH_ENV", "ENV")
DEVICES = "/dev"            # device files (/dev/davinci*) and /dev/shm
CANN_LOGS = "ascend"        # $HOME/ascend: CANN's logs


def _real(paths: Iterable[str]) -> Set[str]:
    """Each path where it is and, if it is a link or lies below one, where it leads (both are
    protected: a linked ~/.bashrc can neither be rewritten nor replaced)."""
    paths = [p for p in paths if p]
    return {os.path.realpath(p) for p in paths} | {os.path.abspath(p) for p in paths}


def python_environment() -> List[str]:
    """The interpreter the next run starts and what it imports first: a virtual environment whole,
    the site-packages folders, the stdlib (the base prefix's, below a venv) and lib-dynload, the
    interpreter's own folder, and the user site folder, which is protected where it is missing too
    (a .pth planted there later would run in every interpreter)."""
    import site
    import sysconfig
    out = set()
    if sys.prefix != sys.base_prefix:
        out.add(sys.prefix)
    paths = sysconfig.get_paths()
    out.update(paths[k] for k in ("purelib", "platlib", "stdlib", "platstdlib", "scripts"))
    out.add(os.path.dirname(os.__file__))                       # the stdlib actually imported
    out.add(os.path.dirname(os.path.realpath(sys.executable)))  # the base interpreter's bin folder
    try:
        out.update(site.getsitepackages())
    except AttributeError:
        pass
    out.add(site.getusersitepackages())
    return sorted(_real(out))


def search_path(path: Optional[Iterable[str]] = None, cwd: Optional[str] = None,
                environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """Every folder the next run imports from or runs commands from: sys.path's entries ('' is the
    current folder; a name that is no path, such as an editable install's path hook, is skipped),
    a zip entry's folder, PYTHONPATH's entries even where missing, and PATH's absolute entries."""
    path = list(sys.path if path is None else path)
    cwd = os.getcwd() if cwd is None else cwd
    env = os.environ if environ is None else environ
    out = set()
    for entry in path + env.get("PYTHONPATH", "").split(os.pathsep):
        if not isinstance(entry, str):
            continue
        full = os.path.join(cwd, entry)
        if not os.path.isabs(entry) and entry and not os.path.exists(full):
            continue
        out.add(full)
        up = full                                               # a zip: its folder too
        while up != os.path.dirname(up) and not os.path.exists(up):
            up = os.path.dirname(up)
        if os.path.isfile(up) or entry.endswith((".zip", ".egg", ".whl")):
            out.add(os.path.dirname(up if os.path.isfile(up) else full))
    out.update(p for p in env.get("PATH", "").split(os.pathsep) if os.path.isabs(p))
    return sorted(_real(out))


def startup_files(home: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """The home folder's start-up files (STARTUP_FILES, existing or not) and those the
    STARTUP_VARIABLES name."""
    home = os.path.expanduser("~") if home is None else home
    env = os.environ if environ is None else environ
    named = [env.get(v, "") for v in STARTUP_VARIABLES]
    return sorted(_real([os.path.join(home, f) for f in STARTUP_FILES] + [p for p in named if os.path.isabs(p)]))


def temp_root() -> str:
    """The system's temporary folder, which every backend process's own TMPDIR lies in."""
    return os.path.realpath(tempfile.gettempdir())


def always_granted(home: Optional[str] = None) -> List[str]:
    """Writable even inside a protected tree (a sys.path entry of `/` or the home folder): devices
    and /dev/shm, and $HOME/ascend, where CANN writes its logs. (A protected path inside one of
    them stays protected.)"""
    home = os.path.expanduser("~") if home is None else home
    return sorted(_real([DEVICES, os.path.join(home, CANN_LOGS)]))


def everything(paths: Iterable[str]) -> List[str]:
    """`paths` (the run's own files) and all of the above: make_policy's protected set."""
    return sorted(_real(paths) | set(python_environment()) | set(search_path()) | set(startup_files())
                  | {temp_root()})
