"""The suite as a kernel team installs it (issue 42, items 10 and 17): a built wheel carries the case
files and goldens, and the README's command runs as written from the team's own folder, with no
environment variable, against the wheel installed in a fresh venv and against an editable install;
so do the commands a failure and `aclnn-conform doctor` print."""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from tests import packagekit as kit
from tests.reportkit import ROOT

SLICE = ' -k "float32-atlas-a2-mean and uniform and 2x3" -p no:cacheprovider'


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    return kit.copy_sources(tmp_path_factory.mktemp("pkg") / "src")


@pytest.fixture(scope="module")
def wheel(sources, tmp_path_factory) -> Path:
    return kit.build_wheel(sources, tmp_path_factory.mktemp("dist"))


@pytest.mark.parametrize("args,asked", [
    (["--backend", "x", "-k", "y"], ["--backend"]), (["--op=MseLoss", "--backend=x"], ["--backend", "--op"]),
    (["--backend-opt", "a=b", "--opx"], []), (["-k", "x", "--", "--backend"], []), ([], []),
])
def test_the_entry_point_is_asked_for_the_suite_by_backend_or_op_only(args, asked):
    from suite import pytest_entry
    assert pytest_entry.named(args) == asked


def test_the_wheel_carries_every_case_file_and_golden(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for top in ("cases", "golden"):
        files = [p for p in (ROOT / top).rglob("*") if p.is_file()]
        assert files
        missing = [str(p.relative_to(ROOT)) for p in files
                   if f"suite/data/{p.relative_to(ROOT).as_posix()}" not in names]
        assert not missing, missing[:5]
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry).decode()
    assert "[pytest11]" in text and "suite.pytest_entry" in text, text


@pytest.fixture(scope="module")
def wheel_venv(wheel, tmp_path_factory):
    """A fresh venv with the built wheel installed: its bin folder, and where the suite must be."""
    where = tmp_path_factory.mktemp("venv-wheel") / "venv"
    bin_ = kit.venv(where)
    kit.pip(bin_ / "python", ["install", "--no-deps", "--no-index", str(wheel)])
    return bin_, where


@pytest.fixture(scope="module")
def editable_venv(sources, tmp_path_factory):
    """A fresh venv with an editable install of the sources (`pip install -e`)."""
    bin_ = kit.venv(tmp_path_factory.mktemp("venv-editable") / "venv")
    kit.pip(bin_ / "python", ["install", "--no-deps", "--no-build-isolation", "-e", str(sources)])
    return bin_, sources


@pytest.fixture(params=["wheel", "editable"])
def installed(request):
    return request.getfixturevalue(f"{request.param}_venv")


def test_the_readme_flow_runs_verbatim_from_the_teams_own_folder(installed, tmp_path):
    bin_, expected = installed
    folder, name = kit.own_folder(tmp_path)
    where = kit.shell("python -c 'import suite; print(suite.__file__)'", folder, bin_)
    assert where.stdout.strip().startswith(str(expected)), where.stdout + where.stderr   # not this checkout
    command = kit.as_named(kit.readme_command(), name)
    good = kit.shell(command + SLICE, folder, bin_)
    assert good.returncode == 0 and re.search(r"\d+ passed", good.stdout.splitlines()[-1]), \
        good.stdout[-3000:] + good.stderr[-2000:]
    # the planted defect fails, and the reproducer printed reruns it as printed
    (folder / name / "backend.py").write_text(kit.readme_backend(defect=True))
    bad = kit.shell(command + SLICE + " -q", folder, bin_)
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-2000:]
    again = kit.shell(kit.reproducer(bad.stdout, "reproduce: ") + " -p no:cacheprovider", folder, bin_)
    assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout[-3000:] + again.stderr[-2000:]


def test_the_doctors_command_runs_as_printed_from_the_teams_own_folder(wheel_venv, tmp_path):
    """From the wheel (an editable install's doctor is the checkout's: tests/test_cli_doctor.py)."""
    bin_, _ = wheel_venv
    folder, name = kit.own_folder(tmp_path)      # the README's backend computes one operator only
    doctor = kit.shell(f"aclnn-conform doctor --backend {name}.backend:Backend", folder, bin_)
    assert doctor.returncode == 1, doctor.stdout[-3000:] + doctor.stderr[-2000:]
    command = kit.reproducer(doctor.stdout, "fix: see the whole message: ")
    assert command.startswith("pytest ") and "NotImplementedError" in doctor.stdout, doctor.stdout[-3000:]
    again = kit.shell(command + " -p no:cacheprovider", folder, bin_)
    assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout[-3000:] + again.stderr[-2000:]


def test_a_plain_pytest_project_beside_the_installed_suite_is_unaffected(installed, tmp_path):
    """The entry point loads nothing into a run that does not ask for the suite, and leaves a
    project whose conftest.py defines its own --backend with it."""
    bin_, _ = installed
    other = tmp_path / "other"
    other.mkdir()
    (other / "test_plain.py").write_text("def test_plain(request):\n    assert request.config.getoption('backend') == 'x'\n")
    (other / "conftest.py").write_text("def pytest_addoption(parser):\n    parser.addoption('--backend')\n")
    p = kit.shell("pytest -q -p no:cacheprovider --backend x", other, bin_)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]
    assert "aclnn" not in p.stdout + p.stderr
    # one that defines another of the suite's options, asked for the suite: one line naming it
    (other / "conftest.py").write_text("def pytest_addoption(parser):\n    parser.addoption('--report-dir')\n")
    p = kit.shell("pytest -q -p no:cacheprovider --op MseLoss", other, bin_)
    assert p.returncode == 4 and p.stdout == "", p.stdout[-3000:] + p.stderr[-2000:]
    assert p.stderr.startswith("ERROR: aclnn-conformance: argument --report-dir: conflicting option") \
        and len(p.stderr.strip().splitlines()) == 1, p.stderr
    (other / "conftest.py").unlink()
    (other / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    helptext = kit.shell("pytest --help -p no:cacheprovider", other, bin_).stdout
    assert "--backend" not in helptext and "aclnn-conformance" not in helptext
    p = kit.shell("pytest -q -p no:cacheprovider", other, bin_)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout + p.stderr
