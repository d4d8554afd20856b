"""A backend that plants code where the next run's interpreter or shell starts from, or spoils the
temporary folder (issue 43, item 2; the backends: tests/hostile_startup.py). Each runs in a real
pytest session of a copy of the suite (tests/test_confine.py's Sandbox), serially and with -n 2,
with HOME, PYTHONUSERBASE, TMPDIR and an added PYTHONPATH folder of the test's own: for each, pytest
exits 1 with the broken kernel's case failed, the write is refused (EACCES, noted through the spy),
nothing was planted, and where a planted file would have made the next run pass (sitecustomize.py,
a .pth), the next run of a wrong kernel still fails."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Iterator, Optional

import pytest

from tests.reportkit import N2_HEAVY
from tests.test_confine import Sandbox, assert_caught, baseline, finish, needs_writes  # noqa: F401
from tests.waiting import HANG_S

WORKERS = pytest.mark.parametrize("workers", N2_HEAVY)


class StartupBox(Sandbox):
    """The sandbox, with a home folder (no user site folder in it), a PYTHONPATH folder and a
    temporary folder of its own."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.home = tmp / "home"
        self.home.mkdir()
        (self.home / ".bashrc").write_text("# the user's own\n")
        self.pypath = tmp / "pypath"
        self.pypath.mkdir()
        self.decoy = self.tmp / f"aclnn-backend-{os.getpid()}-decoy"          # a live process's TMPDIR
        self.decoy.mkdir()
        (self.decoy / "work.bin").write_bytes(b"kept")

    def env(self, target: Optional[Path] = None) -> Dict[str, str]:
        env = super().env(target)
        env.update(HOME=str(self.home), PYTHONUSERBASE=str(self.home / ".local"),
                   PYTHONPATH=os.pathsep.join([env["PYTHONPATH"], str(self.pypath)]),
                   # the home and temporary folders in view behind the namespace wall too, so that
                   # these tests prove the write confinement (what the backend cannot see, it cannot
                   # write either: suite/run/namespace.py)
                   ACLNN_CONFORMANCE_BIND=os.pathsep.join([env["ACLNN_CONFORMANCE_BIND"], str(self.home),
                                                           str(self.tmp)]),
                   HOSTILE_TEMP_ROOT=str(self.tmp))
        return env


@pytest.fixture
def sbox(tmp_path) -> Iterator[StartupBox]:
    box = StartupBox(tmp_path)
    yield box
    box.close()


def _popen_hostile(box: StartupBox, backend: str, workers: int, target: Optional[Path] = None):
    import subprocess
    args = box.args(None, workers) + ["--backend", f"tests.hostile_startup:{backend}"]
    return subprocess.Popen(args, cwd=box.root, env=box.env(target), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _run(box: StartupBox, baseline: Path, backend: str, workers: int, target: Optional[Path] = None) -> list:
    """`backend` runs: caught, nothing planted, its writes refused (the spy's notes)."""
    proc = _popen_hostile(box, backend, workers, target)
    out = finish(proc, HANG_S)
    assert box.noted("planted") == [], out[-2000:]
    refused = box.noted("refused")
    assert refused and "Permission denied" in refused[0] and box.noted("attacked") == [], refused
    assert_caught(box, baseline, out, proc.returncode)
    return refused


def _next_run_still_fails(box: StartupBox, baseline: Path, workers: int) -> None:
    (box.reports / "results.json").unlink()
    proc = _popen_hostile(box, "Wrong", workers)
    assert_caught(box, baseline, finish(proc, HANG_S), proc.returncode)


@needs_writes
@WORKERS
def test_a_sitecustomize_in_a_pythonpath_folder_is_refused(sbox, baseline, workers):
    _run(sbox, baseline, "SitecustomizeInPath", workers, sbox.pypath)
    assert os.listdir(sbox.pypath) == []
    _next_run_still_fails(sbox, baseline, workers)


@needs_writes
@WORKERS
def test_a_pth_in_a_user_site_folder_that_does_not_exist_yet_is_refused(sbox, baseline, workers):
    refused = _run(sbox, baseline, "PthInUserSite", workers)
    assert "user site: PermissionError" in refused[0] and not (sbox.home / ".local").exists()
    _next_run_still_fails(sbox, baseline, workers)


@needs_writes
@WORKERS
def test_the_stdlib_can_neither_get_a_new_file_nor_be_opened_for_appending(sbox, baseline, workers):
    refused = _run(sbox, baseline, "StdlibProbe", workers)
    assert "stdlib file: PermissionError" in refused[0] and "stdlib module: PermissionError" in refused[0]


@needs_writes
@WORKERS
def test_the_shell_start_up_files_and_config_are_refused(sbox, baseline, workers):
    refused = _run(sbox, baseline, "ShellStartup", workers)
    assert all(f"{w}: PermissionError" in refused[0] for w in ("bashrc", "profile", "config")), refused
    assert (sbox.home / ".bashrc").read_text() == "# the user's own\n"
    assert sorted(os.listdir(sbox.home)) == [".bashrc", "ascend"]


@needs_writes
@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "n2"])
def test_nothing_is_planted_in_the_temporary_folder_nor_another_process_s_tmpdir_deleted(sbox, baseline, workers):
    refused = _run(sbox, baseline, "SpoilTemp", workers)
    assert "temp root: PermissionError" in refused[0] and f"delete {sbox.decoy.name}: PermissionError" in refused[0]
    assert (sbox.decoy / "work.bin").read_bytes() == b"kept"
    assert not (sbox.tmp / "planted").exists()
