"""A kernel team runs the suite from its own repository, against an installed copy: the plugin is
loaded by name (`-p suite.plugin`), the data folder comes from $ACLNN_CONFORMANCE_HOME, and
another pytest project in the same environment never sees the plugin."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reportkit import ROOT

SLICE = "MseLossBackward-float32-atlas-a2 and 2x3.2x3.2x3-contiguous"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """`pip install --target` of a copy of the package's sources (not this checkout: no build
    folder is left in it), without dependencies (they are this environment's)."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "suite", src / "suite", ignore=shutil.ignore_patterns("__pycache__"))
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
    repo = tmp_path / "kernels"
    repo.mkdir()
    env = _env(installed, ACLNN_CONFORMANCE_HOME=str(ROOT))
    where = _run(["-c", "import suite.plugin; print(suite.plugin.__file__)"], repo, env)
    assert where.stdout.strip().startswith(str(installed)), where.stdout + where.stderr
    p = _run(["-m", "pytest", "-p", "suite.plugin", "--pyargs", "suite.conformance", "-q", "-p", "no:cacheprovider",
              "-k", SLICE, "--report-dir=reports"], repo, env)
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "8 passed" in out, out[-3000:]
    assert (repo / "reports" / "results.json").exists()
    # without the data folder: one line that says how to name it
    p = _run(["-m", "pytest", "-p", "suite.plugin", "--pyargs", "suite.conformance", "-q", "-p", "no:cacheprovider"],
             repo, _env(installed))
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
