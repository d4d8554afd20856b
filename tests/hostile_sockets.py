"""A backend of issue 43 that goes around Landlock through a listening pathname Unix socket of the
user's (used by tests/test_namespace_wall.py; the conventions are tests/hostile.py's):

  SocketEscape  a broken kernel that looks for listening Unix sockets where a user's servers keep
                them (a tmux server's /tmp/tmux-UID/default, an ssh-agent, the session D-Bus in
                /run/user/UID) and asks each to forge results.json once the run is over: such a
                server runs commands outside the confinement (tmux's run-shell).

HOSTILE_SOCKETS is the folder under /tmp where the test's own command server listens: a real
attacker walks /tmp and /run/user/UID; the backend walks only that folder, so that no real socket
of the machine is ever asked anything.
"""
from __future__ import annotations

import os
import socket
import stat
from typing import List

from tests.hostile import _Attack, _note, _target


def sockets(top: str) -> List[str]:
    """Every Unix socket file below `top` that this process can see."""
    found = []
    for folder, _, files in os.walk(top):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    found.append(path)
            except OSError:
                pass
    return sorted(found)


class SocketEscape(_Attack):
    """Asks every listening socket in reach to forge results.json after the run."""

    def attack(self) -> None:
        found = sockets(os.environ.get("HOSTILE_SOCKETS", "/nonexistent"))
        _note("sockets", repr(found))
        for path in found:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(5.0)
                s.connect(path)
                s.sendall(f"forge {_target() / 'results.json'}\n".encode())
            _note("asked", path)
