"""suite/run/launcher.py and suite/run/starter.py: backend processes are forked by a launcher that
listens on nothing, hold no file descriptor but their own, and any failure to start one is a
BackendError of one line (issue 43, items 1 and 4). The attacks themselves, in a real run:
tests/test_confine_escape.py."""
from __future__ import annotations

import os
import signal
import sys
import tempfile

import pytest

from suite.run import confine, starter
from suite.run.backend import BackendError
from suite.run.host import Fault, Hosted
from tests.hostile import alive
from tests.test_run_host import _req
from tests.waiting import HANG_S, until

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
ECHO = "tests.test_run_host:ViewEcho"


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _fds(pid: int) -> dict:
    out = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            pass
    return out


def _unix_sockets() -> dict:
    """inode -> (flags, path) of every Unix socket of this network namespace (/proc/net/unix)."""
    out = {}
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            cols = line.split()
            out[f"socket:[{cols[6]}]"] = (int(cols[3], 16), cols[7] if len(cols) > 7 else "")
    return out


@linux
def test_the_process_that_forks_backend_processes_listens_on_no_socket():
    """Before: the backend's parent was multiprocessing's forkserver, listening on
    /tmp/pymp-*/listener-*, which any process of the user could ask for a process."""
    h = Hosted(ECHO, {}, timeout=HANG_S)
    try:
        h.start()
        parent = _ppid(h._proc.pid)
        assert parent != os.getpid()
        unix = _unix_sockets()
        held = [unix[link] for link in _fds(parent).values() if link in unix]
        assert held, "the launcher holds its control socket"
        listening = [(flags, path) for flags, path in held if flags & 0x10000 or path]
        assert listening == [], f"the backend's parent listens: {listening}"
    finally:
        h.close()


@linux
def test_a_backend_process_holds_no_file_descriptor_but_its_own():
    """Started while another backend process lives: nothing of the launcher's (its control socket,
    the other process's status pipe) reaches it, only fds 0-2 and its own socket. Before: 4 more."""
    first, second = Hosted(ECHO, {}, timeout=HANG_S), Hosted(ECHO, {}, timeout=HANG_S)
    try:
        first.start()
        second.start()
        fds = _fds(second._proc.pid)
        assert sorted(fds)[:3] == [0, 1, 2] and len(fds) == 4, fds
        own = [link for fd, link in fds.items() if fd > 2]
        assert own[0].startswith("socket:"), own
        assert own[0] not in _fds(_ppid(second._proc.pid)).values()    # not one the launcher holds
        assert _serves(second)
    finally:
        first.close()
        second.close()


@linux
def test_a_dead_launcher_takes_its_backend_processes_and_a_fresh_one_serves_the_next_case(monkeypatch):
    """A backend on a kernel without Landlock's signal scoping could kill it. (The test kills a
    launcher of its own: the session's serves the conformance suite's backend in this process,
    whose two processes would die with it, an incident of the whole run.)"""
    monkeypatch.setattr(starter, "_launchers", {})
    h = Hosted(ECHO, {}, timeout=HANG_S)
    try:
        h.start()
        backend, launcher = h._proc.pid, _ppid(h._proc.pid)
        os.kill(launcher, signal.SIGKILL)
        until(lambda: not alive(backend), "the backend process to die with its launcher")
        assert _serves(h)                   # no case was running: a fresh process serves this one
        assert h.incidents == ["the backend's process was killed by signal 9 (SIGKILL) between calls, "
                               "after a call had returned; it was restarted"]
        assert _ppid(h._proc.pid) not in (launcher, os.getpid())
    finally:
        h.close()
        _end_own()


def _serves(h: Hosted) -> bool:
    out = h.run(_req((2, 3)), 1, HANG_S)[0]
    return out.raised is None and out.arrays is not None and out.arrays["out"].shape == (2, 3)


def _one_line(e: BaseException) -> str:
    text = str(e)
    assert "\n" not in text and "Traceback" not in text, text
    return text


def test_a_missing_temporary_folder_is_a_backend_error_of_one_line(monkeypatch, tmp_path):
    """A backend that cleaned /tmp: before, the next start raised FileNotFoundError (a traceback in
    every later case's record)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    with pytest.raises(BackendError) as e:
        Hosted(ECHO, {}, timeout=HANG_S).start()
    assert _one_line(e.value).startswith(f"backend {ECHO!r}: its process could not be started (FileNotFoundError: ")


def test_a_restart_that_cannot_start_a_process_fails_the_case_with_the_suites_message(monkeypatch, tmp_path):
    h = Hosted(ECHO, {}, timeout=HANG_S)
    try:
        h.start()
        h._kill()
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
        with pytest.raises(Fault) as e:
            h.run(_req((2, 3)), 1, HANG_S)
        assert e.value.kind == "restart failed"
        assert _one_line(e.value).startswith("the backend could not be restarted: backend ")
        monkeypatch.setattr(tempfile, "tempdir", None)
        assert _serves(h)          # and the next case runs
    finally:
        h.close()


@pytest.mark.parametrize("executable", ["/nonexistent/python", "/bin/false"])
def test_a_launcher_that_cannot_start_is_a_backend_error_and_the_next_start_tries_again(monkeypatch, executable):
    from suite.run import starter
    monkeypatch.setattr(starter, "_launchers", {})        # the session's launcher is left alone
    monkeypatch.setattr(sys, "executable", executable)
    with pytest.raises(BackendError) as e:
        Hosted(ECHO, {}, timeout=HANG_S).start()
    assert _one_line(e.value).startswith(f"backend {ECHO!r}: its process could not be started (the launcher ")
    assert not any(each.alive() for each in starter._launchers.values())
    monkeypatch.undo()
    monkeypatch.setattr(starter, "_launchers", {})
    h = Hosted(ECHO, {}, timeout=HANG_S)
    try:
        h.start()
        assert _serves(h)
    finally:
        h.close()
        _end_own()


def test_the_protections_say_how_backend_processes_are_started():
    assert confine.in_force()["launcher"] == "private socket pair, no listening socket"
    assert confine.in_force(False)["launcher"] == "private socket pair, no listening socket"
    assert confine.in_force(True, "none")["launcher"].startswith("not available: --isolation none")


@linux
def test_a_backend_process_runs_in_pytests_folder_even_where_it_holds_another_suite(monkeypatch, tmp_path):
    """The launcher starts in the folder `suite` is imported from (python -m would otherwise find a
    `suite` of the user's repository first), then moves to pytest's."""
    from suite.run import starter
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "__init__.py").write_text("raise ImportError('not the suite')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(starter, "_launchers", {})        # a fresh launcher, started from here
    h = Hosted(ECHO, {}, timeout=HANG_S)
    try:
        h.start()
        assert os.readlink(f"/proc/{h._proc.pid}/cwd") == str(tmp_path)
        assert _serves(h)
    finally:
        h.close()
        _end_own()


@linux
def test_backend_processes_have_no_controlling_terminal_of_the_runs(monkeypatch):
    """In a session of their own: /dev/tty cannot be opened there, so no TIOCSTI can type a command
    into the shell the run was started from (issue 43: nothing may reach what outlives the backend)."""
    monkeypatch.setattr(starter, "_launchers", {})
    h = Hosted(ECHO, {}, timeout=HANG_S)
    try:
        h.start()
        pid = h._proc.pid
        assert os.getsid(pid) != os.getsid(0) and os.getsid(_ppid(pid)) != os.getsid(0)
    finally:
        h.close()
        _end_own()


def _end_own() -> None:
    """End the launchers a test started for itself (it set starter._launchers aside first)."""
    for each in starter._launchers.values():
        each.end()


@linux
def test_a_launcher_behind_another_wall_leaves_the_first_and_its_backend_processes_alone(monkeypatch, tmp_path):
    """A session's walled launcher serves its backend while the project's own tests, in the same
    xdist worker, start backend processes without the wall: the full run's incidents (both of a
    worker's backend processes killed by SIGKILL) came from a launcher replaced for the other."""
    monkeypatch.setattr(starter, "_launchers", {})
    monkeypatch.setattr(starter, "_wall", lambda: [])                 # the keys differ; no real wall
    monkeypatch.setattr(starter.namespace, "root", lambda: str(tmp_path))     # its folder of TMPDIRs
    monkeypatch.setattr(starter.namespace, "active", lambda: True)
    walled, plain = Hosted(ECHO, {}, timeout=HANG_S), Hosted(ECHO, {}, timeout=HANG_S)
    try:
        walled.start()
        monkeypatch.setattr(starter.namespace, "active", lambda: False)
        plain.start()
        assert walled._proc.is_alive() and _serves(walled) and _serves(plain)
        assert walled.incidents == [] and set(starter._launchers) == {str(tmp_path), None}
    finally:
        walled.close()
        plain.close()
        _end_own()
