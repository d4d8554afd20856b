"""Imported by multiprocessing's forkserver only (suite/run/host.py names it in the preload list):
makes the forkserver a child subreaper, so that whatever a backend process leaves behind is
reparented to the forkserver, where suite/run/reaper.py finds and ends it, and ends what is still
below the forkserver when the forkserver ends (after a killed run). Importing it anywhere else
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

    import atexit
    import os

    from suite.run import reaper

    _SERVER = os.getpid()

    def _end_what_is_below() -> None:
        """The forkserver ends once the run has gone, a killed run too (its "alive" pipe reads EOF).
        Whatever is still below it then (a daemon a backend left, a backend hung in a call) ends
        with it instead of being reparented to init. Not in a backend's process, which inherits this
        handler and runs its exit handlers when it closes."""
        if os.getpid() == _SERVER:
            reaper.end_strays(_SERVER)

    atexit.register(_end_what_is_below)
