"""tests/forkserver.py: a session in a fork of a process that had started a forkserver can start
backend processes of its own (what mutmut's forked runs need to judge a mutant on its tests)."""
from __future__ import annotations

import multiprocessing
import os

import pytest

from tests.forkserver import forget_an_inherited_forkserver

pytestmark = pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(),
                                reason="no forkserver start method on this platform")


def _nothing() -> None:
    pass


def _start_one() -> int:
    """0 where a forkserver process starts and ends cleanly, 3 on ChildProcessError, 4 otherwise."""
    try:
        p = multiprocessing.get_context("forkserver").Process(target=_nothing)
        p.start()
        p.join(30)
        return 0 if p.exitcode == 0 else 4
    except ChildProcessError:
        return 3
    except BaseException:                       # noqa: BLE001  (any other way it failed)
        return 4


def _in_a_fork(forget: bool) -> int:
    pid = os.fork()
    if pid == 0:                                # the child: never returns into pytest
        code = 4
        try:
            if forget:
                forget_an_inherited_forkserver()
            code = _start_one()
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_fork_fails_to_start_a_process_without_it_and_starts_one_with_it() -> None:
    assert _start_one() == 0                    # this process's forkserver, running
    assert forget_an_inherited_forkserver() is False    # our own: kept
    assert _in_a_fork(forget=False) == 3        # the failure it exists for (CPython's waitpid)
    assert _in_a_fork(forget=True) == 0
    assert _start_one() == 0                    # the parent's server untouched
