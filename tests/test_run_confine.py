"""The pieces behind tests/test_confine.py, each on its own: which paths the Landlock rules grant
(suite/run/confine.py), what a confined process can and cannot do, and the reaper (suite/run/reaper.py)
ending a backend's descendants, and nothing else, on every way a backend process ends."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from suite.run import confine, reaper
from suite.run.host import Fault, Hosted
from tests.test_confine import ABI, needs_signals, needs_writes
from tests.test_run_host import _req
from tests.waiting import HANG_S


def test_the_rules_grant_every_sibling_on_the_way_and_nothing_protected(tmp_path):
    (tmp_path / "a" / "guarded" / "deep").mkdir(parents=True)
    (tmp_path / "a" / "other").mkdir()
    (tmp_path / "a" / "file").write_text("x")
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "link").symlink_to(tmp_path / "a" / "guarded")
    (tmp_path / "c").mkdir()
    grant, unlisted = confine.siblings([tmp_path / "a" / "guarded", tmp_path / "c" / "missing"])
    mine = {g for g in grant if g.startswith(str(tmp_path))}
    assert mine == {str(tmp_path / "a" / "other"), str(tmp_path / "a" / "file"), str(tmp_path / "b")}
    assert unlisted == []
    # on the way from /: the root's other entries are granted, the steps are not
    assert "/proc" in grant or "/dev" in grant
    assert not any(str(tmp_path).startswith(g + "/") or g == str(tmp_path) for g in grant)


def test_a_protected_folder_inside_another_grants_nothing_inside_the_outer(tmp_path):
    (tmp_path / "outer" / "inner").mkdir(parents=True)
    (tmp_path / "outer" / "sibling").mkdir()
    grant, _ = confine.siblings([tmp_path / "outer", tmp_path / "outer" / "inner"])
    assert not any(g.startswith(str(tmp_path / "outer")) for g in grant)


def test_the_write_rights_by_abi():
    folder1, file1 = confine.write_rights(1)
    folder3, file3 = confine.write_rights(3)
    assert not folder1 & (confine.REFER | confine.TRUNCATE) and file1 == confine.WRITE_FILE
    assert folder3 & confine.REFER and folder3 & confine.TRUNCATE and file3 == confine.WRITE_FILE | confine.TRUNCATE
    assert not folder3 & (1 << 0 | 1 << 2 | 1 << 3 | 1 << 15)     # execute, read, read dir, device ioctl


def test_where_landlock_is_missing_the_protections_say_so():
    words = confine.protections(0, "this kernel has no Landlock (Linux 5.13+)")
    assert words == {"writes": "not available: this kernel has no Landlock (Linux 5.13+)",
                     "signals": "not available: this kernel has no Landlock (Linux 5.13+)"}
    assert confine.protections(5, "")["signals"].startswith("not available: Landlock ABI 5 has no signal scoping")
    assert confine.protections(7, "", on=False)["writes"] == "off (--confine=off)"
    assert confine.in_force(True, "none")["writes"].startswith("not available: --isolation none")
    assert confine.in_force(True)["writes"] == (f"landlock abi {ABI}" if ABI else confine.in_force()["writes"])


CONFINED = textwrap.dedent("""
    import errno, os, signal, sys, tempfile
    from suite.run import confine
    guarded, free = sys.argv[1], sys.argv[2]
    policy = confine.make_policy([guarded], confine.landlock_abi()[0])
    print("made", ":".join(policy.made) or "-")
    policy.apply()
    def attempt(what, f):
        try:
            f()
            print(what, "ok")
        except OSError as e:
            print(what, errno.errorcode[e.errno])
    attempt("write guarded", lambda: open(os.path.join(guarded, "old"), "a").write("x"))
    attempt("create guarded", lambda: open(os.path.join(guarded, "new"), "w").write("x"))
    attempt("rename guarded", lambda: os.rename(os.path.join(guarded, "old"), os.path.join(free, "moved")))
    attempt("link guarded", lambda: os.link(os.path.join(guarded, "old"), os.path.join(free, "linked")))
    attempt("write free", lambda: open(os.path.join(free, "new"), "w").write("x"))
    attempt("temp file", lambda: tempfile.mkstemp())
    attempt("read guarded", lambda: open(os.path.join(guarded, "old")).read())
    attempt("signal parent", lambda: os.kill(os.getppid(), 0))
    pid = os.fork()
    if pid == 0:
        signal.pause()
    attempt("signal child", lambda: os.kill(pid, signal.SIGKILL))
    os.waitpid(pid, 0)
""")


@needs_writes
def test_a_confined_process_writes_everywhere_but_the_protected_paths(tmp_path):
    guarded, free = tmp_path / "guarded", tmp_path / "free"
    guarded.mkdir()
    free.mkdir()
    (guarded / "old").write_text("kept")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    p = subprocess.run([sys.executable, "-c", CONFINED, str(guarded), str(free)], capture_output=True,
                       text=True, env=env, timeout=HANG_S)
    assert p.returncode == 0, p.stderr
    said = dict(line.rsplit(" ", 1) for line in p.stdout.splitlines())
    confine.cleanup(confine.Policy([], 0, made=[m for m in said.pop("made").split(":") if m != "-"]))
    # (a rename needs the right to remove from the protected folder: EACCES; a link into a folder
    # where the file would gain rights, EXDEV)
    assert said == {"write guarded": "EACCES", "create guarded": "EACCES", "rename guarded": "EACCES",
                    "link guarded": "EXDEV", "write free": "ok", "temp file": "ok", "read guarded": "ok",
                    "signal parent": "EPERM" if ABI >= confine.SIGNAL_ABI else "ok",
                    "signal child": "ok"}, p.stdout
    assert (guarded / "old").read_text() == "kept" and sorted(os.listdir(guarded)) == ["old"]


# -- the reaper ---------------------------------------------------------------------------------
class Daemonizer:
    """Leaves a sleeping daemon behind on each call (double fork, new session), noting its pid;
    `then` says what the backend's process does next."""
    name = "daemonizer"

    def __init__(self, spy: str, then: str = "return") -> None:
        self.spy, self.then = spy, then

    def run(self, call):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                with open(os.path.join(self.spy, "pids"), "a") as f:
                    f.write(f"{os.getpid()}\n")
                time.sleep(120)
            os._exit(0)
        os.wait()
        deadline = time.monotonic() + 10
        while not os.path.exists(os.path.join(self.spy, "pids")) and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.then == "exit":
            os._exit(0)
        if self.then == "hang":
            time.sleep(3600)
        return np.zeros(call.out_shape, call.out_dtype)


def _pids(spy: Path):
    return [int(x) for x in (spy / "pids").read_text().split()]


def _alive(pid: int) -> bool:
    return reaper._state(pid) not in (None, "Z", "X")


linux_only = pytest.mark.skipif(not reaper.available()[0], reason=reaper.describe())


@linux_only
@pytest.mark.parametrize("then", ["return", "exit", "hang"])
def test_every_descendant_of_a_backend_process_ends_with_it(tmp_path, then):
    """Closed, dead on its own, or killed on its deadline: its daemons end too. A second backend's
    process, the launcher, and a child of this test process are left alone."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])    # killed below
    other = Hosted("tests.test_run_confine:Daemonizer", {"spy": str(tmp_path / "other")}, timeout=HANG_S)
    (tmp_path / "other").mkdir()
    h = Hosted("tests.test_run_confine:Daemonizer", {"spy": str(tmp_path), "then": then}, timeout=2)
    try:
        other.start()
        h.start()
        server = reaper._live[other._proc.pid]
        if then == "return":
            h.run(_req((2, 3)))
            assert _alive(_pids(tmp_path)[0])
            assert h.close() is None
        else:
            # A Fault either way: the death, or the deadline. (Its daemon holds the socket, so the host
            # sees an exit only at the deadline: a longer one only makes this test wait for it.)
            with pytest.raises(Fault):
                h.run(_req((2, 3)), deadline=2)
        assert _pids(tmp_path) and not any(_alive(p) for p in _pids(tmp_path))
        assert other._proc.is_alive() and _alive(server) and bystander.poll() is None
        other.run(_req((2, 3)))                           # its own daemon lives until it ends
        assert _alive(_pids(tmp_path / "other")[0])
    finally:
        other.close()
        bystander.kill()
        bystander.wait()
    assert not any(_alive(p) for p in _pids(tmp_path / "other"))


# -- where a run says which protections it has ---------------------------------------------------
def test_the_doctor_lists_the_protections_a_run_has_here():
    from tests.test_cli_doctor import run_doctor
    code, text, err = run_doctor("--backend", "reference", "--no-smoke", as_json=False)
    lines = text.splitlines()
    at = lines.index("Protections of a run (the backend's process: suite/run/confine.py, suite/run/reaper.py)")
    want = confine.in_force()
    assert [ln.split(None, 1) for ln in lines[at + 1:at + 1 + len(want)]] == [[k, v] for k, v in want.items()], text
    _, doc, _ = run_doctor("--backend", "reference", "--no-smoke")
    assert doc["environment"]["protections"] == want


def test_a_killed_run_s_backend_tmpdir_is_swept_by_the_next_run_and_a_live_one_s_is_kept(tmp_path):
    """A pytest killed by SIGKILL (or an xdist worker by a segfault) cannot remove the TMPDIR it made
    for its backend; the next run that makes one removes those whose maker is gone."""
    import subprocess
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"{confine.TMP_PREFIX}{gone.pid}-abc"
    (dead / "sub").mkdir(parents=True)
    (dead / "sub" / "left.bin").write_bytes(b"x" * 100)
    live = tmp_path / f"{confine.TMP_PREFIX}{os.getppid()}-def"
    live.mkdir()
    other = tmp_path / f"{confine.TMP_PREFIX}notapid"
    other.mkdir()
    removed = confine.sweep_stale(str(tmp_path))
    assert removed == [str(dead)] and not dead.exists()
    assert live.is_dir() and other.is_dir()


def test_the_backend_tmpdir_is_named_for_its_maker_and_the_first_one_made_sweeps(tmp_path, monkeypatch):
    import subprocess
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"{confine.TMP_PREFIX}{gone.pid}-abc"
    dead.mkdir()
    monkeypatch.setattr(confine.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(confine, "_swept", set())
    made = confine.fresh_tmpdir()
    try:
        assert os.path.dirname(made) == str(tmp_path.resolve())
        assert os.path.basename(made).startswith(f"{confine.TMP_PREFIX}{os.getpid()}-")
        assert not dead.exists()
        (Path(made) / "locked").mkdir()
        (Path(made) / "locked" / "f").write_text("x")
        os.chmod(Path(made) / "locked", 0o500)     # a folder its owner may not write is removed too
    finally:
        confine.remove_tmpdir(made)
    assert not os.path.exists(made)
