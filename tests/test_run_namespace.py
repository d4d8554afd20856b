"""suite/run/namespace.py: the mount-namespace wall (bubblewrap) where it works, and the fallback to
Landlock alone where it does not (no bwrap on PATH, user namespaces refused): the probe, the
command prefix, the words in `protections`, and backend processes started behind it."""
from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path

import pytest

from suite.run import confine, namespace, starter
from suite.run.host import Hosted
from tests.waiting import HANG_S

REAL = namespace._probe()               # this machine's bwrap, asked once for the module


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(namespace, "_probed", None)
    monkeypatch.setattr(namespace, "_wanted", None)
    monkeypatch.setattr(namespace, "_needed", [])


def _fake_bwrap(folder: Path, code: int, said: str = "") -> Path:
    """A `bwrap` that notes each call and exits `code` (the version call always succeeds)."""
    folder.mkdir()
    exe = folder / "bwrap"
    exe.write_text(f"#!/bin/sh\necho x >> {folder}/calls\n"
                   f"if [ \"$1\" = --version ]; then echo 'bubblewrap 9.9'; exit 0; fi\n"
                   f"echo '{said}' >&2\nexit {code}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return folder


def test_without_bwrap_on_path_the_run_falls_back_to_landlock_and_says_so(monkeypatch):
    monkeypatch.setattr(namespace.shutil, "which", lambda name: None)
    namespace.want("auto", {})
    assert namespace.probe()[2] == "no bwrap on PATH"
    assert not namespace.active() and namespace.argv(["/tmp/x"]) == [] and starter._wall() == []
    assert confine.in_force()["namespace"] == "not available: no bwrap on PATH"
    tmpdir = namespace.fresh_tmpdir()           # today's TMPDIR, in the system's temporary folder
    try:
        assert os.path.dirname(tmpdir) == os.path.realpath(tempfile.gettempdir())
    finally:
        confine.remove_tmpdir(tmpdir)


@pytest.mark.skipif(not os.path.exists("/bin/sh"), reason="the fake bwrap is a shell script")
def test_a_bwrap_that_cannot_make_a_namespace_is_reported_with_its_message_and_asked_once(monkeypatch, tmp_path):
    folder = _fake_bwrap(tmp_path / "bin", 1, "bwrap: No permissions to creating new namespace")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    namespace.want("auto", {})
    words = confine.in_force()["namespace"]
    assert words == ("not available: bwrap cannot make a namespace here "
                     "(exit 1: bwrap: No permissions to creating new namespace)"), words
    assert not namespace.active() and namespace.argv([]) == []
    assert len((folder / "calls").read_text().split()) == 2       # --version and the probe, once only


def test_the_command_prefix_hides_tmp_and_run_and_binds_back_only_what_the_launcher_needs(monkeypatch, tmp_path):
    monkeypatch.setattr(namespace, "_probed", ("/usr/bin/bwrap", "bubblewrap 0.8.0", ""))
    lib = tempfile.mkdtemp(prefix="aclnn-ns-lib-", dir="/tmp")
    other = tempfile.mkdtemp(prefix="aclnn-ns-other-", dir="/tmp")
    tools = tempfile.mkdtemp(prefix="aclnn-ns-bin-", dir="/tmp")
    (Path(lib) / "sub").mkdir()
    (Path(lib) / "lib.so").write_bytes(b"")        # a file: its folder, which holds `sub` too, once
    monkeypatch.setenv(namespace.BIND_ENV, os.pathsep.join([f"{lib}/sub", f"{lib}/lib.so", "/tmp/aclnn-ns-missing"]))
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", tools]))
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    try:
        namespace.want("auto", {"lib_dir": lib, "soc": "Ascend910B"})
        argv = namespace.argv(["/usr", "/tmp"])
        assert argv[:4] == ["/usr/bin/bwrap", "--dev-bind", "/", "/"] and argv[-3:] == ["--die-with-parent", "--new-session", "--"]
        assert ["--tmpfs", "/tmp"] == argv[4:6] and "/run" in argv and "--unshare-pid" not in argv and "--unshare-ipc" not in argv
        bound = [argv[i + 1] for i, a in enumerate(argv) if a == "--bind"]
        assert [argv[i + 2] for i, a in enumerate(argv) if a == "--bind"] == bound      # at the same paths
        root = namespace.root()
        assert re.match(r"aclnn-backend-%d-" % os.getpid(), os.path.basename(root))    # sweep_stale's name
        # the TMPDIRs' folder, the option's folder and PATH's (not its sub-folder again, not a missing
        # one, not /usr which is in view anyway, not /tmp whole, not another folder of /tmp)
        assert sorted(bound) == sorted([root, os.path.realpath(lib), os.path.realpath(tools)]), bound
        assert other not in " ".join(argv)
        tmpdir = namespace.fresh_tmpdir()
        assert os.path.dirname(tmpdir) == root and os.path.basename(tmpdir).startswith(f"aclnn-backend-{os.getpid()}-")
    finally:
        for p in (lib, other, tools):
            confine.remove_tmpdir(p)


def test_the_words_say_which_walls_the_session_chose(monkeypatch):
    monkeypatch.setattr(namespace, "_probed", ("/usr/bin/bwrap", "bubblewrap 0.8.0", ""))
    assert confine.in_force()["namespace"] == "bubblewrap 0.8.0: private " + " and ".join(namespace.hidden())
    assert confine.in_force(on=False)["namespace"] == "off (--confine=off)"
    assert namespace.chosen(confine.in_force(), "landlock")["namespace"] == "off (--confine=landlock)"
    assert namespace.chosen(confine.in_force(isolation="none"), "landlock")["namespace"].startswith("not available: --isolation")
    namespace.want("landlock", {})
    assert not namespace.active() and namespace.argv([]) == []
    namespace.want("auto", {})
    assert namespace.active()


@pytest.mark.skipif(bool(REAL[2]), reason=f"the wall is not available here: {REAL[2]}")
def test_a_backend_process_behind_the_wall_sees_a_private_tmp_and_is_still_reaped(monkeypatch):
    plain = Hosted(None, {}, timeout=HANG_S)     # no session asked for the wall: none
    plain.start()
    assert starter.launcher().wall == []
    plain.close()
    namespace.want("auto", {})
    mine = tempfile.mkdtemp(prefix="aclnn-ns-visible-", dir="/tmp")
    h = Hosted(None, {}, timeout=HANG_S)
    try:
        h.start()
        pid, launcher = h._proc.pid, starter.launcher()
        assert launcher.wall and launcher.wall[0] == REAL[0]
        with open(f"/proc/{pid}/mountinfo") as f:
            mounts = [line.split() for line in f]
        assert any(m[4] == "/tmp" and "tmpfs" in m for m in mounts), mounts
        assert os.path.dirname(h._tmpdir) == namespace.root()
        # the launcher forked it (the reaper's tree), and bwrap, pytest's child, started the launcher
        with open(f"/proc/{pid}/stat") as f:
            assert int(f.read().rsplit(")", 1)[1].split()[1]) == launcher.pid
        with open(f"/proc/{launcher.pid}/stat") as f:
            assert int(f.read().rsplit(")", 1)[1].split()[1]) == launcher.proc.pid
        assert not os.path.exists(f"/proc/{pid}/root{mine}")    # its /tmp does not hold the test's folder
        tmpdir = h._tmpdir
        # sys.path growing during a run does not replace the launcher (that would end h's process)
        monkeypatch.syspath_prepend(mine)
        second = Hosted(None, {}, timeout=HANG_S)
        second.start()
        assert starter.launcher() is launcher and h._proc.is_alive()
        second.close()
    finally:
        h.close()
        os.rmdir(mine)
    assert not os.path.exists(tmpdir)


def test_a_killed_runs_folder_of_tmpdirs_is_swept_by_the_next_run():
    """The folder is named as a TMPDIR is (confine.fresh_tmpdir): a run that ended without its exit
    handlers (SIGKILL: os._exit here) leaves it, and sweep_stale removes it with what it holds."""
    import subprocess
    import sys
    code = ("import os; from suite.run import namespace; r = namespace.root(); "
            "os.mkdir(os.path.join(r, 'aclnn-backend-1-x')); print(r, flush=True); os._exit(0)")
    left = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=HANG_S).stdout.strip()
    assert os.path.isdir(os.path.join(left, "aclnn-backend-1-x"))
    assert left in confine.sweep_stale(os.path.dirname(left)) and not os.path.exists(left)
