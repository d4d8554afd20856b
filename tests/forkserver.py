"""multiprocessing's forkserver after pytest's own process was forked.

A harness that forks the test process after a test started a backend's process (mutmut does, once
per mutant, from the process that ran the clean tests) leaves the child with the parent's
forkserver: alive, but not the child's own, so `ensure_running`'s `os.waitpid` raises
ChildProcessError and the first test that starts a backend's process fails, for a reason that is
not the test's (mutmut then counts its mutant as killed). Forgetting that server makes this process
start its own.
"""
from __future__ import annotations

import os
from multiprocessing import forkserver


def forget_an_inherited_forkserver() -> bool:
    """True where a forkserver that is not this process's child (or that has ended) was forgotten."""
    server = forkserver._forkserver
    pid = server._forkserver_pid
    if pid is None:
        return False
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == 0:
            return False                        # our own child, still running
    except ChildProcessError:
        pass                                    # a forkserver of the process we were forked from
    if server._forkserver_alive_fd is not None:
        os.close(server._forkserver_alive_fd)   # our copy: the parent's server keeps running for it
    server._forkserver_pid = server._forkserver_address = server._forkserver_alive_fd = None
    return True
