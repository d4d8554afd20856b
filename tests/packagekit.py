"""What the packaging tests share (tests/test_packaging.py, tests/test_plugin_elsewhere.py): a copy of
the package's sources to build or install (not this checkout, where a build leaves build/ and
*.egg-info behind), the README's backend and its command, and a kernel team's own folder holding that
backend under a package name of its own (no installed package can shadow it)."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Dict, List, Tuple

from tests.reportkit import ROOT
from tests.waiting import HANG_S

SOURCES = ("pyproject.toml", "setup.py", "README.md", "conftest.py", "suite", "cases", "golden")
DEFECT = ("2.0 / x.size", "2.0 / np.prod(call.out_shape)")      # a planted mean-reduction bug


def copy_sources(dst: Path) -> Path:
    dst.mkdir(parents=True)
    for name in SOURCES:
        if not (ROOT / name).exists():
            continue
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, dst / name)
    return dst


def readme_backend(defect: bool = False) -> str:
    text = (ROOT / "README.md").read_text()
    src = re.search(r"```python\n(# mykernels/backend\.py\n.*?)```", text, re.S).group(1)
    return src.replace(*DEFECT) if defect else src


def readme_command() -> str:
    """The README's command that runs its backend: the first shell block after the example."""
    text = (ROOT / "README.md").read_text()
    after = text.split("# mykernels/backend.py", 1)[1]
    line = re.search(r"```\n(pytest [^\n]*)\n```", after).group(1)
    assert "mykernels.backend:Backend" in line, line
    return line


def own_folder(parent: Path, defect: bool = False) -> Tuple[Path, str]:
    """A kernel team's folder with the README's backend in a package named uniquely; the name."""
    name = f"mykernels_{uuid.uuid4().hex[:10]}"
    folder = parent / "kernels"
    (folder / name).mkdir(parents=True)
    (folder / name / "__init__.py").write_text("")
    (folder / name / "backend.py").write_text(readme_backend(defect))
    return folder, name


def as_named(command: str, name: str) -> str:
    """A documented command with the README's package name replaced by `name`."""
    return command.replace("mykernels.", f"{name}.")


def clean_env(**extra: str) -> Dict[str, str]:
    """This environment without what points at this checkout or this session's pytest."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "ACLNN_CONFORMANCE_HOME")) and k != "PYTHONPATH"}
    env.update(extra)
    return env


def pip(python: Path, args: List[str]) -> None:
    """`python -m pip ARGS` (quiet, no index, no build isolation: this environment's setuptools)."""
    p = subprocess.run([str(python), "-m", "pip", "-q", "--disable-pip-version-check", *args],
                       capture_output=True, text=True, timeout=HANG_S, env=clean_env())
    assert p.returncode == 0, f"pip {' '.join(args)}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}"


def build_wheel(src: Path, dist: Path) -> Path:
    pip(Path(sys.executable), ["wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)])
    wheels = list(dist.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def venv(where: Path) -> Path:
    """A venv that sees this environment's packages (numpy, pytest ...) but has its own site-packages
    first; its `pytest` script written as pip writes one. Returns its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(where)],
                   check=True, timeout=HANG_S)
    bin_ = where / "bin"
    script = bin_ / "pytest"
    script.write_text(f"#!{bin_ / 'python'}\nimport sys\nfrom pytest import console_main\n"
                      "sys.exit(console_main())\n")
    script.chmod(0o755)
    return bin_


def shell(command: str, cwd: Path, bin_: Path, **env: str) -> subprocess.CompletedProcess:
    """A command line as a user types it, with `bin_` first on PATH."""
    home = Path(cwd).parent / "home"          # a new user's: an empty HOME and golden cache
    home.mkdir(exist_ok=True)
    e = clean_env(PATH=f"{bin_}{os.pathsep}{os.environ.get('PATH', '')}", HOME=str(home),
                  XDG_CACHE_HOME=str(home / ".cache"), ACLNN_CONFORMANCE_CACHE=str(home / "golden-cache"), **env)
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=e, capture_output=True, text=True,
                          timeout=HANG_S)


def reproducer(output: str, marker: str) -> str:
    """The first command printed after `marker` (a failure's `reproduce:`, the doctor's `fix: ...:`)."""
    line = next(s for s in output.splitlines() if marker in s)
    command = line.split(marker, 1)[1].strip()
    shlex.split(command)                       # a valid shell line
    return command
