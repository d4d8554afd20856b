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


def test_a_missing_protected_path_cannot_be_made(tmp_path):
    """The user site folder where ~/.local does not exist yet: neither it nor any folder on the way
    is granted, so nothing on the way can be made; the home folder's other entries stay writable."""
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    site = home / ".local" / "lib" / "python3.11" / "site-packages"
    grant, _ = confine.siblings([site])
    assert {g for g in grant if g.startswith(str(tmp_path))} == {str(home / ".cache")}


def test_a_protected_link_is_protected_where_it_is_and_where_it_points(tmp_path):
    """~/.bashrc linked into a dotfiles folder: neither the file nor the link can be replaced."""
    home, dots = tmp_path / "home", tmp_path / "dotfiles"
    home.mkdir()
    dots.mkdir()
    (dots / "bashrc").write_text("")
    (dots / "vimrc").write_text("")
    (home / ".bashrc").symlink_to(dots / "bashrc")
    (home / "notes").write_text("")
    grant, _ = confine.siblings([home / ".bashrc"])
    assert {g for g in grant if g.startswith(str(tmp_path))} == {str(home / "notes"), str(dots / "vimrc")}


def test_a_grant_inside_a_protected_tree_holds_and_a_protected_path_inside_a_grant_stays_protected(tmp_path):
    (tmp_path / "tmp" / "other").mkdir(parents=True)
    (tmp_path / "tmp" / "mine" / "sub").mkdir(parents=True)
    (tmp_path / "tmp" / "planted").write_text("x")
    (tmp_path / "dev" / "shm" / "reports").mkdir(parents=True)
    (tmp_path / "dev" / "shm" / "other").mkdir()
    (tmp_path / "dev" / "null").write_text("")
    grant, _ = confine.siblings([tmp_path / "tmp", tmp_path / "dev" / "shm" / "reports", tmp_path / "both"],
                                [tmp_path / "tmp" / "mine", tmp_path / "dev", tmp_path / "both"])
    mine = {g for g in grant if g.startswith(str(tmp_path))}
    assert mine == {str(tmp_path / "tmp" / "mine"), str(tmp_path / "dev" / "null"),
                    str(tmp_path / "dev" / "shm" / "other")}


def test_with_the_root_or_home_protected_whole_devices_logs_and_the_own_tmpdir_stay_writable(tmp_path):
    """A sys.path entry of `/` or $HOME (python -m pytest started there) protects it whole: the
    grants are then all that is writable."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    (home / "ascend").mkdir(parents=True)
    (home / ".cache").mkdir()
    own = tmp / "aclnn-backend-1-x"
    own.mkdir(parents=True)
    policy = confine.Policy(["/", str(home), str(tmp)], 7, tmpdir=str(own), granted=["/dev", str(home / "ascend")])
    assert policy.rules() == sorted(["/dev", str(home / "ascend"), str(own)])
    assert policy.for_process(None).rules() == sorted(["/dev", str(home / "ascend")])


def test_the_policy_protects_the_interpreter_home_start_up_files_and_the_temp_root(tmp_path, monkeypatch):
    """make_policy adds suite/run/protected.py's paths to the run's own, grants /dev and $HOME/ascend
    (made here, where it is missing) and, per process, its own TMPDIR in the protected temp root."""
    from suite.run import protected
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    (home / ".bashrc").write_text("")
    (home / "notes.txt").write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(confine.tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(confine, "_swept", set())
    policy = confine.make_policy([tmp_path / "guarded"], 7)
    want = {str(tmp_path / "guarded"), str(tmp), str(home / ".bashrc"), str(home / ".config"),
            os.path.realpath(os.path.dirname(os.__file__)), *protected.search_path(), *protected.python_environment()}
    assert want <= set(policy.protected) and set(protected.startup_files()) <= set(policy.protected)
    assert policy.granted == ["/dev", str(home / "ascend")] and (home / "ascend").is_dir()
    own = confine.fresh_tmpdir()
    try:
        one = policy.for_process(own)
        assert one.granted == policy.granted and one.protected == policy.protected
        rules = one.rules()
        assert own in rules and "/dev" in rules and str(home / "ascend") in rules
        assert not any(r.startswith(str(tmp) + "/") and r != own for r in rules)      # nothing else in tmp
        assert str(home / "notes.txt") in rules and not any(r.startswith(str(home) + "/.") for r in rules)
    finally:
        confine.remove_tmpdir(own)


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
    assert confine.in_force(True)["writes"] == (f"landlock abi {ABI}: {confine.WRITES_COVER}" if ABI
                                                else confine.in_force()["writes"])
    assert confine.protections(7, "")["writes"] == (
        "landlock abi 7: the suite, its data, cache and reports; the interpreter, sys.path and PATH; "
        "the home folder's start-up files; the temporary folder but for the process's own TMPDIR")


# What a confined child prints of each thing it tries: "ok" or the errno's name.
ATTEMPT = """
    def attempt(what, f):
        try:
            f()
            print(what, "ok")
        except OSError as e:
            print(what, errno.errorcode[e.errno])
"""

CONFINED = textwrap.dedent("""
    import errno, os, signal, sys, tempfile
    from suite.run import confine
    guarded, free = sys.argv[1], sys.argv[2]
    policy = confine.make_policy([guarded], confine.landlock_abi()[0]).for_process(confine.fresh_tmpdir())
    print("tmpdir", policy.tmpdir)
    policy.apply()
""" + ATTEMPT + """
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
    (tmp_path / "tmp").mkdir()            # its temporary folder (protected but for its own TMPDIR), not free's
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent), TMPDIR=str(tmp_path / "tmp"))
    p = subprocess.run([sys.executable, "-c", CONFINED, str(guarded), str(free)], capture_output=True,
                       text=True, env=env, timeout=HANG_S)
    assert p.returncode == 0, p.stderr
    said = dict(line.rsplit(" ", 1) for line in p.stdout.splitlines())
    confine.remove_tmpdir(said.pop("tmpdir"))
    # (a rename needs the right to remove from the protected folder: EACCES; a link into a folder
    # where the file would gain rights, EXDEV)
    assert said == {"write guarded": "EACCES", "create guarded": "EACCES", "rename guarded": "EACCES",
                    "link guarded": "EXDEV", "write free": "ok", "temp file": "ok", "read guarded": "ok",
                    "signal parent": "EPERM" if ABI >= confine.SIGNAL_ABI else "ok",
                    "signal child": "ok"}, p.stdout
    assert (guarded / "old").read_text() == "kept" and sorted(os.listdir(guarded)) == ["old"]


STARTUP = textwrap.dedent("""
    import errno, os, sys, tempfile
    from suite.run import confine
    home, pypath, other = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.path.append(home)                                 # as `python -m pytest` started in $HOME
    policy = confine.make_policy([], confine.landlock_abi()[0]).for_process(confine.fresh_tmpdir())
    policy.apply()
""" + ATTEMPT + """
    def probe(folder):                  # a uniquely named file, removed at once if it was ever made
        path = os.path.join(folder, f"aclnn-probe-{os.getpid()}.py")
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        os.unlink(path)
    def append_nothing(path):           # opened for appending, not one byte written
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
    import site
    attempt("sitecustomize", lambda: open(os.path.join(pypath, "sitecustomize.py"), "w"))
    attempt("user site", lambda: os.makedirs(site.getusersitepackages()))
    attempt("bashrc", lambda: open(os.path.join(home, ".bashrc"), "a"))
    attempt("profile", lambda: open(os.path.join(home, ".profile"), "w"))
    attempt("config", lambda: os.mkdir(os.path.join(home, ".config")))
    attempt("home", lambda: open(os.path.join(home, "new"), "w"))
    attempt("stdlib", lambda: probe(os.path.dirname(os.__file__)))
    attempt("stdlib module", lambda: append_nothing(os.path.realpath(os.__file__)))
    attempt("temp root", lambda: open(os.path.join(os.path.dirname(policy.tmpdir), "planted"), "w"))
    attempt("other tmpdir", lambda: os.unlink(os.path.join(other, "f")))
    attempt("own tmpdir", lambda: os.close(tempfile.mkstemp()[0]))
    attempt("cann logs", lambda: os.makedirs(os.path.join(home, "ascend", "log", "x")))
    attempt("dev", lambda: open("/dev/null", "w").write("x"))
""")


@needs_writes
def test_a_confined_process_writes_none_of_the_next_run_s_start_up_files(tmp_path):
    """With HOME, the temporary folder and a PYTHONPATH folder the test's own (and $HOME on sys.path):
    every file the next run's interpreter or shell starts from is refused, and so is the temporary
    folder but for the process's own TMPDIR; CANN's logs and devices stay writable. The real stdlib
    is only probed: a uniquely named file, removed at once if it was ever made, and a module opened
    for appending with nothing written."""
    home, pypath, tmp = tmp_path / "home", tmp_path / "pypath", tmp_path / "tmp"
    for d in (home, pypath, tmp):
        d.mkdir()
    (home / ".bashrc").write_text("# kept\n")
    other = tmp / f"{confine.TMP_PREFIX}{os.getpid()}-other"         # another process's TMPDIR
    other.mkdir()
    (other / "f").write_text("kept")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parent.parent), str(pypath)]),
               TMPDIR=str(tmp), HOME=str(home))
    env.pop("PYTHONUSERBASE", None)
    p = subprocess.run([sys.executable, "-c", STARTUP, str(home), str(pypath), str(other)], capture_output=True,
                       text=True, env=env, timeout=HANG_S)
    assert p.returncode == 0, p.stderr
    said = dict(line.rsplit(" ", 1) for line in p.stdout.splitlines())
    refused = ["sitecustomize", "user site", "bashrc", "profile", "config", "home", "stdlib", "stdlib module",
               "temp root", "other tmpdir"]
    assert said == {**{k: "EACCES" for k in refused}, "own tmpdir": "ok", "cann logs": "ok", "dev": "ok"}, p.stdout
    assert sorted(os.listdir(home)) == [".bashrc", "ascend"] and (home / ".bashrc").read_text() == "# kept\n"
    assert os.listdir(pypath) == [] and (other / "f").read_text() == "kept"
    assert sorted(n for n in os.listdir(tmp) if not n.startswith(confine.TMP_PREFIX)) == []


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
