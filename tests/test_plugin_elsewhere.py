"""A kernel team runs the suite from its own repository, against an installed copy (`pip install
--target`, on PYTHONPATH): the documented command runs as written (the entry point loads the suite,
suite/pytest_entry.py), the copy's own case files and goldens serve (or the folder
$ACLNN_CONFORMANCE_HOME names), `-p suite.plugin --pyargs suite.conformance` still works, and another
pytest project in the same environment never sees the plugin. The wheel in a fresh venv, and an
editable install: tests/test_packaging.py."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests import packagekit as kit
from tests.reportkit import ROOT

SLICE = "MseLossBackward-float32-atlas-a2 and 2x3.2x3.2x3-contiguous"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """`pip install --target` of a copy of the package's sources (not this checkout: no build
    folder is left in it), without dependencies (they are this environment's)."""
    tmp = tmp_path_factory.mktemp("install")
    src = kit.copy_sources(tmp / "src")
    site = tmp / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--no-compile", "--target", str(site), str(src)], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        pytest.fail(f"pip install --target failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return site


def _env(site: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ACLNN_CONFORMANCE_HOME"))}
    env.update(PYTHONPATH=str(site), **extra)
    return env


def _run(args, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_suite_runs_from_another_repository_against_an_installed_copy(installed, tmp_path):
    """By the older command (the plugin named, the tests by package), with the copy's own data."""
    repo = tmp_path / "kernels"
    repo.mkdir()
    env = _env(installed)
    where = _run(["-c", "import suite.plugin; print(suite.plugin.__file__)"], repo, env)
    assert where.stdout.strip().startswith(str(installed)), where.stdout + where.stderr
    p = _run(["-m", "pytest", "-p", "suite.plugin", "--pyargs", "suite.conformance", "-q", "-p", "no:cacheprovider",
              "-k", SLICE, "--report-dir=reports"], repo, env)
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "8 passed" in out, out[-3000:]
    assert (repo / "reports" / "results.json").exists()
    # a data folder named that holds none: one line that says how to name it
    p = _run(["-m", "pytest", "-p", "suite.plugin", "--pyargs", "suite.conformance", "-q", "-p", "no:cacheprovider"],
             repo, _env(installed, ACLNN_CONFORMANCE_HOME=str(tmp_path)))
    assert p.returncode == 4 and "no case files:" in p.stderr and "ACLNN_CONFORMANCE_HOME" in p.stderr, p.stderr
    assert "Traceback" not in p.stdout + p.stderr


def test_another_pytest_project_is_unaffected(installed, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    env = _env(installed, ACLNN_CONFORMANCE_HOME=str(ROOT))
    p = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider"], other, env)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout + p.stderr
    assert "aclnn" not in p.stdout + p.stderr
    helptext = _run(["-m", "pytest", "--help", "-p", "no:cacheprovider"], other, env).stdout
    assert "--backend" not in helptext and "aclnn-conformance" not in helptext


def _documented_flow() -> list:
    """The commands docs/running.md's "From your own repository" writes, word for word."""
    import re
    text = (ROOT / "docs" / "running.md").read_text()
    section = text.split("## From your own repository", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    return [line for line in block.strip().splitlines() if line.startswith("pytest ")]


def _pytest_script(tmp_path: Path) -> Path:
    """The `pytest` console script of this interpreter's environment; where it has none (a venv
    made with --system-site-packages finds pytest in the base's site-packages, and the base's
    script would run the base's interpreter), one written as pip writes it: run by path, it puts
    its own folder on sys.path, not the working directory."""
    script = Path(sys.executable).with_name("pytest")
    if script.exists():
        return script
    script = tmp_path / "bin" / "pytest"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom pytest import console_main\n"
                      "sys.exit(console_main())\n")
    script.chmod(0o755)
    return script


def test_the_documented_own_repository_flow_works_verbatim(installed, tmp_path):
    """Exactly as docs/running.md writes it (no environment variable), with the `pytest` script
    (which, unlike `python -m pytest`, does not put the folder on sys.path), the README's backend in
    the team's own folder, and the printed reproducer run as printed: it reruns the failure."""
    commands = _documented_flow()
    assert commands and all("mykernels.backend:Backend" in c for c in commands), commands
    repo, name = kit.own_folder(tmp_path)
    script = _pytest_script(tmp_path)
    env = _env(installed)
    slice_ = ["-k", "float32-atlas-a2-mean and uniform and 2x3", "-p", "no:cacheprovider"]

    def pytest_(args, **kw):
        return subprocess.run([str(script), *args], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=300, **kw)
    for command in commands:
        words = shlex.split(kit.as_named(command, name))[1:]
        (repo / name / "backend.py").write_text(kit.readme_backend(defect=False))
        good = pytest_([*words, *slice_, "-q"])
        assert good.returncode == 0 and " passed" in good.stdout, good.stdout[-3000:] + good.stderr[-2000:]
    (repo / name / "backend.py").write_text(kit.readme_backend(defect=True))
    bad = pytest_([*words, *slice_, "-q"])
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-2000:]
    line = next(s for s in bad.stdout.splitlines() if s.strip().startswith("reproduce: pytest "))
    again = pytest_(shlex.split(line.split("reproduce: ", 1)[1])[1:] + ["-p", "no:cacheprovider"])
    assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout[-3000:] + again.stderr[-2000:]
    first = next(s for s in bad.stdout.splitlines() if "golden " in s)
    assert first in again.stdout


def test_the_cli_without_the_data_folder_says_how_to_name_it(installed, tmp_path):
    p = _run(["-m", "suite.cli", "golden", "check"], tmp_path, _env(installed, ACLNN_CONFORMANCE_HOME=str(tmp_path)))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "ACLNN_CONFORMANCE_HOME" in p.stderr, p.stderr


def test_doctor_finds_the_emulator_sources_in_the_data_folder(installed, tmp_path, monkeypatch):
    """An installed copy has no tests/emulator; the checkout $ACLNN_CONFORMANCE_HOME names has."""
    code = ("from suite.cli import doctor_smoke as d; print(d.emulator_build_script())")
    p = _run(["-c", code], tmp_path, _env(installed, ACLNN_CONFORMANCE_HOME=str(ROOT)))
    assert p.stdout.strip() == str(ROOT / "tests" / "emulator" / "build.py"), p.stdout + p.stderr
    p = _run(["-c", "from suite.cli import doctor_smoke as d; print(d.emulator_builder()[1])"], tmp_path,
             _env(installed, ACLNN_CONFORMANCE_HOME=str(tmp_path)))
    assert "its sources are not here" in p.stdout and "ACLNN_CONFORMANCE_HOME" in p.stdout, p.stdout + p.stderr
