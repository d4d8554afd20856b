"""A session in a fork of a process that had started backend processes can start backend
processes of its own (what mutmut's forked runs need to judge a mutant on its tests): the fork
starts a launcher of its own (suite/run/starter.py keeps the owner's pid), and the parent's
launcher and backend process go on untouched. With multiprocessing's forkserver (before issue 43)
the fork inherited the parent's forkserver, and its first start raised ChildProcessError."""
from __future__ import annotations

import os
import sys

import pytest

from suite.run.host import Hosted
from tests.test_run_launcher import ECHO, _ppid, _serves
from tests.waiting import HANG_S

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _in_a_fork(parents_launcher: int) -> int:
    """0 where the fork starts, uses and closes a backend process of its own launcher; 3 where
    that process came from the parent's launcher, 4 on anything else."""
    pid = os.fork()
    if pid == 0:                                # the child: never returns into pytest
        code = 4
        try:
            h = Hosted(ECHO, {}, timeout=HANG_S)
            h.start()
            mine = _ppid(h._proc.pid)
            code = 3 if mine == parents_launcher else 0 if _serves(h) and h.close() is None else 4
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_fork_of_the_test_process_starts_backend_processes_of_its_own_launcher():
    h = Hosted(ECHO, {}, timeout=HANG_S)
    try:
        h.start()
        launcher = _ppid(h._proc.pid)
        assert _in_a_fork(launcher) == 0
        assert _in_a_fork(launcher) == 0        # again: the fork's launcher ended with the fork
        assert h._proc.is_alive() and _ppid(h._proc.pid) == launcher and _serves(h)
    finally:
        assert h.close() is None
