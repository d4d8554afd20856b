"""Imported by multiprocessing's forkserver only (suite/run/host.py names it in the preload list):
makes the forkserver a child subreaper, so that whatever a backend process leaves behind is
reparented to the forkserver, where suite/run/reaper.py finds and ends it. Importing it anywhere else
does nothing (pytest itself must not adopt other processes' orphans)."""
from __future__ import annotations

import sys
import warnings

PR_SET_CHILD_SUBREAPER = 36


def _in_forkserver() -> bool:
    return sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules


if sys.platform.startswith("linux") and _in_forkserver():
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    # The forkserver reaps the strays suite/run/reaper.py kills, and would warn about each.
    warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid")
