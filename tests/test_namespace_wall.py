"""Issue 43, the mount-namespace wall (suite/run/namespace.py), in a real run (tests/test_confine.py's
sandbox, serially and with -n 2): a backend that looks for a listening Unix socket of the user's
(tests/hostile_sockets.py) and asks it to forge results.json after the run finds none where
bubblewrap works, and the run stays failing. The socket is the test's own tiny command server in
a folder of its own under /tmp, never a real one of the machine. With --confine=landlock (Landlock
only: what every run had before) the same attack reaches the server and the report is forged,
which is what the wall closes."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import List

import pytest

from tests.hostile import forge
from tests.test_confine import FAILED, WORKERS, Sandbox, assert_caught, baseline, box, finish  # noqa: F401
from tests.waiting import HANG_S


def _bwrap_works() -> str:
    """Why bubblewrap cannot make a namespace here ('' where it can), asked directly."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "no bwrap on PATH: the mount-namespace wall is not available here (apt-get install bubblewrap)"
    got = subprocess.run([bwrap, "--dev-bind", "/", "/", "--tmpfs", "/tmp", "--", "true"],
                         capture_output=True, text=True, timeout=HANG_S)
    return "" if got.returncode == 0 else f"bwrap cannot make a namespace here: {got.stderr.strip()[-300:]}"


class Server:
    """A command server listening in a folder of its own under /tmp (a tmux server's stand-in): it
    notes each command it is sent; `carry_out` runs the forgeries once the run is over."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="aclnn-hostile-sockets-", dir="/tmp")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(os.path.join(self.folder, "default"))
        self.sock.listen(16)
        self.commands: List[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5.0)
                try:
                    self.commands += conn.recv(4096).decode().splitlines()
                except OSError:
                    pass

    def carry_out(self) -> None:
        for command in self.commands:
            verb, path = command.split(" ", 1)
            if verb == "forge":
                forge(Path(path))

    def close(self) -> None:
        self.sock.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def _run(box: Sandbox, server: Server, workers: int, extra=()) -> tuple:
    env = box.env(box.reports)
    env["HOSTILE_SOCKETS"] = server.folder
    args = box.args(None, workers, extra=extra) + ["--backend", "tests.hostile_sockets:SocketEscape"]
    proc = subprocess.Popen(args, cwd=box.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    out = finish(proc, HANG_S)
    server.carry_out()                  # the server runs what it was sent, after the run
    return out, proc.returncode


WHY_NOT = _bwrap_works() if os.path.isdir("/tmp") else "no /tmp"


@pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "-")
@WORKERS
def test_behind_the_wall_a_backend_finds_no_socket_of_the_users(box, baseline, server, workers):
    """Before the wall: it found the server in /tmp, which forged results.json to say all passed."""
    out, code = _run(box, server, workers)
    assert server.commands == [], server.commands
    doc = assert_caught(box, baseline, out, code)
    assert doc["protections"]["namespace"].startswith("bubblewrap "), doc["protections"]
    looked = box.noted("sockets")
    assert looked and set(looked) == {"[]"}, looked       # every process that attacked found none


def test_with_landlock_only_the_socket_is_in_reach_and_the_report_is_forged(box, server):
    """What the wall closes: --confine=landlock, Landlock alone, lets connect() through."""
    out, code = _run(box, server, 0, extra=("--confine=landlock",))
    assert code == 1, out[-2000:]
    assert server.commands and server.commands[0].startswith("forge "), (server.commands, box.noted("refused"))
    doc = json.loads((box.reports / "results.json").read_text())
    assert doc["counts"]["failed"] == 0 and doc["complete"] is True          # forged: all passed
    assert doc["protections"]["namespace"] == "off (--confine=landlock)", doc["protections"]
