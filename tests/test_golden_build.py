"""Goldens in tmp dirs from small case files: generate/check round trips, every problem `check`
names, atomicity, bit-exact storage, and the float64 formulas against hand computation."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

from suite.common import dtypes
from suite import ops
from suite.golden import source as golden_source
from suite.ops import base as ops_base
from suite.golden import bundle as golden_bundle
from suite.common import files
from suite.golden import cache as golden_cache
from suite.golden import build as golden_build
from suite.cases import inputs as values
from suite.cases.model import Case
from suite.cases.load import load_cases
from suite.golden.source import GoldenError
from suite.golden.store import GoldenStore
from tests.core_helpers import generated, rewrite_bundle, ulps, write

ROOT = Path(__file__).resolve().parents[1]
CASES = """
op: {op}
cases:
  - {{product: atlas-a2, dtypes: float32, reduction: none, shapes: [2x3, 2x3, 2x3]}}
  - {{product: atlas-a2, dtypes: bfloat16, reduction: mean, shapes: [4x4, 4x4, 4x4], values: specials}}
  - {{product: atlas-a2, dtypes: float16, reduction: sum, shapes: [scalar, scalar, scalar]}}
  - {{product: atlas-a3, dtypes: {{inputs: bfloat16, out: float32}}, reduction: none, shapes: [5, 5, 5]}}
  - {{product: atlas-training, dtypes: bfloat16, reduction: none, shapes: [2, 2, 2]}}
"""
KL_EXTRA = "  - {product: atlas-a2, dtypes: float32, reduction: batchmean, shapes: [2x3, 3, 2x3]}\n"


@pytest.fixture
def cases(tmp_path: Path) -> List[Case]:
    f = tmp_path / "cases"
    f.mkdir()
    write(f, "mse.yaml", CASES.format(op="MseLossBackward"))
    write(f, "kl.yaml", CASES.format(op="KlDivBackward") + KL_EXTRA)
    return load_cases([f])[0]


@pytest.fixture
def root(tmp_path: Path, cases: List[Case]) -> Path:
    r = tmp_path / "golden"
    golden_build.generate(cases, r)
    return r


def snapshot(root: Path) -> Dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def manifest(root: Path) -> dict:
    return json.loads((root / "manifest.json").read_text())


def numeric(cases: List[Case]) -> List[Case]:
    return list(golden_source.numeric_cases(cases).values())


def test_generate_then_check_is_clean(root: Path, cases: List[Case]) -> None:
    assert golden_build.check(cases, root) == []
    m = manifest(root)
    assert len(m["cases"]) == len(numeric(cases)) == 9        # the two atlas-training bf16 are rejections
    store = GoldenStore(root)
    for c in numeric(cases):
        d = store.load(c)
        assert d.golden.out.shape == c.out_shape


def test_generate_is_idempotent_and_deterministic(tmp_path: Path, root: Path, cases: List[Case]) -> None:
    before = snapshot(root)
    stats = golden_build.generate(cases, root)
    assert stats["written"] == 0 and stats["removed"] == 0
    assert snapshot(root) == before
    other = tmp_path / "again"
    golden_build.generate(list(reversed(cases)), other)
    assert snapshot(other) == before                          # byte-identical from scratch, any order


def _bundle_of(root: Path, case: Case) -> str:
    return manifest(root)["cases"][case.datakey]["file"]


def test_missing_bundle(root: Path, cases: List[Case]) -> None:
    rel = _bundle_of(root, numeric(cases)[0])
    (root / rel).unlink()
    assert golden_build.check(cases, root) == [f"missing bundle {rel}"]      # once, not once per case in it
    with pytest.raises(GoldenError, match="missing"):
        GoldenStore(root).load(numeric(cases)[0])


def test_corrupted_bundle_is_reported_and_refused(root: Path, cases: List[Case]) -> None:
    case = numeric(cases)[0]
    rel = _bundle_of(root, case)
    data = bytearray((root / rel).read_bytes())
    data[len(data) // 2] ^= 0x01
    (root / rel).write_bytes(bytes(data))
    problems = golden_build.check(cases, root)
    assert problems == [f"corrupted bundle {rel} (sha256 differs from the manifest)"]
    with pytest.raises(GoldenError, match="corrupted"):
        GoldenStore(root).load(case)


def test_orphaned_file_and_orphaned_entry(root: Path, cases: List[Case]) -> None:
    rel = _bundle_of(root, numeric(cases)[0])
    stray = Path(rel).with_name("15-000000000000.npz").as_posix()
    (root / stray).write_bytes((root / rel).read_bytes())
    dropped = numeric(cases)[1]
    fewer = [c for c in cases if c.datakey != dropped.datakey]
    problems = golden_build.check(fewer, root)
    assert f"orphaned file {stray} (not in the manifest)" in problems
    assert f"orphaned golden {dropped.datakey} (no case makes it)" in problems
    assert len(problems) == 2


def test_missing_golden_for_a_new_case(tmp_path: Path, root: Path, cases: List[Case]) -> None:
    extra = write(tmp_path, "more.yaml", "op: MseLossBackward\ncases:\n"
                  "  - {product: atlas-a2, dtypes: float32, reduction: mean, shapes: [3x3, 3, 3x3]}\n")
    new = load_cases([extra])[0]
    assert golden_build.check(cases + new, root) == [f"missing golden {new[0].datakey}"]


def test_stale_golden(root: Path, cases: List[Case]) -> None:
    case = numeric(cases)[0]
    # the case changed under the same datakey (here: its value set), so its spec hash differs
    changed = [dataclasses.replace(c, values="tiny") if c is case else c for c in cases]
    assert golden_build.check(changed, root) == [f"stale golden {case.datakey} (its case changed)"]
    with pytest.raises(GoldenError, match="stale"):
        GoldenStore(root).load(changed[cases.index(case)])
    # or the manifest's record of it changed
    m = manifest(root)
    m["cases"][case.datakey]["spec"] = "0" * 16
    (root / "manifest.json").write_text(json.dumps(m))
    assert golden_build.check(cases, root) == [f"stale golden {case.datakey} (its case changed)"]


def _rewrite_member(root: Path, case: Case, fn) -> None:
    """Replace the case's golden with fn(out) and re-seal the bundle with a consistent sha."""
    rel = _bundle_of(root, case)
    index, raw = golden_bundle._read_bundle((root / rel).read_bytes())
    members = {key: {k: np.array(v) for k, v in golden_bundle._unpack(index, raw, key).items()} for key in index}
    members[case.datakey]["out"] = fn(members[case.datakey]["out"])
    data = golden_bundle._bundle_bytes(members)
    (root / rel).write_bytes(data)
    m = manifest(root)
    m["files"][rel] = golden_bundle._sha256(data)
    (root / "manifest.json").write_text(json.dumps(m))


def _f32_case(cases: List[Case]) -> Case:
    return next(c for c in numeric(cases) if c.op == "MseLossBackward" and c.out_dtype == "float32"
                and c.reduction == 0 and c.dtype_token == "float32")


def test_drift_of_100_ulps_is_reported(root: Path, cases: List[Case]) -> None:
    case = _f32_case(cases)
    _rewrite_member(root, case, lambda out: out + 100 * np.spacing(out))
    problems = golden_build.check(cases, root)
    assert len(problems) == 1 and problems[0].startswith(f"drifted golden {case.datakey}"), problems
    assert "100.0 float64 ulps" in problems[0]


def test_a_sample_recomputes_only_its_keys_and_checks_everything_else(root: Path, cases: List[Case]) -> None:
    """check(recompute=...) draws and computes again only the keys it accepts (CI's sample of the
    committed goldens); a drift outside it goes unseen, one inside it is reported, and a stale
    spec or a corrupted bundle is reported whatever the sample."""
    case = _f32_case(cases)
    _rewrite_member(root, case, lambda out: out + 100 * np.spacing(out))
    assert golden_build.check(cases, root, recompute=lambda key: key != case.datakey) == []
    inside = golden_build.check(cases, root, recompute=lambda key: key == case.datakey)
    assert len(inside) == 1 and inside[0].startswith(f"drifted golden {case.datakey}"), inside
    m = manifest(root)
    m["cases"][case.datakey]["spec"] = "0" * 16
    (root / "manifest.json").write_text(json.dumps(m))
    assert golden_build.check(cases, root, recompute=lambda key: False) == [
        f"stale golden {case.datakey} (its case changed)"]
    rel = _bundle_of(root, case)
    data = (root / rel).read_bytes()
    (root / rel).write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    assert f"corrupted bundle {rel} (sha256 differs from the manifest)" in golden_build.check(
        cases, root, recompute=lambda key: False)


def test_drift_within_limit_is_not_reported(root: Path, cases: List[Case]) -> None:
    """Recomputing on another machine may differ in the last bits: a few ulps is not drift."""
    case = _f32_case(cases)
    _rewrite_member(root, case, lambda out: out + 2 * np.spacing(out))
    assert golden_build.check(cases, root) == []


@pytest.mark.parametrize("fail_on", ["bundle", "manifest"])
def test_interrupted_generate_leaves_previous_goldens(tmp_path: Path, root: Path, cases: List[Case],
                                                      monkeypatch, fail_on: str) -> None:
    before = snapshot(root)
    extra = write(tmp_path, "more.yaml", "op: KlDivBackward\ncases:\n"
                  "  - {product: atlas-a2, dtypes: float32, reduction: sum, shapes: [7, 7, 7]}\n"
                  "  - {product: atlas-a2, dtypes: float16, reduction: sum, shapes: [9, 9, 9]}\n"
                  "  - {product: atlas-a2, dtypes: float32, reduction: mean, shapes: [6, 6, 6]}\n")
    more = cases + load_cases([extra])[0]
    real = files.atomic_write
    calls = []

    def flaky(path: Path, data: bytes) -> None:
        calls.append(path.name)
        if (fail_on == "manifest" and path.name == "manifest.json") or (fail_on == "bundle" and len(calls) == 2):
            raise OSError("disk full")
        real(path, data)

    monkeypatch.setattr(golden_build, "atomic_write", flaky)
    with pytest.raises(OSError, match="disk full"):
        golden_build.generate(more, root)
    assert len(calls) >= 2                    # it did get part way
    monkeypatch.setattr(golden_build, "atomic_write", real)
    assert snapshot(root) == before
    assert golden_build.check(cases, root) == []
    store = GoldenStore(root)
    for c in numeric(cases):
        store.load(c)


def test_inputs_round_trip_bit_exactly(root: Path, cases: List[Case]) -> None:
    store = GoldenStore(root)
    bf = [c for c in numeric(cases) if "bfloat16" in dict(c.dtypes).values()]
    assert any(c.values == "specials" for c in bf)
    for c in bf:
        fresh, stored = values.draw_inputs(c), store.load(c).inputs
        for n, a in fresh.items():
            assert stored[n].dtype == dtypes.bfloat16 and stored[n].shape == a.shape
            assert np.array_equal(dtypes.to_bits(stored[n]), dtypes.to_bits(a))
    specials = next(c for c in bf if c.values == "specials")
    bits = np.concatenate([dtypes.to_bits(a).ravel() for a in store.load(specials).inputs.values()])
    vals = bits.view(dtypes.bfloat16).astype(np.float32)
    assert np.isnan(vals).any() and np.isinf(vals).any()      # the specials made it through


def test_zero_d_keeps_its_shape(root: Path, cases: List[Case]) -> None:
    store = GoldenStore(root)
    zero_d = [c for c in numeric(cases) if c.out_shape == ()]
    assert len(zero_d) == 2
    for c in zero_d:
        d = store.load(c)
        assert d.golden.out.shape == () and all(a.shape == () for a in d.inputs.values())


# -- the formulas, by hand ---------------------------------------------------------------------
def _kl_by_hand(g, x, t, reduction, log_target):
    """self (3,), target and gradOutput (2, 3): B = (2, 3), out[j] = sum over i."""
    out, scale = [], []
    for j in range(3):
        s = a = 0.0
        for i in range(2):
            base = math.exp(t[i][j]) if log_target else t[i][j]
            term = -base * g[i][j]
            term = term / 2 if reduction == 3 else term / 6 if reduction == 1 else term
            s += term
            a += abs(term)
        out.append(s)
        scale.append(a)
    return out, scale


G = [[0.5, -1.25, 2.0], [3.0, 0.75, -0.5]]
X = [0.1, -0.2, 0.3]
T = [[1.5, -2.0, 0.25], [-0.75, 4.0, 1.0]]


@pytest.mark.parametrize("reduction", [0, 1, 2, 3])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_golden_by_hand(reduction: int, log_target: bool) -> None:
    op = ops.get("KlDivBackward")
    got = op.golden({"gradOutput": np.array(G), "self": np.array(X), "target": np.array(T)},
                    {"reduction": reduction, "logTarget": log_target})
    out, scale = _kl_by_hand(G, X, T, reduction, log_target)
    assert got.out.shape == (3,) and got.nterms == 2
    np.testing.assert_allclose(got.out, out, rtol=1e-15, atol=0)
    np.testing.assert_allclose(got.scale, scale, rtol=1e-15, atol=0)


def test_kl_batchmean_divides_by_the_first_dimension_of_b() -> None:
    """self (3,) against target (2, 3): B[0] = 2 (PyTorch's self.size(0) would be 3)."""
    op = ops.get("KlDivBackward")
    ones = np.ones((2, 3))
    got = op.golden({"gradOutput": ones, "self": np.zeros(3), "target": ones},
                    {"reduction": 3, "logTarget": False})
    assert got.out.tolist() == [-1.0, -1.0, -1.0]             # (-1 - 1) / 2


@pytest.mark.parametrize("reduction,divisor", [(0, 1), (2, 1), (1, 3)])
def test_mse_golden_by_hand(reduction: int, divisor: int) -> None:
    """mean divides by numel(self) = 3, not numel(B) = 6."""
    op = ops.get("MseLossBackward")
    got = op.golden({"gradOutput": np.array(G), "self": np.array(X), "target": np.array(T)},
                    {"reduction": reduction})
    want = [[G[i][j] * (X[j] - T[i][j]) * 2 / divisor for j in range(3)] for i in range(2)]
    assert got.out.shape == (2, 3)
    np.testing.assert_allclose(got.out, want, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(got.scale, np.abs(got.out))


def test_stored_kl_golden_matches_hand_computation(root: Path, cases: List[Case]) -> None:
    case = next(c for c in numeric(cases) if c.op == "KlDivBackward" and c.reduction == 3)
    d = GoldenStore(root).load(case)
    x = {n: a.astype(np.float64).tolist() for n, a in d.inputs.items()}
    out, scale = _kl_by_hand(x["gradOutput"], x["self"], x["target"], 3, False)
    np.testing.assert_allclose(d.golden.out, out, rtol=1e-15, atol=0)
    np.testing.assert_allclose(d.golden.scale, scale, rtol=1e-15, atol=0)


# -- large cases: fingerprints in the manifest, arrays computed on demand and cached ------------
LARGE = """
op: KlDivBackward
cases:
  - {product: atlas-a2, dtypes: float16, reduction: mean, logTarget: true, shapes: [16, 16, 3001x16]}
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [20000, 20000, 20000], values: specials}
"""


@pytest.fixture
def large(tmp_path: Path):
    return generated(tmp_path, LARGE)


def test_large_cases_commit_a_fingerprint_not_arrays(large) -> None:
    cases, root = large
    m = manifest(root)
    assert m["files"] == {} and not list(root.rglob("*.npz"))
    for c in cases:
        e = m["cases"][c.datakey]
        assert not golden_source.is_stored(c) and "file" not in e
        assert set(e["inputs"]) == {"gradOutput", "self", "target"} and len(e["samples"]) >= 2
        assert e["nterms"] == (3001 if "3001" in c.id else 1)
    assert golden_build.check(cases, root) == []


@pytest.mark.parametrize("tamper,says", [
    (lambda e: e["inputs"].update(target="0" * 64), "input target differs"),
    (lambda e: e["samples"][1].__setitem__(1, (float.fromhex(e["samples"][1][1]) * (1 + 1e-12)).hex()),
     "recomputed result differs"),
    (lambda e: e.update(sum=(float.fromhex(e["sum"]) + 1.0).hex()), "recomputed result differs"),
    (lambda e: e.update(nonfinite="0" * 32), "NaN/inf positions"),
])
def test_golden_check_recomputes_large_cases(large, tamper, says: str) -> None:
    cases, root = large
    m = manifest(root)
    case = cases[1] if "nonfinite" in says else cases[0]
    tamper(m["cases"][case.datakey])
    (root / "manifest.json").write_text(json.dumps(m))
    problems = golden_build.check(cases, root)
    assert len(problems) == 1 and case.datakey in problems[0] and says in problems[0], problems


def test_generate_keeps_fingerprints_and_fresh_recomputes(large) -> None:
    cases, root = large
    before = snapshot(root)
    golden_build.generate(cases, root)
    assert snapshot(root) == before
    m = manifest(root)
    key = cases[0].datakey
    m["cases"][key]["sum"] = "0x1.0p+0"
    (root / "manifest.json").write_text(json.dumps(m))
    golden_build.generate(cases, root)                                        # kept as it is
    assert manifest(root)["cases"][key]["sum"] == "0x1.0p+0"
    golden_build.generate(cases, root, fresh=True)                            # recomputed
    assert snapshot(root) == before


def test_huge_tier_cases_are_recomputed_only_when_asked(tmp_path: Path) -> None:
    text = LARGE.replace("cases:\n", "matrices:\n  - {products: [atlas-a2], dtypes: [float32], reductions: [sum],"
                         " logTarget: [false], tier: huge, shapes: [[5000x4, 4, 5000x4]]}\ncases:\n")
    cases = load_cases([write(tmp_path, "h.yaml", text)])[0]
    root = tmp_path / "golden"
    golden_build.generate(cases, root)
    huge = next(c for c in cases if c.tier == "huge")
    m = manifest(root)
    m["cases"][huge.datakey]["sum"] = "0x1.0p+0"
    (root / "manifest.json").write_text(json.dumps(m))
    skipped: list = []
    assert golden_build.check(cases, root, skipped=skipped) == [] and skipped == [huge.datakey]
    assert "recomputed result differs" in golden_build.check(cases, root, tiers=("default", "huge"))[0]


def test_store_refuses_inputs_that_differ_from_the_fingerprint(large) -> None:
    cases, root = large
    m = manifest(root)
    m["cases"][cases[0].datakey]["inputs"]["gradOutput"] = "f" * 64
    (root / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(GoldenError, match="differs from what the generator draws now"):
        GoldenStore(root).load(cases[0])
    with pytest.raises(GoldenError, match="differs from what the generator draws now"):
        GoldenStore(root).inputs(cases[0])


def test_cache_holds_a_case_once_and_only_for_its_spec(large, tmp_path: Path) -> None:
    cases, root = large
    cache = golden_cache.GoldenCache(tmp_path / "cache")
    a = GoldenStore(root, cache=cache).load(cases[0])
    entries = list((tmp_path / "cache").rglob("meta.json"))
    assert len(entries) == 1 and f"v{golden_source.GENERATOR_VERSION}." in str(entries[0])
    got = cache.get(cases[0])
    assert got is not None and np.array_equal(got.out, a.golden.out) and np.array_equal(got.path, a.golden.golden.path)
    assert cache.get(dataclasses.replace(cases[0], values="tiny")) is None      # another spec: a miss
    (entries[0].parent / "path.npy").unlink()                                   # an incomplete entry
    assert cache.get(cases[0]) is None
    assert golden_cache.GoldenCache(None).get(cases[0]) is None


def test_cache_that_cannot_be_written_is_no_cache(large, tmp_path: Path) -> None:
    cases, root = large
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    d = GoldenStore(root, cache=golden_cache.GoldenCache(blocker / "cache")).load(cases[0])
    assert d.golden.out.shape == (16,)


def test_sum_goldens_carry_magnitudes_and_partial_sums() -> None:
    op = ops.get("KlDivBackward")
    t = np.array([[1.0], [-2.0], [4.0], [-8.0]])
    g = op.golden({"gradOutput": np.array(-1.0), "self": np.zeros(1), "target": t},
                  {"reduction": 0, "logTarget": False})
    assert g.out.tolist() == [-5.0] and g.scale.tolist() == [15.0] and g.nterms == 4
    assert g.path.tolist() == [1 + 1 + 3 + 5]                  # |1|, |1-2|, |-1+4|, |3-8|
    blocked = op.golden({"gradOutput": np.array(-1.0), "self": np.zeros(1), "target": t},
                        {"reduction": 0, "logTarget": False}, block=1)
    assert blocked.out.tolist() == g.out.tolist() and blocked.path.tolist() == g.path.tolist()


def test_a_cached_golden_that_disagrees_with_the_manifest_is_recomputed(large, tmp_path: Path) -> None:
    """A cache filled by other code (an older block size, another formula) is consistent with its
    own sha256s; the manifest's fingerprint is what it must match."""
    cases, root = large
    cache = golden_cache.GoldenCache(tmp_path / "cache")
    good = GoldenStore(root, cache=cache).load(cases[0]).golden.out.copy()
    wrong = ops_base.Golden(out=good * (1 + 1e-9), scale=np.abs(good) * 2, nterms=3001, path=np.abs(good) * 3)
    cache.put(cases[0], wrong)
    assert np.array_equal(cache.get(cases[0]).out, wrong.out)
    again = GoldenStore(root, cache=cache).load(cases[0]).golden.out
    assert np.array_equal(again, good) and np.array_equal(cache.get(cases[0]).out, good)


def test_drift_limit_grows_with_the_number_of_terms() -> None:
    assert golden_cache.drift_limit(1) == golden_cache.DRIFT_ULPS
    assert golden_cache.drift_limit(65536) == golden_cache.DRIFT_ULPS * 256


def test_leftover_temporary_files_are_flagged_and_removed(root: Path, cases: List[Case]) -> None:
    """What a `golden generate` killed by SIGKILL leaves: a temporary file never renamed."""
    rel = _bundle_of(root, numeric(cases)[0])
    stray = (root / rel).parent / f".{Path(rel).name}.abc123.tmp"
    stray.write_bytes(b"half a bundle")
    top = root / ".manifest.json.xyz.tmp"
    top.write_text("{")
    problems = golden_build.check(cases, root)
    assert len(problems) == 2 and all(p.startswith("leftover temporary file") for p in problems), problems
    golden_build.generate(cases, root)
    assert not stray.exists() and not top.exists() and golden_build.check(cases, root) == []


# -- check's every problem, and generate's kept bundles (issue 21, mutg) ------------------------------
def _write_manifest(root: Path, m: dict) -> None:
    (root / "manifest.json").write_text(json.dumps(m))


def test_check_names_goldens_of_another_generator_version(root: Path, cases: List[Case]) -> None:
    m = manifest(root)
    m["generator_version"] = "1"
    _write_manifest(root, m)
    assert golden_build.check(cases, root) == [
        f"goldens were made by generator version 1, this is {golden_source.GENERATOR_VERSION}: stale"]


def test_check_names_every_case_with_a_problem_not_only_the_first(root: Path, cases: List[Case]) -> None:
    keys = sorted(golden_source.numeric_cases(cases))
    first, second, third, fourth = keys[:4]
    m = manifest(root)
    small_entries = {k: dict(m["cases"][k]) for k in keys}
    for k in (first, second):
        del m["cases"][k]
    for k in (third, fourth):
        m["cases"][k]["spec"] = "0" * 16
    _write_manifest(root, m)
    assert golden_build.check(cases, root) == [f"missing golden {first}", f"missing golden {second}",
                                               f"stale golden {third} (its case changed)",
                                               f"stale golden {fourth} (its case changed)"]
    # a small case whose entry is a large case's fingerprint (an older layout), twice
    m = manifest(root)
    m["cases"] = dict(small_entries)
    fingerprint = {"sum": "0x0.0p+0", "abs_sum": "0x0.0p+0", "nonfinite": "0" * 32, "nterms": 1, "samples": []}
    for k in (first, second):
        m["cases"][k] = {"spec": small_entries[k]["spec"], **fingerprint}
    _write_manifest(root, m)
    problems = golden_build.check(cases, root)
    assert [p for p in problems if "stored as large" in p] == [
        f"stale golden {k} (stored as large, but the case is small)" for k in (first, second)], problems
    # entries naming a bundle that does not hold them: each unreadable
    m["cases"] = dict(small_entries)
    others = {k: e["file"] for k, e in small_entries.items()}
    for k in (first, second):
        m["cases"][k]["file"] = next(f for f in m["files"] if f not in (others[first], others[second]))
    _write_manifest(root, m)
    problems = golden_build.check(cases, root)
    assert [p.split(":")[0] for p in problems] == [f"unreadable golden {first}", f"unreadable golden {second}"], problems
    assert all(p.endswith("is not in its bundle'") for p in problems), problems


def test_check_goes_on_past_the_cases_of_a_corrupted_bundle(root: Path, cases: List[Case]) -> None:
    keys = sorted(golden_source.numeric_cases(cases))
    m = manifest(root)
    bad = m["cases"][keys[0]]["file"]
    later = next(k for k in keys if m["cases"][k]["file"] != bad)
    data = bytearray((root / bad).read_bytes())
    data[len(data) // 2] ^= 0x01
    (root / bad).write_bytes(bytes(data))
    m["cases"][keys[-1] if m["cases"][keys[-1]]["file"] != bad else later]["spec"] = "0" * 16
    _write_manifest(root, m)
    problems = golden_build.check(cases, root)
    assert problems[0] == f"corrupted bundle {bad} (sha256 differs from the manifest)" and len(problems) == 2
    assert problems[1].endswith("(its case changed)"), problems


def test_check_names_every_large_case_stored_as_small(large) -> None:
    cases, root = large
    m = manifest(root)
    rel = "KlDivBackward/00-000000000000.npz"
    m["files"][rel] = "0" * 64
    keys = sorted(golden_source.numeric_cases(cases))
    assert len(keys) == 2
    for k in keys:
        m["cases"][k] = {"spec": m["cases"][k]["spec"], "file": rel}
    _write_manifest(root, m)
    problems = golden_build.check(cases, root)
    assert problems == [f"missing bundle {rel}"] + [
        f"stale golden {k} (stored as small, but the case is large)" for k in keys], problems


def test_check_skips_every_case_of_a_tier_not_asked_for(tmp_path: Path) -> None:
    text = LARGE.replace("cases:\n", "matrices:\n  - {products: [atlas-a2], dtypes: [float32], reductions: [sum],"
                         " logTarget: [false], tier: huge, shapes: [[5000x4, 4, 5000x4], [5001x4, 4, 5001x4]]}\n"
                         "cases:\n") + ("  - {product: atlas-a2, dtypes: float32, reduction: sum, logTarget: false,"
                                          " shapes: [6000x4, 4, 6000x4]}\n")
    cases = load_cases([write(tmp_path, "h.yaml", text)])[0]
    root = tmp_path / "golden"
    golden_build.generate(cases, root)
    huge = sorted(c.datakey for c in cases if c.tier == "huge")
    assert len(huge) == 2
    m = manifest(root)
    later = max(c.datakey for c in cases if c.tier == "default")
    assert later > huge[0]
    m["cases"][later]["sum"] = "0x1.0p+0"
    _write_manifest(root, m)
    skipped: list = []
    problems = golden_build.check(cases, root, skipped=skipped)
    assert skipped == huge and len(problems) == 1 and later in problems[0], problems


def test_generate_rebuilds_a_corrupted_bundle_and_recompresses_none_it_keeps(
        root: Path, cases: List[Case], monkeypatch) -> None:
    before = snapshot(root)
    rel = _bundle_of(root, numeric(cases)[0])
    (root / rel).write_bytes(b"not a zip")
    golden_build.generate(cases, root)
    assert snapshot(root) == before and golden_build.check(cases, root) == []

    def never(members):
        raise AssertionError("a kept bundle was compressed again")
    monkeypatch.setattr(golden_build, "_bundle_bytes", never)
    golden_build.generate(cases, root)                      # nothing changed: every bundle kept as it is
    assert snapshot(root) == before


def test_stored_inputs_with_other_bits_are_stale_past_a_null_input(tmp_path: Path, monkeypatch) -> None:
    text = ("op: BinaryCrossEntropyBackward\ncases:\n"
            "  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2x3, 2x3, 2x3, null]}\n")
    cases = load_cases([write(tmp_path, "b.yaml", text)])[0]
    root = tmp_path / "golden"
    golden_build.generate(cases, root)
    (case,) = numeric(cases)
    stored = GoldenStore(root).load(case)
    key = case.datakey
    assert golden_build._drift(key, case, stored) == []
    bits = np.array(stored.inputs["self"])
    bits.reshape(-1)[0] = np.nextafter(bits.reshape(-1)[0], np.float32(2))    # same dtype and shape
    bad = golden_source.CaseData(dict(stored.inputs, self=bits), stored.golden)
    stale = [f"stale golden {key}: input self differs from what the generator draws now"]
    assert golden_build._drift(key, case, bad) == stale
    real = golden_build.draw_inputs                         # an operator whose NULL input comes first
    monkeypatch.setattr(golden_build, "draw_inputs", lambda c: {"weight": None, **real(c)})
    assert golden_build._drift(key, case, bad) == stale


def test_a_stored_golden_without_the_second_outputs_is_drifted_naming_both_lists(tmp_path: Path) -> None:
    text = ("op: NLLLoss\ncases:\n"
            "  - {product: atlas-a2, dtypes: {inputs: float32, target: int64}, reduction: sum, shapes: [4x5, 4, 5]}\n")
    cases = load_cases([write(tmp_path, "n.yaml", text)])[0]
    root = tmp_path / "golden"
    golden_build.generate(cases, root)
    (case,) = numeric(cases)
    stored = GoldenStore(root).load(case)
    assert golden_build._drift(case.datakey, case, stored) == []
    without = golden_source.CaseData(stored.inputs, stored.golden, {})
    assert golden_build._drift(case.datakey, case, without) == [
        f"drifted golden {case.datakey}: goldens of outputs [] stored, ['totalWeightOut'] recomputed"]


# -- the bundle format, pinned by the committed goldens (issue 21's rerun with the harness fix) ----
FORMAT_OPS = ("NLLLoss", "MseLoss")       # integer inputs and two outputs; a forward sum


@pytest.mark.parametrize("op", FORMAT_OPS)
def test_a_committed_bundle_made_again_from_its_own_arrays_is_the_same_bytes(op: str) -> None:
    """What _bundle_bytes writes (member order, 8-byte alignment, the index's JSON, zip dates,
    modes and compression) is the committed format: made again from the arrays it holds, every
    committed bundle of `op` comes out byte for byte. No arithmetic runs, so no machine differs."""
    bundles = sorted((ROOT / "golden" / op).glob("*.npz"))
    assert len(bundles) == golden_source.BUCKETS
    for path in bundles:
        data = path.read_bytes()
        index, raw = golden_bundle._read_bundle(data)
        arrays = {key: golden_bundle._unpack(index, raw, key) for key in index}
        assert golden_bundle._bundle_bytes(arrays) == data, path.name


def test_every_committed_small_case_is_in_the_bucket_its_datakey_names() -> None:
    """bucket_of is part of the format: the committed manifest puts each case in the bundle of
    the first four bytes of its datakey's sha256, read little-endian, modulo the buckets."""
    m = json.loads((ROOT / "golden" / "manifest.json").read_text())
    files = {key: e["file"] for key, e in m["cases"].items() if "file" in e}     # <op>/<bucket>-<sha12>.npz
    assert len(files) > 1000
    for key, rel in files.items():
        op = rel.split("/")[0]
        assert rel.startswith(f"{op}/{golden_source.bucket_of(key):02d}-"), key


def test_a_goldens_members_are_float64_and_int64_and_name_only_what_differs() -> None:
    """scale is stored only where it differs from |out| (NaN where out is NaN is no difference),
    path only where it differs from scale (an equal copy is no difference), every array as float64
    and the number of terms as int64 whatever they were computed in; another output's members
    carry its suffix."""
    out = np.array([1.0, -2.0, np.nan], np.float32)
    plain = golden_bundle._golden_members(ops_base.Golden(out=out, scale=np.abs(out), nterms=np.int32(1)), "")
    assert sorted(plain) == ["nterms", "out"]
    assert plain["out"].dtype == np.float64 and plain["nterms"].dtype == np.int64
    np.testing.assert_array_equal(plain["out"], out.astype(np.float64))
    scale = np.array([3.0, 2.0, np.nan], np.float32)
    same_path = golden_bundle._golden_members(
        ops_base.Golden(out=out, scale=scale, nterms=np.int32(4), path=scale.copy()), ".totalWeight")
    assert sorted(same_path) == ["nterms.totalWeight", "out.totalWeight", "scale.totalWeight"]
    assert same_path["scale.totalWeight"].dtype == np.float64 and same_path["nterms.totalWeight"] == 4
    path = np.array([5.0, 2.0, np.nan], np.float32)
    own_path = golden_bundle._golden_members(ops_base.Golden(out=out, scale=scale, nterms=4, path=path), "")
    assert sorted(own_path) == ["nterms", "out", "path", "scale"] and own_path["path"].dtype == np.float64
    np.testing.assert_array_equal(own_path["path"], path.astype(np.float64))


def test_a_case_gone_from_a_bundle_is_gone_from_its_bytes_not_kept_with_the_rest(tmp_path: Path) -> None:
    """generate reuses a committed bundle's bytes only when it keeps every case of that bundle and
    no other: with one case dropped, the bundle is written again without it."""
    all_cases = _stored("nll_loss.yaml")
    root = tmp_path / "golden"
    golden_build.generate(all_cases, root)
    gone = sorted(golden_source.numeric_cases(all_cases))[0]
    rest = [c for c in all_cases if c.datakey != gone]
    bucket = manifest(root)["cases"][gone]["file"].split("-")[0] + "-"
    stats = golden_build.generate(rest, root)
    assert stats["written"] == 1
    m = manifest(root)
    [rel] = {e["file"] for e in m["cases"].values() if e["file"].startswith(bucket)}
    index, _ = golden_bundle._read_bundle((root / rel).read_bytes())
    assert len(index) > 1 and gone not in index
    assert set(index) == {k for k, e in m["cases"].items() if e["file"] == rel}
    assert golden_build.check(rest, root) == []


# -- what generate did, counted, and what it keeps (issue 21's rerun with the harness fix) --------
def _stored(case_file: str) -> List[Case]:
    """The committed small cases of one of the project's case files."""
    return [c for c in load_cases([ROOT / "cases" / case_file])[0] if golden_source.is_stored(c)]


def _case_arrays(root: Path, key: str) -> Dict[str, np.ndarray]:
    """A case's arrays as its bundle in `root` holds them now."""
    return golden_bundle._unpack(*golden_bundle._read_bundle(
        (root / manifest(root)["cases"][key]["file"]).read_bytes()), key)


def test_generate_counts_each_thing_it_did_says_its_progress_and_caches_what_it_computed(tmp_path: Path) -> None:
    """The counts the CLI prints are what happened: every case, bundle, write, removal, byte and
    large case; progress for every case, with the time left; a large sum's golden goes into the cache it is given;
    a run with nothing to do removes the orphans and the stray temporary file and writes nothing,
    not even the manifest again."""
    small = _stored("kl_div.yaml")
    (tmp_path / "large").mkdir()
    big, _ = generated(tmp_path / "large", LARGE)
    cases = small + big
    n = len(golden_source.numeric_cases(cases))
    assert n > 500 and len(golden_source.numeric_cases(big)) == 2
    root, said = tmp_path / "golden", []
    cache = golden_cache.GoldenCache(tmp_path / "cache")
    stats = golden_build.generate(cases, root, progress=said.append, cache=cache)
    bundles = sorted(root.glob("*/*.npz"))
    assert len(bundles) == golden_source.BUCKETS
    assert stats == {"cases": n, "bundles": len(bundles), "written": len(bundles), "removed": 0,
                     "bytes": sum(p.stat().st_size for p in bundles), "large": 2}
    assert len(said) == n and said[0].startswith(f"1/{n} cases, ") and said[-1].startswith(f"{n}/{n} cases, ")
    assert all(" so far, about " in line and " left (" in line for line in said)
    [summed] = [c for c in big if c.reduction != 0]
    cached = cache.get(summed)
    assert cached is not None and cached.nterms == 3001
    np.testing.assert_array_equal(cached.out, GoldenStore(root).load(summed).golden.out)

    for orphan in (root / "KlDiv" / "00-000000000000.npz", root / "KlDiv" / "01-000000000000.npz"):
        orphan.write_bytes(b"not a bundle")
    stray = root / "KlDiv" / ".00-x.npz.tmp"
    stray.write_bytes(b"half written")
    before = (root / "manifest.json").stat().st_ino
    stats = golden_build.generate(cases, root)
    assert stats == {"cases": n, "bundles": len(bundles), "written": 0, "removed": 2,
                     "bytes": sum(p.stat().st_size for p in bundles), "large": 2}
    assert sorted(root.glob("*/*.npz")) == bundles and not stray.exists()
    assert (root / "manifest.json").stat().st_ino == before


@pytest.mark.parametrize("gone", ["leftover", "orphan"])
def test_a_leftover_or_orphan_another_generate_removed_first_is_no_error(tmp_path: Path, monkeypatch, gone) -> None:
    """Two generates at once (two terminals, a CI retry): a file listed for removal may be gone by
    the time it is unlinked."""
    cases = _stored("kl_div.yaml")
    root = tmp_path / "golden"
    golden_build.generate(cases, root)
    if gone == "leftover":
        monkeypatch.setattr(golden_build, "_leftovers", lambda r: [Path(r) / "KlDiv" / ".gone.npz.tmp"])
    else:
        class Listed(type(root)):                    # generate's root lists one bundle more than is there
            def glob(self, pattern):
                return [*super().glob(pattern), self / "KlDiv" / "00-gone.npz"]
        monkeypatch.setattr(golden_build, "Path", Listed)
    assert golden_build.generate(cases, root)["removed"] == 0


def test_an_interrupted_generate_undoes_its_new_bundles_even_where_one_is_already_gone(tmp_path: Path, monkeypatch) -> None:
    """The interrupt is what the run ends with, not a FileNotFoundError from the undo."""
    cases = _stored("kl_div.yaml")
    root = tmp_path / "golden"
    real = golden_build.atomic_write

    def interrupted(path, data):
        if path.name == "manifest.json":
            next(root.glob("*/*.npz")).unlink()          # removed by someone else meanwhile
            raise KeyboardInterrupt
        real(path, data)
    monkeypatch.setattr(golden_build, "atomic_write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        golden_build.generate(cases, root)
    assert list(root.glob("*/*.npz")) == []


@pytest.mark.parametrize("edit", ["input bits", "input dtype", "second output", "spec"])
def test_a_stored_case_is_kept_only_while_its_inputs_spec_and_every_output_agree(tmp_path: Path, edit: str) -> None:
    """generate keeps a committed case's arrays only where they are what it would write: the same
    spec, inputs of the same dtype, shape and bits, and each output's golden within the drift
    limit (the second output of NLLLoss too). Otherwise the case is computed and written again."""
    cases = _stored("nll_loss.yaml")
    root = tmp_path / "golden"
    golden_build.generate(cases, root)
    numeric = golden_source.numeric_cases(cases)
    case = next(numeric[k] for k in sorted(numeric) for a in [_case_arrays(root, k)]     # read once, up to the first
                if a["in.self"].dtype == np.float16 and "out.totalWeightOut" in a and np.isfinite(a["out"]).all())
    fresh = {k: np.array(a) for k, a in _case_arrays(root, case.datakey).items()}
    if edit == "input bits":
        rewrite_bundle(root, case, lambda m: m.__setitem__("in.self", -m["in.self"]))
    elif edit == "input dtype":                          # the same bits, read as another 16-bit type
        rewrite_bundle(root, case, lambda m: m.__setitem__("in.self", m["in.self"].view(dtypes.dtype_of("bfloat16"))))
    elif edit == "second output":
        rewrite_bundle(root, case, lambda m: m.__setitem__("out.totalWeightOut", m["out.totalWeightOut"] + 1.0))
    else:
        m = manifest(root)
        m["cases"][case.datakey]["spec"] = "0" * 16
        (root / "manifest.json").write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")
        rewrite_bundle(root, case, lambda m: m.__setitem__("out", ulps(m["out"], 3)))    # within the limit
    assert golden_build.generate(cases, root)["written"] == 1
    got = _case_arrays(root, case.datakey)
    assert sorted(got) == sorted(fresh)
    for name, a in fresh.items():
        assert got[name].dtype == a.dtype and np.array_equal(dtypes.to_bits(got[name]), dtypes.to_bits(a)), name
    assert golden_build.check(cases, root) == []


def test_a_kept_case_keeps_its_stored_arrays_when_its_bundle_is_written_again(tmp_path: Path) -> None:
    """A bundle written again (another of its cases changed) carries the kept cases' stored arrays,
    not a recomputation: a golden within the drift limit stays as committed, so a machine whose exp
    differs in the last bits does not rewrite it."""
    cases = _stored("nll_loss.yaml")
    root = tmp_path / "golden"
    golden_build.generate(cases, root)

    by_file: Dict[str, List[str]] = {}
    for k, e in sorted(manifest(root)["cases"].items()):
        out = _case_arrays(root, k)["out"]
        if out.size and np.isfinite(out).all():
            by_file.setdefault(e["file"], []).append(k)
    keep, change = next(ks for ks in by_file.values() if len(ks) >= 2)[:2]
    numeric = golden_source.numeric_cases(cases)
    rewrite_bundle(root, numeric[keep], lambda a: a.__setitem__("out", ulps(a["out"], 3)))     # within the limit
    rewrite_bundle(root, numeric[change], lambda a: a.__setitem__("out", a["out"] + 1.0))       # past it
    kept_out = np.array(_case_arrays(root, keep)["out"])
    assert golden_build.generate(cases, root)["written"] == 1
    assert _case_arrays(root, keep)["out"].tobytes() == kept_out.tobytes()
    assert golden_build.check(cases, root) == []


def test_a_bundle_that_matches_its_sha_but_is_no_zip_is_one_error_saying_regenerate(root: Path, cases: List[Case]) -> None:
    m = manifest(root)
    rel = _bundle_of(root, numeric(cases)[0])
    (root / rel).write_bytes(b"not a zip")
    m["files"][rel] = golden_bundle._sha256(b"not a zip")
    (root / "manifest.json").write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")
    with pytest.raises(GoldenError) as e:
        GoldenStore(root).load(numeric(cases)[0])
    assert str(e.value).startswith(f"golden bundle {root / rel} is unreadable (") and str(e.value).endswith("); regenerate")


class _Touches:
    """A pickled object that creates a file when it is unpickled: what a bundle must never run."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def test_a_bundle_with_a_pickled_member_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    import io
    import zipfile
    sentinel = tmp_path / "pwned"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, arr in (("data.npy", np.zeros(8, np.uint8)), ("index.npy", np.array([_Touches(sentinel)], dtype=object))):
            member = io.BytesIO()
            np.save(member, arr, allow_pickle=True)
            z.writestr(name, member.getvalue())
    with pytest.raises(ValueError):
        golden_bundle._read_bundle(buf.getvalue())
    assert not sentinel.exists()


def test_a_case_the_manifest_lacks_is_one_error_saying_generate(root: Path, cases: List[Case]) -> None:
    case = dataclasses.replace(numeric(cases)[0], datakey="NoSuchCase")
    with pytest.raises(GoldenError) as e:
        GoldenStore(root).entry(case)
    assert str(e.value) == "no golden for NoSuchCase; run `aclnn-conform golden generate`"


# -- what generate costs (issue 42, item 3; the figures: benchmarks/golden_generate_bench.py) ------
ELEMENTWISE = """
op: MseLoss
cases:
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2048x1024, 2048x1024]}
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2048x1025, 2048x1025]}
"""


def test_generate_holds_one_cases_inputs_at_a_time_and_never_a_whole_elementwise_golden(tmp_path: Path) -> None:
    """Two large elementwise cases (16.8 MB of float32 inputs each, 33.5 MB as a float64 golden):
    generate's peak is one case's inputs and a few block-sized temporaries (the draw's and the
    fingerprint's 65,536-element runs, about 7 MB whatever the case's size), not a held golden
    beside them (its out and |out|) nor two cases' arrays at once (101 MB before issue 42)."""
    import tracemalloc
    cases = load_cases([write(tmp_path, "wide.yaml", ELEMENTWISE)])[0]
    inputs = max(sum(a.nbytes for a in values.draw_inputs(c).values() if a is not None) for c in cases)
    tracemalloc.start()
    try:
        golden_build.generate(cases, tmp_path / "golden")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert inputs < peak < inputs + 10e6, (inputs, peak)
    assert golden_build.check(cases, tmp_path / "golden") == []


def test_a_fingerprint_is_the_same_bits_from_a_held_golden_and_from_one_computed_block_by_block(tmp_path) -> None:
    """The computed golden's blocks are rows (60,002 elements of 3x30001 here), the held one's
    flat 65,536-element slices: the fingerprint sums the same runs of both, so generate may
    compute instead of holding without changing one committed fingerprint."""
    [case] = load_cases([write(tmp_path, "rows.yaml", """
op: MseLoss
cases:
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [3x30001, 3x30001]}
""")])[0]
    x = values.draw_inputs(case)
    held = golden_cache.fingerprint(case, x, golden_source.Materialized(golden_source.compute(case, x)))
    computed = golden_cache.fingerprint(case, x, golden_source.Elementwise(case.op, x, case.attrs))
    assert computed == held
    runs = list(golden_cache._runs(golden_source.Elementwise(case.op, x, case.attrs).blocks(), 1 << 16))
    assert [s for s, *_ in runs] == [0, 65536] and [r[1].size for r in runs] == [65536, 90003 - 65536]
