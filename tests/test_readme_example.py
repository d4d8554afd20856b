"""The README's backend example is complete: copied out verbatim, it passes the suite's MSE cases
for its product, and a defect planted in it is caught."""
import os
import re
import subprocess
import sys
from pathlib import Path
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parent.parent


def _example() -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"```python\n(# mykernels/backend\.py\n.*?)```", text, re.S)
    assert m, "README.md lost its backend example"
    return m.group(1)


def _run(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    pkg = tmp_path / "mykernels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "backend.py").write_text(source)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]),
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--backend",
         "mykernels.backend:Backend", "--backend-opt", "device=1", "--op", "MseLossBackward", "-k", "2x3"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_S)


def test_readme_backend_passes(tmp_path: Path) -> None:
    r = _run(tmp_path, _example())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert re.search(r"\d+ passed", r.stdout) and " failed" not in r.stdout.splitlines()[-1]


def test_readme_backend_with_a_defect_fails(tmp_path: Path) -> None:
    broken = _example().replace("2.0 / x.size", "2.0 / np.prod(call.out_shape)")
    assert broken != _example()
    r = _run(tmp_path, broken)
    assert r.returncode == 1 and " failed" in r.stdout.splitlines()[-1], r.stdout[-3000:]
