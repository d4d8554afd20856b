"""A user's case file needs no separate step (issue 42, item 2): `pytest --cases=my.yaml` computes the
goldens the golden folder lacks as the run needs them, trusting a cached one only by the sha256s this
process kept (the key a backend cannot write), while the suite's own cases still need their
committed goldens; and `golden generate --cases=my.yaml` in a fresh clone leaves `git status` clean."""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from suite.cases.inputs import draw_inputs
from suite.cases.load import load_cases
from suite.golden import build as golden_build
from suite.golden import where
from suite.golden.source import GoldenError, compute_all
from suite.golden.store import GoldenStore
from tests.core_helpers import MSE_TINY, suite_folder, write
from tests.waiting import HANG_S
from tests.test_golden_integrity import LARGE

ROOT = Path(__file__).resolve().parents[1]
pytest_plugins = ["pytester"]

# A new user's case file: a few small cases of one operator, and data no committed case has.
MINE = """
op: MseLoss
cases:
  - {product: atlas-a2, dtypes: float32, reduction: mean, shapes: [3x5, 3x5]}
  - {product: atlas-a2, dtypes: float16, reduction: none, shapes: [7x3, 1x3]}
"""


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                          capture_output=True, text=True, check=True).stdout


def _clone(tmp_path: Path) -> Path:
    """A fresh clone of this checkout, with its uncommitted changes committed on top (so the clone
    runs the code under test): the suite pointed at it by cwd and PYTHONPATH."""
    clone = tmp_path / "clone"
    _git("clone", "-q", str(ROOT), str(clone), cwd=tmp_path)
    for line in _git("status", "--porcelain", "--untracked-files=all", cwd=ROOT).splitlines():
        rel = line[3:].split(" -> ")[-1]
        src, dst = ROOT / rel, clone / rel
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        elif dst.exists():
            dst.unlink()
    _git("add", "-A", cwd=clone)
    if _git("status", "--porcelain", cwd=clone):
        _git("commit", "-q", "-m", "the working tree under test", cwd=clone)
    return clone


def test_a_new_users_case_file_runs_from_a_fresh_clone_with_no_other_step(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    (tmp_path / "team").mkdir()
    mine = write(tmp_path / "team", "my.yaml", MINE)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ACLNN_CONFORMANCE_HOME", "PYTEST_ADDOPTS")}
    # the clone's code and data (not this checkout's, which the editable install would give), a new
    # user's empty HOME and golden cache
    env.update(PYTHONPATH=str(clone), ACLNN_CONFORMANCE_HOME=str(clone), HOME=str(home),
               ACLNN_CONFORMANCE_CACHE=str(tmp_path / "cache"), XDG_CACHE_HOME=str(home / ".cache"))
    run = subprocess.run
    r = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "suite/conformance",
             f"--cases={mine}", "--backend", "reference", "--op", "MseLoss", "--report-dir", str(tmp_path / "r")],
            cwd=clone, env=env, capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0 and r.stdout.splitlines()[-1].startswith("2 passed"), \
        r.stdout[-3000:] + r.stderr[-2000:]
    r = run([sys.executable, "-m", "suite.cli", "golden", "generate", f"--cases={mine}"], cwd=clone, env=env,
            capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0 and "0 removed" in r.stdout, r.stdout + r.stderr
    assert _git("status", "--porcelain", "--untracked-files=all", cwd=clone) == ""
    assert (tmp_path / "team" / "my.golden" / "manifest.json").exists()
    assert not list((tmp_path / "cache").rglob("meta.json"))     # the backend in its own process: no cache


@pytest.fixture
def folder(tmp_path: Path, monkeypatch):
    """A data folder whose cases/ holds one file with goldens, and a user's file beside it."""
    data = tmp_path / "home"
    (data / "cases").mkdir(parents=True)
    write(data / "cases", "mse.yaml", MSE_TINY)
    monkeypatch.setenv("ACLNN_CONFORMANCE_HOME", str(data))
    golden_build.generate(load_cases([data / "cases"])[0], data / "golden")
    own = [c for c in load_cases([data / "cases"])[0] if c.expect == 0]
    mine = [c for c in load_cases([write(tmp_path, "my.yaml", MINE)])[0] if c.expect == 0]
    return data, own, mine


def _same(a, b) -> None:
    for name in ("out", "scale", "path"):
        np.testing.assert_array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name)))


def test_a_users_case_the_manifest_lacks_is_computed_and_an_own_one_is_an_error(folder) -> None:
    data, own, mine = folder
    store = GoldenStore(data / "golden", on_demand=where.computed)
    for case in mine:
        got = store.load(case)
        want, _ = compute_all(case, draw_inputs(case))
        _same(got.golden.golden, want)
        for n, a in draw_inputs(case).items():
            np.testing.assert_array_equal(got.inputs[n], a)
            np.testing.assert_array_equal(store.inputs(case)[n], a)
    missing = dataclasses.replace(own[0], datakey="NoSuchCase")
    with pytest.raises(GoldenError, match="^no golden for NoSuchCase; run `aclnn-conform golden generate`$"):
        store.load(missing)
    stale = dataclasses.replace(own[0], values="hazards")       # another spec, same datakey
    with pytest.raises(GoldenError, match="is stale"):
        store.load(stale)


def test_a_users_stale_entry_is_computed_again_and_a_current_one_read_from_its_bundle(folder, tmp_path) -> None:
    data, own, mine = folder
    golden_build.generate(mine, tmp_path / "mine")
    store = GoldenStore(tmp_path / "mine", on_demand=where.computed)
    entry = store.entry(mine[0])
    assert "file" in entry and not entry.get("computed")
    changed = dataclasses.replace(mine[0], values="hazards")
    assert store.entry(changed).get("computed") and "file" not in store.entry(changed)
    bundle = tmp_path / "mine" / entry["file"]
    data = bytearray(bundle.read_bytes())
    data[-30] ^= 1
    bundle.write_bytes(bytes(data))                      # a rewritten bundle is an error, not recomputed
    with pytest.raises(GoldenError, match="corrupted"):
        store.load(mine[0])


def test_with_no_manifest_a_users_cases_are_computed_and_with_a_broken_one_they_fail(folder, tmp_path) -> None:
    data, own, mine = folder
    none = GoldenStore(tmp_path / "nothing", on_demand=where.computed)
    assert none.load(mine[0]).golden.nterms >= 1
    with pytest.raises(GoldenError, match="no golden manifest"):
        none.load(own[0])
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "manifest.json").write_text("{}")
    with pytest.raises(GoldenError, match="not a golden manifest"):
        GoldenStore(tmp_path / "broken", on_demand=where.computed).load(mine[0])


def test_a_store_computes_nothing_on_demand_unless_told(folder) -> None:
    data, own, mine = folder
    with pytest.raises(GoldenError, match=f"^no golden for {mine[0].datakey}; run"):
        GoldenStore(data / "golden").load(mine[0])


def test_a_wrong_kernel_that_poisons_the_cache_of_an_on_demand_golden_fails_in_this_run_and_the_next(
        pytester: pytest.Pytester, monkeypatch) -> None:
    """The large case of tests/test_golden_integrity.py with no golden folder at all: computed on
    demand in pytest's process (--isolation none, so it is cached) and rewritten in the cache by
    the backend; the run judges only by what it wrote itself, in this run and the next."""
    p = suite_folder(pytester, monkeypatch, ROOT, {"kl.yaml": LARGE})
    shutil.rmtree(p.path / "golden")
    cache = p.path / "cache"
    args = ("-p", "suite.plugin", "-p", "no:cacheprovider", "-p", "no:benchmark", "--cases=cases",
            f"--golden-dir={p.path / 'golden'}", f"--golden-cache={cache}", "--backend",
            "tests.test_golden_integrity:CachePoisoner", "--backend-opt", f"cache={cache}",
            "--isolation", "none", "test_numerics.py")
    for _ in range(2):
        r = p.runpytest(*args)
        r.assert_outcomes(failed=2)
        assert list(cache.rglob("meta.json")), "the on-demand golden was not cached"
        assert "no golden" not in r.stdout.str()
