"""Goldens checked in full (issue 20, item 2): a backend (which runs in a process of its own and may
write any file) that rewrites a cached golden, or a committed bundle together with the manifest,
must not make a wrong kernel pass, in the same run or in the next; `golden check` names what was
tampered with; `golden generate` gives the committed bytes on any machine and cache state."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np
import pytest

from suite.golden import bundle as golden_bundle
from suite.golden import source as golden_source
from suite.golden import build as golden_build
from suite.golden import cache as golden_cache
from suite.backends.reference import ReferenceBackend
from suite.cases.model import Case
from suite.cases.load import load_cases
from suite.contract import OpCall
from suite.ops.base import Golden
from suite.golden.cache import GoldenCache
from suite.golden.manifest import read_manifest
from suite.common import jsonfile
from suite.golden.store import GoldenStore
from suite.golden import store as golden_store
from tests.core_helpers import generated, rewrite_bundle as _rewrite_bundle, suite_folder, ulps as _ulps, write

ROOT = Path(__file__).resolve().parents[1]
pytest_plugins = ["pytester"]

# A large case (fingerprinted, computed on demand, cached): a sum of 3001 terms per element.
LARGE = """
op: KlDivBackward
cases:
  - {product: atlas-a2, dtypes: float16, reduction: mean, logTarget: true, shapes: [16, 16, 3001x16]}
  - {product: atlas-a3, dtypes: float16, reduction: mean, logTarget: true, shapes: [16, 16, 3001x16]}
"""

# Small cases (committed in bundles): an elementwise one with 6 elements, and a sum of 50 terms
# into 3 elements (nterms > out.size: the two drift limits a mutant could confuse differ).
SMALL = """
op: KlDivBackward
cases:
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2x3, 2x3, 2x3]}
  - {product: atlas-a2, dtypes: float32, reduction: sum, shapes: [50x3, 3, 50x3]}
"""


@pytest.fixture
def large(tmp_path: Path):
    return generated(tmp_path, LARGE)


@pytest.fixture
def small(tmp_path: Path):
    cases = load_cases([write(tmp_path, "small.yaml", SMALL)])[0]
    root = tmp_path / "golden"
    golden_build.generate(cases, root)
    assert golden_build.check(cases, root) == []
    return cases, root


def _copy(g: Golden) -> Golden:
    return Golden(out=np.array(g.out), scale=np.array(g.scale), nterms=g.nterms, path=np.array(g.path))


def _poisoned(g: Golden) -> Golden:
    """The attack: the same golden, with every tolerance window widened past any error."""
    return Golden(out=g.out, scale=np.asarray(g.scale) * 1e30, nterms=g.nterms, path=np.asarray(g.path) * 1e30)


# -- the golden cache ----------------------------------------------------------------------------
def test_a_cache_entry_poisoned_after_its_first_load_is_not_used_later_in_the_run(large, tmp_path: Path) -> None:
    cases, root = large
    store = GoldenStore(root, cache=GoldenCache(tmp_path / "cache"))
    good = _copy(store.load(cases[0]).golden.golden)
    assert good.nterms == 3001 and np.all(good.scale > 0)
    store.cache.put(cases[0], _poisoned(good))            # consistent sha256s in its meta.json
    for case in cases:                                     # the same data: atlas-a2, then atlas-a3
        got = store.load(case).golden.golden
        assert np.array_equal(got.scale, good.scale) and np.array_equal(got.path, good.path)
        assert np.array_equal(got.out, good.out)


def test_a_cache_entry_poisoned_before_the_run_is_not_used(large, tmp_path: Path) -> None:
    cases, root = large
    cache = GoldenCache(tmp_path / "cache")
    good = _copy(GoldenStore(root, cache=cache).load(cases[0]).golden.golden)
    cache.put(cases[0], _poisoned(good))
    got = GoldenStore(root, cache=cache).load(cases[0]).golden.golden      # the next run
    assert np.array_equal(got.scale, good.scale) and np.array_equal(got.path, good.path)
    again = cache.get(cases[0])                          # and the entry is repaired
    assert again is not None and np.array_equal(again.scale, good.scale)


def test_a_cache_file_whose_bytes_differ_from_its_meta_is_a_miss(large, tmp_path: Path) -> None:
    """The sha256 each entry keeps of its files is checked on read (one flipped bit of a float,
    still a valid .npy, is no entry)."""
    cases, root = large
    cache = GoldenCache(tmp_path / "cache")
    GoldenStore(root, cache=cache).load(cases[0])
    assert cache.get(cases[0]) is not None
    scale = next((tmp_path / "cache").rglob("scale.npy"))
    data = bytearray(scale.read_bytes())
    data[-3] ^= 0x40                                     # an exponent bit of the last element
    scale.write_bytes(bytes(data))
    assert np.load(scale, allow_pickle=False).shape == (16,)
    assert cache.get(cases[0]) is None


# -- the data kept for a case's next tests (GoldenStore.reuse) ---------------------------------------
TWO_LARGE = LARGE + """  - {product: atlas-a2, dtypes: float16, reduction: mean, logTarget: true, shapes: [16, 16, 3002x16]}
"""


def _arrays_of(data) -> List[np.ndarray]:
    g = data.golden.golden
    return [*data.inputs.values(), g.out, g.scale, g.path]


def test_reuse_gives_the_next_test_of_the_same_data_the_same_read_only_arrays(large, monkeypatch) -> None:
    cases, root = large
    assert cases[0].datakey == cases[1].datakey and cases[0].product != cases[1].product
    computed = []
    real = golden_source.compute_all
    monkeypatch.setattr("suite.golden.store.compute_all", lambda c, i: computed.append(c.id) or real(c, i))
    store = GoldenStore(root, reuse=True)
    first = store.load(cases[0])
    assert store.load(cases[1]) is first and store.inputs(cases[1]) is first.inputs
    assert computed == [cases[0].id]                    # drawn and computed once for both
    arrays = _arrays_of(first)
    assert arrays and not any(a.flags.writeable for a in arrays)
    with pytest.raises(ValueError):
        first.inputs["self"][0] = 0                      # nothing can change them for the next test


def test_reuse_keeps_the_inputs_a_determinism_test_drew_for_the_next_tests_of_that_data(large, monkeypatch) -> None:
    """The determinism tests ask only for inputs: the next test of the same data gets them (read-only),
    and a numbers test after them computes its golden from those same arrays, drawing nothing."""
    cases, root = large
    drawn = []
    real = golden_store.draw_inputs
    monkeypatch.setattr("suite.golden.store.draw_inputs", lambda c: drawn.append(c.id) or real(c))
    store = GoldenStore(root, reuse=True)
    first = store.inputs(cases[0])
    assert store.inputs(cases[1]) is first and not any(a.flags.writeable for a in first.values())
    data = store.load(cases[1])
    assert data.inputs is first and drawn == [cases[0].id]
    assert store.load(cases[0]) is data and store.inputs(cases[0]) is first


def test_without_reuse_each_test_gets_its_own_arrays(large) -> None:
    """Where backend code runs in pytest's process (--isolation none) it could write into what it
    is given: each test draws its own inputs there, equal to the first's."""
    cases, root = large
    store = GoldenStore(root)
    a, b = store.load(cases[0]), store.load(cases[1])
    assert b is not a
    for n in a.inputs:
        assert a.inputs[n] is not b.inputs[n] and not np.shares_memory(a.inputs[n], b.inputs[n])
        np.testing.assert_array_equal(a.inputs[n], b.inputs[n])
    np.testing.assert_array_equal(a.golden.golden.out, b.golden.golden.out)


def test_reuse_keeps_only_the_last_case_data(tmp_path: Path) -> None:
    import gc
    import weakref
    cases, root = generated(tmp_path, TWO_LARGE)
    assert len({c.datakey for c in cases}) == 2
    store = GoldenStore(root, reuse=True)
    held = weakref.ref(store.load(cases[0]).inputs["self"])
    other = store.load(cases[2])
    gc.collect()
    assert held() is None, "the first case's arrays are still held beside the second's"
    again = store.load(cases[0])                         # drawn again, the same values
    assert again is not other
    np.testing.assert_array_equal(again.inputs["target"], store.inputs(cases[1])["target"])


class CachePoisoner(ReferenceBackend):
    """A wrong kernel (every result 1.5 times the right one) that, from run(), rewrites the cached
    golden of the case it is given with tolerance windows wide enough to pass anything."""
    name = "cache-poisoner"

    def __init__(self, cache: str = "") -> None:
        super().__init__()
        self.cache = GoldenCache(Path(cache))

    def run(self, call: OpCall) -> np.ndarray:
        for entry in Path(self.cache.root).rglob("meta.json"):
            d = entry.parent
            files = json.loads(entry.read_text())["files"]
            arrays = {n: np.load(d / n, allow_pickle=False) for n in files}
            meta = json.loads(entry.read_text())
            bad = {"out.npy": arrays["out.npy"], "scale.npy": arrays["scale.npy"] * 1e30,
                   "path.npy": arrays["path.npy"] * 1e30}
            data = {n: golden_bundle._npy(a) for n, a in bad.items()}
            for n, b in data.items():
                (d / n).write_bytes(b)
            meta["files"] = {n: golden_bundle._sha256(b) for n, b in data.items()}
            entry.write_text(json.dumps(meta))
        out = super().run(call)
        return (out.astype(np.float64) * 1.5).astype(out.dtype)


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_a_wrong_kernel_that_poisons_the_cache_fails_in_this_run_and_the_next(
        pytester: pytest.Pytester, monkeypatch, isolation: str) -> None:
    p = suite_folder(pytester, monkeypatch, ROOT, {"kl.yaml": LARGE})
    cache = p.path / "cache"
    args = ("-p", "suite.plugin", "-p", "no:cacheprovider", "-p", "no:benchmark", "--cases=cases",
            "--golden-dir=golden", f"--golden-cache={cache}", "--backend",
            "tests.test_golden_integrity:CachePoisoner", "--backend-opt", f"cache={cache}",
            "--isolation", isolation, "test_numerics.py")
    first = p.runpytest(*args)
    first.assert_outcomes(failed=2)                        # atlas-a3 loads after the poisoning
    # With the backend in its own process the run keeps a case's data in memory for its next
    # tests and writes no cache; in pytest's process it uses the cache (and trusts only what it wrote).
    assert bool(list(cache.rglob("meta.json"))) == (isolation == "none")
    second = p.runpytest(*args)                            # the next run finds the poisoned entry
    second.assert_outcomes(failed=2)


# -- committed bundles ---------------------------------------------------------------------------
def _scaled(name: str, factor: float) -> Callable[[Dict[str, np.ndarray]], None]:
    def edit(m: Dict[str, np.ndarray]) -> None:
        m[name] = m.get(name, np.abs(m["out"])) * factor
    return edit


@pytest.mark.parametrize("edit,says", [
    (_scaled("scale", 1e30), "scale"),
    (_scaled("path", 1e30), "path"),
    (_scaled("scale", 2.0), "scale"),
    (lambda m: m.__setitem__("out", m["out"] * 1.5), "recomputed result"),
    (lambda m: m.__setitem__("nterms", np.array(1, dtype=np.int64)), "number of terms"),
])
def test_golden_check_names_a_rewritten_bundle(small, edit, says: str) -> None:
    cases, root = small
    case = next(c for c in cases if "50x3" in c.id)
    _rewrite_bundle(root, case, edit)
    problems = golden_build.check(cases, root)
    assert len(problems) == 1 and case.datakey in problems[0] and says in problems[0], problems


def test_the_drift_limit_follows_the_number_of_terms_not_the_elements(small) -> None:
    """6 ulps is past the limit of one term (4) but within that of 6 elements (4 sqrt 6); 10 ulps
    is within the limit of 50 terms (4 sqrt 50) but past that of 3 elements (4 sqrt 3)."""
    cases, root = small
    one = next(c for c in cases if "2x3" in c.id and "50x3" not in c.id)
    _rewrite_bundle(root, one, lambda m: m.__setitem__("out", _ulps(m["out"], 6)))
    problems = golden_build.check(cases, root)
    assert len(problems) == 1 and one.datakey in problems[0] and "6.0 float64 ulps (limit 4)" in problems[0]
    golden_build.generate(cases, root, fresh=True)
    assert golden_build.check(cases, root) == []
    fifty = next(c for c in cases if "50x3" in c.id)
    _rewrite_bundle(root, fifty, lambda m: m.__setitem__("out", _ulps(m["out"], 10)))
    assert golden_build.check(cases, root) == []


def test_golden_check_recomputes_a_large_cases_scale_and_path(large) -> None:
    """The manifest's fingerprint holds scale and path too, and `check` compares them."""
    cases, root = large
    for field in ("scale_sum", "path_sum"):
        m = json.loads((root / "manifest.json").read_text())
        e = m["cases"][cases[0].datakey]
        e[field] = (float.fromhex(e[field]) * 2).hex()
        (root / "manifest.json").write_text(json.dumps(m))
        problems = golden_build.check(cases, root)
        assert len(problems) == 1 and cases[0].datakey in problems[0] and field.split("_")[0] in problems[0], problems
        golden_build.generate(cases, root, fresh=True)
    m = json.loads((root / "manifest.json").read_text())
    e = m["cases"][cases[0].datakey]
    e["samples"][1][2] = (float.fromhex(e["samples"][1][2]) * 1e30).hex()     # a sampled scale
    (root / "manifest.json").write_text(json.dumps(m))
    problems = golden_build.check(cases, root)
    assert len(problems) == 1 and "scale" in problems[0], problems


def test_the_run_uses_the_manifest_read_before_the_backend_started(small, tmp_path: Path) -> None:
    """The store keeps the manifest it read: a bundle rewritten later, with a manifest that agrees
    with it, is refused as corrupted, and manifest_hash is that of what was read."""
    cases, root = small
    store = GoldenStore(root)
    before = store.manifest_hash()
    case = next(c for c in cases if "50x3" in c.id)
    _rewrite_bundle(root, case, _scaled("scale", 1e30))
    with pytest.raises(golden_source.GoldenError, match="is missing|corrupted"):   # (renamed, or in place)
        store.load(case)
    assert store.manifest_hash() == before


class BundlePoisoner(ReferenceBackend):
    """A wrong kernel (every result 1.5 times the right one) that, as it starts, rewrites every
    committed golden with windows wide enough to pass anything, and the manifest to agree."""
    name = "bundle-poisoner"

    def __init__(self, golden: str = "") -> None:
        super().__init__()
        root = Path(golden)
        m = json.loads((root / "manifest.json").read_text())
        for key, e in m["cases"].items():
            if "file" in e:
                case = type("C", (), {"datakey": key})()
                _rewrite_bundle(root, case, _scaled("scale", 1e30))

    def run(self, call: OpCall) -> np.ndarray:
        out = super().run(call)
        return (out.astype(np.float64) * 1.5).astype(out.dtype)


def test_a_wrong_kernel_that_rewrites_the_committed_goldens_as_it_starts_fails(
        pytester: pytest.Pytester, monkeypatch) -> None:
    """The run reads the manifest before the backend's process starts, and checks every bundle it
    opens against it (the next run is the gate's: its manifest_hash differs from the baseline's)."""
    p = suite_folder(pytester, monkeypatch, ROOT, {"kl.yaml": SMALL})
    r = p.runpytest("-p", "suite.plugin", "-p", "no:cacheprovider", "-p", "no:benchmark", "--cases=cases",
                    "--golden-dir=golden", "--golden-cache=none", "--backend",
                    "tests.test_golden_integrity:BundlePoisoner", "--backend-opt", f"golden={p.path / 'golden'}",
                    "--confine=off",      # confined, its writes are refused (tests/test_confine.py): the check is the subject here
                    "test_numerics.py", f"--report-dir={p.path / 'rep'}")
    r.assert_outcomes(failed=2)
    doc = json.loads((p.path / "rep" / "results.json").read_text())
    assert golden_build.check(load_cases([p.path / "cases"])[0], p.path / "golden") != []       # it did rewrite them
    assert doc["manifest_hash"] != GoldenStore(p.path / "golden").manifest_hash()      # the one read first


LARGE_DRIFT = """
op: KlDivBackward
cases:
  - {product: atlas-a2, dtypes: float16, reduction: mean, logTarget: true, shapes: [16, 16, 3001x16]}
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [20000, 20000, 20000]}
"""


def test_a_large_cases_drift_limit_follows_the_number_of_terms(tmp_path: Path) -> None:
    """100 ulps is within the limit of 3001 terms (219) but past that of 16 elements (16); 6 ulps
    is past the limit of one term (4) but within that of 20000 elements (566)."""
    cases = load_cases([write(tmp_path, "d.yaml", LARGE_DRIFT)])[0]
    root = tmp_path / "golden"
    golden_build.generate(cases, root)

    def moved(case: Case, k: float) -> List[str]:
        m = json.loads((root / "manifest.json").read_text())
        x = m["cases"][case.datakey]["samples"][1]
        ref = max(abs(float.fromhex(x[1])), float.fromhex(x[2]))
        x[1] = (float.fromhex(x[1]) + k * np.spacing(ref)).hex()
        (root / "manifest.json").write_text(json.dumps(m))
        problems = golden_build.check(cases, root)
        golden_build.generate(cases, root, fresh=True)
        return problems

    sum_case, one = (c for c in cases)
    assert moved(sum_case, 100) == []
    assert moved(one, 6) == [f"drifted golden {one.datakey}: recomputed result differs by 6.0 float64 ulps (limit 4)"]


# -- regeneration --------------------------------------------------------------------------------
def test_generate_keeps_committed_bundles_that_agree_within_the_drift_limit(small) -> None:
    """Another machine's float64 exp or sum may differ in the last bits: the committed bytes stay."""
    cases, root = small
    fifty = next(c for c in cases if "50x3" in c.id)
    _rewrite_bundle(root, fifty, lambda m: m.__setitem__("out", _ulps(m["out"], 3)))
    before = {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    stats = golden_build.generate(cases, root)
    assert stats["written"] == 0 and {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    _rewrite_bundle(root, fifty, lambda m: m.__setitem__("out", _ulps(m["out"], 1e6)))   # past it: rewritten
    assert golden_build.generate(cases, root)["written"] == 1 and golden_build.check(cases, root) == []


def test_generate_in_a_fresh_clone_with_an_empty_cache_leaves_git_clean(tmp_path: Path) -> None:
    """The CLI pointed at a clone (not at this checkout), with an empty cache and HOME."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), ACLNN_CONFORMANCE_HOME=str(clone),
               ACLNN_CONFORMANCE_CACHE=str(cache), XDG_CACHE_HOME=str(home / ".cache"))
    r = subprocess.run([sys.executable, "-m", "suite.cli", "golden", "generate"], cwd=tmp_path, env=env,
                       capture_output=True, text=True)                  # this checkout's code, the clone's data
    assert r.returncode == 0 and "goldens:" in r.stdout, r.stderr
    status = subprocess.run(["git", "-C", str(clone), "status", "--porcelain"], capture_output=True,
                            text=True, check=True).stdout
    assert status == "", status


# -- GoldenCache.read field by field, and _drift's input checks (mutation survivors, issue 20 item 10)
def _sha(data: bytes) -> str:
    import hashlib
    return hashlib.sha256(data).hexdigest()


def test_a_cache_entry_reads_back_every_field_and_the_shas_it_was_checked_against(large, tmp_path: Path) -> None:
    cases, _ = large
    cache = GoldenCache(tmp_path / "cache")
    out = np.array([1.0, -2.0, 3.0])
    summed = Golden(out=out, scale=np.array([5.0, 6.0, 7.0]), nterms=2, path=np.array([8.0, 9.0, 10.0]))
    written = cache.put(cases[0], summed)
    got, shas = cache.read(cases[0])
    assert shas == written == {n: _sha(cache.files(summed)[n]) for n in ("out.npy", "scale.npy", "path.npy")}
    assert got.nterms == 2 and np.array_equal(got.out, out)
    assert np.array_equal(got.scale, summed.scale) and np.array_equal(got.path, summed.path)
    flat = Golden(out=out, scale=np.abs(out))                  # elementwise: out.npy alone
    assert set(cache.put(cases[1], flat)) == {"out.npy"}
    got, _ = cache.read(cases[1])
    assert got.nterms == 1 and np.array_equal(got.scale, np.abs(out)) and np.array_equal(got.path, np.abs(out))


def _rewrite(cache: GoldenCache, case: Case, files: Dict[str, bytes], nterms: int) -> None:
    """An entry with consistent sha256s (what a rewrite of the cache can make)."""
    d = cache._dir(case)
    for f in d.iterdir():
        f.unlink()
    for name, data in files.items():
        (d / name).write_bytes(data)
    (d / "meta.json").write_text(json.dumps({"spec": golden_source.spec_hash(case), "nterms": nterms,
                                             "files": {n: _sha(b) for n, b in files.items()}}))


def test_a_cache_entry_of_a_sum_without_path_or_with_a_pickle_is_no_entry(large, tmp_path: Path) -> None:
    import io
    cases, _ = large
    cache = GoldenCache(tmp_path / "cache")
    g = Golden(out=np.ones(3), scale=np.ones(3), nterms=2, path=np.ones(3))
    cache.put(cases[0], g)
    files = cache.files(g)
    _rewrite(cache, cases[0], {k: v for k, v in files.items() if k != "path.npy"}, 2)
    assert cache.read(cases[0]) is None                       # a sum's window needs its path
    buf = io.BytesIO()
    np.save(buf, np.array([1.0, 2.0, 3.0], dtype=object), allow_pickle=True)   # numbers, as objects
    _rewrite(cache, cases[0], {"out.npy": buf.getvalue()}, 1)
    assert cache.read(cases[0]) is None                       # never unpickled


def test_stored_inputs_that_differ_from_the_draw_are_stale(small) -> None:
    cases, root = small
    case = cases[0]
    key = case.datakey
    stored = GoldenStore(root).load(case)
    assert golden_build._drift(key, case, stored) == []
    name = next(iter(stored.inputs))
    missing = dict(stored.inputs)
    del missing[name]
    other = dict(stored.inputs, **{name: stored.inputs[name].view(np.int32)})   # the same bits, another dtype
    for inputs in (missing, other):
        bad = golden_source.CaseData(inputs, stored.golden)
        assert golden_build._drift(key, case, bad) == [f"stale golden {key}: input {name} differs from what the generator draws now"]


def test_compare_goldens_checks_the_shape_of_every_array_judging_reads() -> None:
    out = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    fresh = Golden(out=out, scale=np.abs(out) + 1, nterms=4, path=np.abs(out) + 2)
    same = lambda **kw: Golden(**{"out": out, "scale": fresh.scale, "nterms": 4, "path": fresh.path, **kw})  # noqa: E731
    assert golden_build.compare_goldens("k", fresh, same()) == []
    # the same bytes in another shape is another golden
    assert golden_build.compare_goldens("k", fresh, same(out=out.reshape(3, 2))) == [
        "drifted golden k: shape or NaN positions differ"]
    assert golden_build.compare_goldens("k", fresh, same(out=out.reshape(3, 2), scale=fresh.scale.reshape(3, 2),
                                                   path=fresh.path.reshape(3, 2))) == [
        "drifted golden k: shape or NaN positions differ"]
    assert golden_build.compare_goldens("k", fresh, same(scale=np.ones(3))) == [
        "drifted golden k: the scale has shape (3,), not (2, 3)"]
    assert golden_build.compare_goldens("k", fresh, same(path=np.ones((3, 2)))) == [
        "drifted golden k: the path has shape (3, 2), not (2, 3)"]
    flat = Golden(out=out, scale=np.full((), 7.0), nterms=4, path=np.full((), 8.0))    # 0-d: the same everywhere
    assert golden_build.compare_goldens("k", flat, Golden(out=out, scale=np.full((2, 3), 7.0), nterms=4,
                                                   path=np.full((2, 3), 8.0))) == []


# -- compare_goldens value by value (mutation survivors of issue 21's rerun)
def _pair(**stored):
    """A fresh golden of a sum (nterms 1: the drift limit is DRIFT_ULPS) and a stored one that
    differs only in what `stored` names."""
    out = np.array([1.0, -2.0, 0.5])
    fresh = Golden(out=out, scale=np.abs(out), nterms=1, path=np.abs(out))
    return fresh, Golden(**{"out": out, "scale": fresh.scale, "nterms": 1, "path": fresh.path, **stored})


def _ulps_up(x: np.ndarray, k: int) -> np.ndarray:
    return x + k * np.spacing(x)


def test_compare_goldens_forgives_the_drift_limit_exactly_and_names_the_array_past_it() -> None:
    from suite.golden.cache import DRIFT_ULPS
    out = np.array([1.0, -2.0, 0.5])
    fresh, _ = _pair()
    for name, field in (("result", "out"), ("scale", "scale"), ("path", "path")):
        a = getattr(fresh, field)
        assert golden_build.compare_goldens("k", fresh, _pair(**{field: _ulps_up(a, DRIFT_ULPS)})[1]) == [], name
        assert golden_build.compare_goldens("k", fresh, _pair(**{field: _ulps_up(a, DRIFT_ULPS + 1)})[1]) == [
            f"drifted golden k: recomputed {name} differs by {DRIFT_ULPS + 1:.1f} float64 ulps (limit {DRIFT_ULPS:g})"]
    assert np.array_equal(fresh.out, out)


def test_compare_goldens_measures_the_result_in_ulps_of_its_scale_and_the_path_in_its_own() -> None:
    """The window is made of |out| and scale: a result may drift by the limit in ulps of the larger
    (an infinite scale, which sets no window, counts as 0); the path only in ulps of itself."""
    out = np.array([1e-10, 1e-10])
    big = np.array([1.0, np.inf])
    fresh = Golden(out=out, scale=big, nterms=1, path=np.array([1e-10, 1e-10]))
    drift_in_scale_ulps = out + np.array([2.0, 0.0]) * np.spacing(1.0)          # 2 ulps of the scale 1.0
    assert golden_build.compare_goldens("k", fresh, Golden(out=drift_in_scale_ulps, scale=big, nterms=1,
                                                          path=fresh.path)) == []
    beyond_out_ulps = out + np.array([0.0, 1e-20])                                 # scale inf: ulps of 1e-10
    assert golden_build.compare_goldens("k", fresh, Golden(out=beyond_out_ulps, scale=big, nterms=1, path=fresh.path))[0] \
        .startswith("drifted golden k: recomputed result differs by ")
    path_drift = fresh.path + np.array([2.0, 0.0]) * np.spacing(1.0)             # small in ulps of the scale, not of itself
    assert golden_build.compare_goldens("k", fresh, Golden(out=out, scale=big, nterms=1, path=path_drift))[0] \
        .startswith("drifted golden k: recomputed path differs by ")


def test_compare_goldens_names_which_array_has_other_nans_or_infinities() -> None:
    fresh, _ = _pair()
    for name, field in (("result", "out"), ("scale", "scale"), ("path", "path")):
        a = getattr(fresh, field)
        nan_msg, inf_msg = (("shape or NaN positions differ", "infinities differ") if name == "result" else
                            (f"the {name}'s NaN positions differ", f"the {name}'s infinities differ"))
        assert golden_build.compare_goldens("k", fresh, _pair(**{field: np.where([1, 0, 0], np.nan, a)})[1]) == [
            f"drifted golden k: {nan_msg}"]
        assert golden_build.compare_goldens("k", fresh, _pair(**{field: np.where([1, 0, 0], np.inf, a)})[1]) == [
            f"drifted golden k: {inf_msg}"], name


def test_compare_goldens_accepts_the_same_nans_and_infinities_beside_a_drift_within_the_limit() -> None:
    out = np.array([np.nan, 1.0, np.inf, -np.inf])
    fresh = Golden(out=out, scale=np.array([np.nan, 1.0, np.inf, np.inf]), nterms=1, path=np.ones(4))
    drifted = Golden(out=np.array([np.nan, np.nextafter(1.0, 2.0), np.inf, -np.inf]), scale=fresh.scale, nterms=1,
                     path=fresh.path)
    assert golden_build.compare_goldens("k", fresh, drifted) == []


def test_compare_goldens_keeps_a_broadcast_scale_of_the_same_shape_and_a_0d_result_apart_from_a_1_element_one() -> None:
    out = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    row = np.array([[7.0, 8.0, 9.0]])                                     # (1, 3): broadcast over out's rows
    fresh = Golden(out=out, scale=row, nterms=1, path=row)
    assert golden_build.compare_goldens("k", fresh, Golden(out=_ulps_up(out, 1), scale=row, nterms=1, path=row)) == []
    zero_d, one = np.array(2.0), np.array([2.0])                         # the same bytes
    for a, b in ((zero_d, one), (one, zero_d)):
        assert golden_build.compare_goldens("k", Golden(out=a, scale=a, nterms=1, path=a),
                                            Golden(out=b, scale=b, nterms=1, path=b)) == [
            "drifted golden k: shape or NaN positions differ"]


def test_compare_goldens_measures_in_float64_ulps_whatever_dtype_an_array_comes_in() -> None:
    """The limit is in float64 ulps: a path handed over in float32 is not measured in float32's
    (coarser) ulps, which would forgive a drift of millions of float64 ulps."""
    one = np.ones(2)
    fresh = Golden(out=one, scale=one, nterms=1, path=np.ones(2, dtype=np.float32))
    stored = Golden(out=one, scale=one, nterms=1, path=_ulps_up(one, 5))
    assert golden_build.compare_goldens("k", fresh, stored) == [
        "drifted golden k: recomputed path differs by 5.0 float64 ulps (limit 4)"]


# -- the store's, the cache's and a lazy golden's paths no test reached (issue 21, mutg) -------------
# Large cases of the two-output NLLLoss: sum (out and totalWeightOut are written), none (out only,
# [N], elementwise); the elementwise MseLoss (none); BinaryCrossEntropyBackward with a NULL weight.
NLL_SUM = """
op: NLLLoss
cases:
  - {product: atlas-a2, dtypes: {inputs: float32, target: int64}, reduction: sum, shapes: [300x200, 300, 200]}
"""
ELEMENTWISE = """
op: MseLoss
cases:
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [200x200, 200x200]}
---
op: NLLLoss
cases:
  - {product: atlas-a2, dtypes: {inputs: float32, target: int64}, reduction: none, shapes: [300x200, 300, 200]}
"""
NULL_WEIGHT = """
op: BinaryCrossEntropyBackward
cases:
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [200x200, 200x200, 200x200, null]}
"""


def _counted(monkeypatch, target: str, real: Callable) -> list:
    calls: list = []
    monkeypatch.setattr(target, lambda *a, **k: calls.append(a) or real(*a, **k))
    return calls


def _elementwise_cases(tmp_path: Path):
    mse, nll = ELEMENTWISE.split("---\n")
    cases = load_cases([write(tmp_path, "mse.yaml", mse), write(tmp_path, "nll.yaml", nll)])[0]
    root = tmp_path / "golden"
    golden_build.generate(cases, root)
    return cases, root


def test_a_large_elementwise_golden_too_big_to_hold_is_computed_block_by_block_as_it_is_read(
        tmp_path: Path, monkeypatch) -> None:
    """Past LAZY_BYTES an elementwise golden is an Elementwise source: the case's drawn inputs, no
    other output's golden, its shape and one term, and blocks that tile the flat result in order
    with the values, |values| as scale and path of the float64 golden computed whole."""
    monkeypatch.setattr(golden_store, "LAZY_BYTES", 8)
    cases, root = _elementwise_cases(tmp_path)
    assert {c.op for c in cases} == {"MseLoss", "NLLLoss"} and all(golden_store.lazy(c) for c in cases)
    assert golden_build.check(cases, root) == []
    store = GoldenStore(root, reuse=True)
    for case in cases:
        data = store.load(case)
        assert isinstance(data.golden, golden_source.Elementwise) and data.others == {}
        drawn = golden_store.draw_inputs(case)
        assert {n for n, a in drawn.items() if a is not None} == set(data.inputs)
        for n, a in data.inputs.items():
            np.testing.assert_array_equal(a, drawn[n])
            assert not a.flags.writeable                      # reused by the next test of this data
        whole = golden_source.compute(case, data.inputs)
        assert data.golden.shape == whole.out.shape == case.out_shape and data.golden.nterms == 1
        starts, outs = [], []
        for start, out, scale, path in data.golden.blocks(100):
            starts.append(start)
            outs.append(out)
            np.testing.assert_array_equal(scale, np.abs(out))
            np.testing.assert_array_equal(path, np.abs(out))
        sizes = [o.size for o in outs]
        assert len(outs) >= 3 and starts == [sum(sizes[:i]) for i in range(len(sizes))]
        np.testing.assert_array_equal(np.concatenate(outs), whole.out.reshape(-1))


def test_a_large_golden_that_disagrees_with_its_fingerprint_is_refused_naming_the_case(large) -> None:
    cases, root = large
    m = json.loads((root / "manifest.json").read_text())
    entry = m["cases"][cases[0].datakey]
    entry["sum"] = float(2 * float.fromhex(entry["sum"]) + 1).hex()
    with pytest.raises(golden_source.GoldenError) as e:
        GoldenStore(root, manifest=m).load(cases[0])
    limit = golden_build.drift_limit(3001)
    said = str(e.value)
    assert said.startswith(f"drifted golden {cases[0].datakey}: recomputed result differs by ")
    assert said.endswith(f" float64 ulps (limit {limit:g}); run `aclnn-conform golden check`"), said


def test_a_large_golden_this_process_cached_is_read_back_for_each_case_not_computed_again(
        tmp_path: Path, monkeypatch) -> None:
    """Two large cases loaded in turn: each computed once in a run and then read from the cache
    entry it wrote; the next run computes each again (it trusts no entry it did not write) but
    does not rewrite an entry that already holds those bytes."""
    cases, root = generated(tmp_path, TWO_LARGE)
    a, b = cases[0], cases[2]
    assert a.datakey != b.datakey
    cache = GoldenCache(tmp_path / "cache")
    computed = _counted(monkeypatch, "suite.golden.store.compute_all", golden_source.compute_all)
    put = _counted(monkeypatch, "suite.golden.cache.GoldenCache.put", GoldenCache.put)
    store = GoldenStore(root, cache=cache)
    first = {c.datakey: _copy(store.load(c).golden.golden) for c in (a, b)}
    for c in (a, b, a, b):
        data = store.load(c)
        assert set(data.inputs) == {"gradOutput", "self", "target"} and data.others == {}
        np.testing.assert_array_equal(data.golden.golden.path, first[c.datakey].path)
    assert [x[0].datakey for x in computed] == [a.datakey, b.datakey] and len(put) == 2
    nxt = GoldenStore(root, cache=cache)
    nxt.load(a)
    nxt.load(a)
    assert [x[0].datakey for x in computed] == [a.datakey, b.datakey, a.datakey] and len(put) == 2


def test_a_large_case_with_two_outputs_gets_the_second_golden_computed_and_from_the_cache(
        tmp_path: Path) -> None:
    cases, root = generated(tmp_path, NLL_SUM)
    (case,) = cases
    store = GoldenStore(root, cache=GoldenCache(tmp_path / "cache"))
    inputs = golden_store.draw_inputs(case)
    want = golden_source.compute_all(case, inputs)[1]["totalWeightOut"]
    for _ in range(2):                                   # computed, then the first output from the cache
        data = store.load(case)
        assert set(data.others) == {"totalWeightOut"}
        got = data.others["totalWeightOut"].golden
        assert np.array_equal(got.out, want.out) and got.nterms == want.nterms


def test_drawn_inputs_are_checked_against_the_manifest_once_per_case_and_for_every_case(
        tmp_path: Path, monkeypatch) -> None:
    cases, root = generated(tmp_path, TWO_LARGE)
    a, b = cases[0], cases[2]
    m = json.loads((root / "manifest.json").read_text())
    store = GoldenStore(root, manifest=m)
    hashed = _counted(monkeypatch, "suite.values.draw.digest", golden_store.draw.digest)
    store.inputs(a)
    assert len(hashed) == 3
    store.inputs(a)
    assert len(hashed) == 3                              # the same draw, checked once
    m["cases"][b.datakey]["inputs"]["self"] = "0" * 64
    with pytest.raises(golden_source.GoldenError, match=f"stale golden {b.datakey}: input self differs"):
        store.inputs(b)
    del m["cases"][b.datakey]["inputs"]
    with pytest.raises(golden_source.GoldenError, match=f"stale golden {b.datakey}: input gradOutput differs"):
        store.inputs(b)


def test_a_null_input_is_refused_where_the_manifest_has_its_digest_and_ends_no_check(
        tmp_path: Path, monkeypatch) -> None:
    cases, root = generated(tmp_path, NULL_WEIGHT)
    (case,) = cases
    assert not golden_source.is_stored(case)
    m = json.loads((root / "manifest.json").read_text())
    entry = m["cases"][case.datakey]
    assert set(entry["inputs"]) == {"gradOutput", "self", "target"} and case.shapes["weight"] is None
    GoldenStore(root, manifest=m).inputs(case)
    with_weight = json.loads(json.dumps(m))
    with_weight["cases"][case.datakey]["inputs"]["weight"] = "0" * 64
    with pytest.raises(golden_source.GoldenError) as e:
        GoldenStore(root, manifest=with_weight).inputs(case)
    assert str(e.value) == (f"stale golden {case.datakey}: input weight is NULL but the manifest has its "
                            f"digest; run `aclnn-conform golden check`")
    no_inputs = json.loads(json.dumps(m))
    del no_inputs["cases"][case.datakey]["inputs"]
    with pytest.raises(golden_source.GoldenError, match="input gradOutput differs"):
        GoldenStore(root, manifest=no_inputs).inputs(case)
    # an operator whose optional input comes first: the NULL one does not end the check
    real = golden_store.draw_inputs
    monkeypatch.setattr("suite.golden.store.draw_inputs", lambda c: {"weight": None, **real(c)})
    bad_self = json.loads(json.dumps(m))
    bad_self["cases"][case.datakey]["inputs"]["self"] = "0" * 64
    with pytest.raises(golden_source.GoldenError, match="input self differs"):
        GoldenStore(root, manifest=bad_self).inputs(case)
    with pytest.raises(golden_source.GoldenError, match="input gradOutput differs"):
        GoldenStore(root, manifest=no_inputs).inputs(case)


def test_the_cache_keeps_a_golden_up_to_max_bytes_counting_scale_and_path_of_a_sum(tmp_path: Path) -> None:
    flat = Golden(out=np.ones(4), scale=np.ones(4))                          # 32 bytes
    summed = Golden(out=np.ones(4), scale=np.ones(4), nterms=2, path=np.ones(4))   # 3 x 32 bytes
    root = tmp_path / "cache"
    assert set(GoldenCache(root, max_bytes=32).files(flat)) == {"out.npy"}
    assert GoldenCache(root, max_bytes=31).files(flat) is None
    assert set(GoldenCache(root, max_bytes=96).files(summed)) == {"out.npy", "scale.npy", "path.npy"}
    assert GoldenCache(root, max_bytes=95).files(summed) is None


def test_a_cache_entry_is_written_in_a_hidden_temporary_folder_beside_it_and_renamed(
        large, tmp_path: Path, monkeypatch) -> None:
    """Beside it: a rename across file systems (a TMPDIR elsewhere) would fail; hidden and named for
    its entry, so a write killed before its rename is never read as one. A rename that fails leaves
    no entry and no temporary folder."""
    cases, _ = large
    cache = GoldenCache(tmp_path / "cache")
    g = Golden(out=np.ones(3), scale=np.ones(3))
    renamed = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda s, d: renamed.append((Path(s), Path(d))) or real(s, d))
    assert cache.put(cases[0], g) is not None
    ((src, dst),) = renamed
    assert dst == cache._dir(cases[0]) and src.parent == dst.parent
    assert src.name.startswith(f".{dst.name}.") and src.name.endswith(".tmp") and len(src.name) > len(dst.name) + 6

    def refuse(s, d):
        raise OSError("no rename")
    monkeypatch.setattr(os, "replace", refuse)
    other = GoldenCache(tmp_path / "other")
    assert other.put(cases[0], g) is None
    assert [p.name for p in other._dir(cases[0]).parent.iterdir()] == []


def test_an_elementwise_golden_whose_scale_or_path_is_not_its_magnitude_has_no_fingerprint(large) -> None:
    cases, _ = large
    out = np.array([1.0, -2.0])
    for scale, path in ((np.array([1.0, 3.0]), None), (np.abs(out), np.array([1.0, 3.0]))):
        src = golden_source.Materialized(Golden(out=out, scale=scale, nterms=1, path=path))
        with pytest.raises(golden_source.GoldenError, match="an elementwise golden whose scale or path is not"):
            golden_cache.fingerprint(cases[0], None, src)
    fine = golden_cache.fingerprint(cases[0], None, golden_source.Materialized(Golden(out=out, scale=np.abs(out))))
    assert fine["nterms"] == 1


def test_ulps_over_names_a_differing_nan_or_infinity_and_measures_in_ulps_of_the_largest_finite_value() -> None:
    u = math.ulp(1.0)
    over = golden_cache._ulps_over
    inf, nan = math.inf, math.nan
    assert over([(inf, 1.0, 1.0)], 4) == (0.0, True)
    assert over([(1.0, -inf, 1.0)], 4) == (0.0, True)
    assert over([(nan, 1.0, 1.0)], 4) == (0.0, True)
    assert over([(1.0, nan, 1.0)], 4) == (0.0, True)
    assert over([(nan, nan, 1.0), (inf, inf, 1.0)], 4) == (0.0, False)
    assert over([(inf, inf, 1.0), (1.0, 1.0 + 8 * u, 1.0)], 4) == (8.0, False)   # a same infinity skips on
    assert over([(1.0, 1.0 + 4 * u, 1.0)], 4) == (0.0, False)                    # the limit itself passes
    assert over([(1.0, 1.0 + 5 * u, 1.0)], 4) == (5.0, False)
    assert over([(1.0, 1.0 + 8 * u, 1024.0)], 4) == (0.0, False)                 # ulps of the reference
    assert over([(1.0, 1.0 + 8 * u, inf)], 4) == (8.0, False)                    # an infinite one: of a and b
    assert over([(1.0, 1.0 - 6 * u / 2, 0.0)], 4) == (0.0, False)                # of a (the larger) ...
    assert over([(1.0 - 6 * u / 2, 1.0, 0.0)], 4) == (0.0, False)                # ... or of b


def _committed_small_scale_cases():
    """The two smallest large cases (generated scale sets, fingerprinted) of two committed case files: a
    sum (MseLoss, about 1024 terms) and an elementwise one (L1LossBackward)."""
    m = json.loads((ROOT / "golden" / "manifest.json").read_text())
    picked = []
    for f in ("mse_loss.yaml", "l1_loss_backward.yaml"):
        numeric = golden_source.numeric_cases(load_cases([ROOT / "cases" / f])[0]).values()
        large = sorted((c for c in numeric if "file" not in m["cases"][c.datakey] and c.tier == "default"),
                       key=lambda c: (c.elements, c.datakey))
        picked.append((large[0], m["cases"][large[0].datakey]))
    return picked


def test_the_committed_fingerprints_of_small_scale_cases_are_made_again_within_the_drift_limit() -> None:
    """What `golden check` recomputes for every large case, for two cheap ones: the same sampled
    positions, NaN/inf digest, sums and inputs as the committed manifest (a change to how a
    fingerprint is made would make every committed one stale)."""
    picked = _committed_small_scale_cases()
    assert [e["nterms"] > 1 for _, e in picked] == [True, False]
    for case, entry in picked:
        inputs, src, _ = golden_build._fresh(case)
        fresh = golden_cache.fingerprint(case, inputs, src)
        assert golden_cache.compare_fingerprints(case.datakey, entry, fresh) == []
        assert [s[0] for s in fresh["samples"]] == golden_cache._sample_at(case, int(np.prod(case.out_shape)))
        assert fresh["nonfinite"] == entry["nonfinite"] and set(fresh) == set(entry) - {"spec"}
    case = picked[0][0]
    assert golden_cache._sample_at(case, 0) == [] and golden_cache._sample_at(case, 1) == [0]
    at = golden_cache._sample_at(case, 1000)
    assert at[0] == 0 and at[-1] == 999 and 2 < len(at) <= golden_source.SAMPLES and at == sorted(set(at))


class _Blocky(golden_source.Materialized):
    def blocks(self, limit: int = 0):
        return super().blocks(8)


def test_a_fingerprint_sums_only_finite_elements_and_samples_and_sums_whatever_the_block_size(large) -> None:
    """(The NaN/inf digest is made block by block, so it depends on the blocks: generate and check
    read a case's golden through the same source, hence the same blocks.)"""
    cases, _ = large
    out = np.tile([1.0, -2.0, np.inf, np.nan, 4.0, -np.inf, 0.5, 0.25], 2)
    scale = np.tile([3.0, 2.0, np.inf, np.nan, 4.0, 8.0, 0.5, 0.25], 2)
    path = np.tile([5.0, 7.0, 1.0, np.nan, 6.0, np.inf, 2.0, 0.25], 2)
    summed = Golden(out=out, scale=scale, nterms=3, path=path)
    flat = Golden(out=out, scale=np.abs(out))
    at = golden_cache._sample_at(cases[0], out.size)
    assert any(0 < i % 8 for i in at) and any(i >= 8 for i in at)
    for g, full in ((summed, True), (flat, False)):
        whole = golden_cache.fingerprint(cases[0], None, golden_source.Materialized(g))
        blocky = golden_cache.fingerprint(cases[0], None, _Blocky(g))
        assert {k: v for k, v in blocky.items() if k != "nonfinite"} == {k: v for k, v in whole.items() if k != "nonfinite"}
        assert whole["sum"] == (7.5).hex() and whole["abs_sum"] == (15.5).hex() and whole["nterms"] == g.nterms
        assert len(whole["nonfinite"]) == 32
        assert whole["samples"] == [[i, out[i].hex(), g.scale[i].hex()] + ([path[i].hex()] if full else []) for i in at]
        if full:
            assert whole["scale_sum"] == (35.5).hex() and whole["path_sum"] == (42.5).hex()
        else:
            assert set(whole) == {"samples", "sum", "abs_sum", "nonfinite", "nterms"}
    assert golden_cache.fingerprint(cases[0], None, golden_source.Materialized(flat))["nonfinite"] != \
        golden_cache.fingerprint(cases[0], None, golden_source.Materialized(summed))["nonfinite"]
    empty = golden_cache.fingerprint(cases[0], None, golden_source.Materialized(Golden(out=np.zeros(0), scale=np.zeros(0))))
    assert empty["samples"] == [] and empty["sum"] == (0.0).hex() and empty["abs_sum"] == (0.0).hex()


def test_a_full_fingerprint_is_an_elementwise_one_or_a_sums_with_scale_and_path_everywhere() -> None:
    four, three = [[0, "0x1p+0", "0x1p+0", "0x1p+0"]], [[0, "0x1p+0", "0x1p+0"]]
    full = golden_cache.full_fingerprint
    assert full({"nterms": 1, "samples": three})
    assert full({"nterms": 2, "scale_sum": "", "path_sum": "", "samples": four})
    assert full({"nterms": 2, "scale_sum": "", "path_sum": ""})                    # no samples (an empty case)
    assert not full({"nterms": 2, "scale_sum": "", "path_sum": "", "samples": three})
    assert not full({"nterms": 2, "scale_sum": "", "samples": four})
    assert not full({"nterms": 2, "path_sum": "", "samples": four})
    assert not full({"nterms": 2, "samples": four})


def test_compare_fingerprints_measures_the_sum_in_ulps_of_the_magnitudes_and_a_scale_in_its_own() -> None:
    u = math.ulp(1.0)
    base = {"samples": [[0, (1.0).hex(), (1.0).hex()]], "sum": (1e-10).hex(), "abs_sum": (1000.0).hex(),
            "nonfinite": "0" * 32, "nterms": 1, "inputs": {"self": "a" * 64}}
    near = dict(base, sum=(1e-10 + 1e-20).hex())                # far past 4 ulps of 1e-10, not of 1000
    assert golden_cache.compare_fingerprints("k", base, near) == []
    no_inputs = {k: v for k, v in base.items() if k != "inputs"}
    assert golden_cache.compare_fingerprints("k", no_inputs, base) == [
        "stale golden k: input self differs from what the generator draws now"]
    s = {"samples": [[0, (1.0).hex(), (1.0).hex(), (1024.0).hex()]], "sum": (1.0).hex(), "abs_sum": (1.0).hex(),
         "scale_sum": (1.0).hex(), "path_sum": (1024.0).hex(), "nonfinite": "0" * 32, "nterms": 2}
    drifted = dict(s, samples=[[0, (1.0).hex(), (1.0 + 8 * u).hex(), (1024.0).hex()]])
    assert golden_cache.compare_fingerprints("k", s, drifted) == [
        f"drifted golden k: recomputed scale differs by 8.0 float64 ulps (limit {golden_build.drift_limit(2):g})"]


def test_the_manifest_hash_of_a_store_without_a_manifest_is_empty(tmp_path: Path) -> None:
    store = GoldenStore(tmp_path / "no-goldens")
    assert store.manifest_hash() == ""
    words = f"{tmp_path / 'no-goldens' / 'manifest.json'}: no golden manifest; run `aclnn-conform golden generate`"
    with pytest.raises(golden_source.GoldenError) as info:
        store.manifest
    assert str(info.value) == words
    with pytest.raises(golden_source.GoldenError) as info:
        read_manifest(tmp_path / "no-goldens")
    assert str(info.value) == words


def test_the_spec_hash_of_every_committed_case_of_two_files_is_the_manifests(monkeypatch) -> None:
    """Computed afresh (not from the process's memo of them): the committed goldens stay current only
    while the spec hash is made the same way."""
    monkeypatch.setattr(golden_source, "_SPECS", {})
    m = json.loads((ROOT / "golden" / "manifest.json").read_text())
    numeric = golden_source.numeric_cases(load_cases([ROOT / "cases" / "mse_loss.yaml",
                                                      ROOT / "cases" / "binary_cross_entropy_backward.yaml"])[0])
    assert len(numeric) > 100 and any(c.shapes["weight"] is None for c in numeric.values() if "weight" in c.shapes)
    for key, case in numeric.items():
        assert golden_source.spec_hash(case) == m["cases"][key]["spec"], key
    assert len(golden_source._SPECS) == len({(c.op, c.dtypes, c.out_dtype, c.shapes, c.attrs, c.values, c.datakey)
                                            for c in numeric.values()})


def test_the_default_cache_folder_is_the_variable_else_xdg_else_the_home_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ACLNN_CONFORMANCE_CACHE", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert golden_cache.default_cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("ACLNN_CONFORMANCE_CACHE", "")
    assert golden_cache.default_cache_dir() == tmp_path / "xdg" / "aclnn-conformance"
    monkeypatch.delenv("ACLNN_CONFORMANCE_CACHE")
    assert golden_cache.default_cache_dir() == tmp_path / "xdg" / "aclnn-conformance"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert golden_cache.default_cache_dir() == tmp_path / "home" / ".cache" / "aclnn-conformance"


def test_an_elementwise_golden_is_lazy_only_past_lazy_bytes_of_float64(tmp_path: Path, monkeypatch) -> None:
    """The boundary: a golden of exactly LAZY_BYTES (8 bytes an element) is still held and cached;
    one element more is computed as judging reads it."""
    cases, _ = generated(tmp_path, """
op: KlDivBackward
cases:
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [20000, 20000, 20000]}
""")
    [case] = cases
    assert not golden_source.is_stored(case) and math.prod(case.out_shape) == 20000
    for limit, lazy in ((8 * 20000, False), (8 * 20000 - 1, True), (8 * 20000 + 8, False), (8 * 19999, True)):
        monkeypatch.setattr(golden_store, "LAZY_BYTES", limit)
        assert golden_store.lazy(case) is lazy, limit


def test_a_case_is_stored_up_to_the_limit_and_never_when_generated(tmp_path: Path, monkeypatch) -> None:
    """is_stored's boundary, at a case's own element count: stored at the limit, drawn one past it."""
    case = load_cases([write(tmp_path, "small.yaml", SMALL)])[0][0]
    monkeypatch.setattr(golden_source, "STORED_LIMIT", case.elements)
    assert golden_source.is_stored(case)
    assert not golden_source.is_stored(dataclasses.replace(case, generated=True))
    monkeypatch.setattr(golden_source, "STORED_LIMIT", case.elements - 1)
    assert not golden_source.is_stored(case)


def test_a_manifest_that_cannot_be_read_is_each_cases_error_and_hashes_empty(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").mkdir()                   # an OSError other than a missing file
    store = GoldenStore(tmp_path)
    assert store.manifest_hash() == ""
    with pytest.raises(golden_source.GoldenError) as info:
        store.manifest
    assert str(info.value) == f"{tmp_path / 'manifest.json'}: cannot be read (Is a directory)"


def test_a_manifest_of_exactly_the_size_limit_is_read_whole(small, monkeypatch) -> None:
    """pin reads one byte past the limit, so a manifest of the limit's size is read, not cut."""
    cases, root = small
    data = (root / "manifest.json").read_bytes()
    monkeypatch.setattr(jsonfile, "MAX_BYTES", len(data))
    store = GoldenStore(root)
    assert store.manifest["cases"] and store.manifest_hash() == hashlib.sha256(data).hexdigest()


def test_golden_checks_store_hashes_the_manifest_it_was_given(small) -> None:
    """A store given the manifest (golden check) still reports the sha256 of the file's bytes,
    and '' when there is no file."""
    cases, root = small
    m = read_manifest(root)
    data = (root / "manifest.json").read_bytes()
    assert GoldenStore(root, manifest=m).manifest_hash() == hashlib.sha256(data).hexdigest()
    (root / "manifest.json").unlink()
    store = GoldenStore(root, manifest=m)
    assert store.manifest_hash() == "" and store.manifest is m


def test_the_store_parses_the_bytes_it_hashed_not_a_second_read(small, monkeypatch) -> None:
    """One read: a manifest rewritten between a second read and the hash would leave manifest_hash
    naming bytes the run did not use."""
    cases, root = small
    data = (root / "manifest.json").read_bytes()

    def second_read(*a, **k):
        raise AssertionError("the manifest was read a second time")
    monkeypatch.setattr(jsonfile, "load", second_read)
    store = GoldenStore(root)
    assert store.manifest == json.loads(data) and store.manifest_hash() == hashlib.sha256(data).hexdigest()
