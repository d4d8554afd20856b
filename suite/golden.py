"""Golden data: each numeric case's exact inputs and float64 result, in deterministic zip bundles
with a manifest of sha256s.

Layout: golden/manifest.json and golden/<op>/<bucket>-<sha12>.npz. A case's data lives in the
bucket its datakey hashes to, so adding a case rewrites one bundle, not all. Bundles are named by
content: `generate` writes new bundles, then swaps the manifest in atomically, then removes what the
new manifest no longer names; an interrupted run leaves the previous manifest and bundles intact.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple

import numpy as np

from suite import dtypes, ops
from suite.cases import NUMBERS, Case
from suite.ops.base import Golden, widen

GENERATOR_VERSION = "1"
FORMAT = 1
MANIFEST = "manifest.json"
BUCKETS = 16
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class GoldenError(Exception):
    """The goldens cannot be used as they are; the message says what to run."""


@dataclass
class CaseData:
    """What a numeric case needs at run time: exact inputs in their dtypes, and the golden."""

    inputs: Dict[str, np.ndarray]
    golden: Golden


# -- inputs ------------------------------------------------------------------------------------
def make_inputs(case: Case) -> Dict[str, Optional[np.ndarray]]:
    """The case's inputs, drawn from its seed (None for a NULL tensor)."""
    op = ops.get(case.op)
    sig = case.signature
    live = {n: s for n, s in sig.shapes.items() if s is not None}
    draw_sig = type(sig)(live, {n: sig.dtypes[n] for n in live}, sig.out_shape,
                         sig.out_dtype or sig.dtypes.get("self") or "float32", sig.attrs, sig.product)
    rng = np.random.default_rng(case.seed)
    draws = op.value_sets[case.values](draw_sig, rng)
    out: Dict[str, Optional[np.ndarray]] = {}
    for n in op.inputs:
        if n not in live:
            out[n] = None
            continue
        dt = dtypes.dtype_of(sig.dtypes[n])
        out[n] = dtypes.round_to(np.asarray(draws[n], dtype=np.float64).reshape(live[n]), dt)
    return out


def compute(case: Case, inputs: Mapping[str, np.ndarray]) -> Golden:
    op = ops.get(case.op)
    return op.golden(widen(inputs), dict(case.attrs))


def spec_hash(case: Case) -> str:
    """Everything a case's data depends on; a change makes the stored golden stale."""
    sig = case.signature
    doc = {"v": GENERATOR_VERSION, "op": case.op, "dtypes": sig.dtypes, "out": sig.out_dtype,
           "shapes": {k: list(v) for k, v in sig.shapes.items()}, "attrs": sig.attrs,
           "values": case.values, "seed": case.seed}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def bucket_of(datakey: str) -> int:
    return int.from_bytes(hashlib.sha256(datakey.encode()).digest()[:4], "little") % BUCKETS


def numeric_cases(cases: Iterable[Case]) -> Dict[str, Case]:
    """One representative case per datakey (products and layouts share data)."""
    out: Dict[str, Case] = {}
    for c in cases:
        if c.expect == NUMBERS and c.datakey not in out:
            out[c.datakey] = c
    return out


# -- bundles -----------------------------------------------------------------------------------
def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a, order="C"), allow_pickle=False)
    return buf.getvalue()


def _members(case: Case, data: CaseData) -> Dict[str, bytes]:
    m = {}
    for n, a in data.inputs.items():
        m[f"{case.datakey}/in.{n}.{dtypes.name_of(a.dtype)}.npy"] = _npy(dtypes.to_bits(a))
    m[f"{case.datakey}/out.npy"] = _npy(data.golden.out)
    if not np.array_equal(data.golden.scale, np.abs(data.golden.out), equal_nan=True):
        m[f"{case.datakey}/scale.npy"] = _npy(data.golden.scale)
    m[f"{case.datakey}/nterms.npy"] = _npy(np.array(data.golden.nterms, dtype=np.int64))
    return m


def _bundle_bytes(members: Mapping[str, bytes]) -> bytes:
    """A zip that np.load reads lazily, byte-identical for identical content (fixed dates, order)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, members[name], compresslevel=6)
    return buf.getvalue()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())          # mkstemp's 0600 would hide reports from others
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read_case(npz, datakey: str, names: List[str]) -> CaseData:
    prefix = datakey + "/"
    inputs: Dict[str, np.ndarray] = {}
    for member in names:
        if member.startswith(prefix + "in."):
            _, name, dname = member[len(prefix):].split(".")
            inputs[name] = dtypes.from_bits(npz[member], dname)
    out = npz[prefix + "out"]
    scale = npz[prefix + "scale"] if prefix + "scale" in names else np.abs(out)
    return CaseData(inputs, Golden(out=out, scale=scale, nterms=int(npz[prefix + "nterms"])))


# -- the store ---------------------------------------------------------------------------------
class GoldenStore:
    """Read side: loads the manifest once, and each bundle's members only when a case asks."""

    def __init__(self, root: Path, manifest: Optional[dict] = None) -> None:
        self.root = Path(root)
        self._manifest = manifest
        self._open: Dict[str, Tuple[object, List[str]]] = {}

    @property
    def manifest(self) -> dict:
        if self._manifest is None:
            self._manifest = read_manifest(self.root)
        return self._manifest

    def manifest_hash(self) -> str:
        path = self.root / MANIFEST
        return _sha256(path.read_bytes()) if path.exists() else ""

    def load(self, case: Case) -> CaseData:
        entry = self.manifest["cases"].get(case.datakey)
        if entry is None:
            raise GoldenError(f"no golden for {case.datakey}; run `aclnn-conform golden generate`")
        if entry["spec"] != spec_hash(case):
            raise GoldenError(f"the golden for {case.datakey} is stale (its case changed); "
                              f"run `aclnn-conform golden generate`")
        npz, names = self._bundle(entry["file"])
        return _read_case(npz, case.datakey, names)

    def _bundle(self, rel: str):
        if rel not in self._open:
            path = self.root / rel
            try:
                data = path.read_bytes()
            except OSError:
                raise GoldenError(f"golden bundle {path} is missing; run `aclnn-conform golden generate`") from None
            want = self.manifest["files"].get(rel)
            if _sha256(data) != want:
                raise GoldenError(f"golden bundle {path} is corrupted (sha256 differs from the "
                                  f"manifest); restore it from git or regenerate")
            npz = np.load(io.BytesIO(data), allow_pickle=False)
            self._open[rel] = (npz, list(npz.files))
        return self._open[rel]


def read_manifest(root: Path) -> dict:
    path = Path(root) / MANIFEST
    try:
        m = json.loads(path.read_text())
    except FileNotFoundError:
        raise GoldenError(f"no golden manifest at {path}; run `aclnn-conform golden generate`") from None
    except (OSError, ValueError) as e:
        raise GoldenError(f"golden manifest {path} is unreadable: {e}") from None
    if m.get("format") != FORMAT or not isinstance(m.get("cases"), dict) or not isinstance(m.get("files"), dict):
        raise GoldenError(f"golden manifest {path} has an unknown format; regenerate")
    return m


# -- generate and check ------------------------------------------------------------------------
def _case_data(case: Case) -> CaseData:
    inputs = make_inputs(case)
    return CaseData(inputs, compute(case, inputs))


def generate(cases: Iterable[Case], root: Path, progress: Callable[[str], None] = lambda s: None) -> dict:
    """Write every numeric case's golden; returns counts. Idempotent and atomic (module docstring)."""
    root = Path(root)
    per_bundle: Dict[str, Dict[str, bytes]] = {}
    entries: Dict[str, dict] = {}
    todo = numeric_cases(cases)
    for i, (key, case) in enumerate(sorted(todo.items())):
        group = f"{case.op}/{bucket_of(key):02d}"
        per_bundle.setdefault(group, {}).update(_members(case, _case_data(case)))
        entries[key] = {"group": group, "spec": spec_hash(case)}
        if i % 500 == 0:
            progress(f"{i}/{len(todo)} cases")
    files: Dict[str, str] = {}
    file_of: Dict[str, str] = {}
    written = 0
    added: List[Path] = []                 # bundles this run created, undone if it is interrupted
    try:
        for group, members in sorted(per_bundle.items()):
            data = _bundle_bytes(members)
            sha = _sha256(data)
            rel = file_of[group] = f"{group}-{sha[:12]}.npz"
            files[rel] = sha
            path = root / rel
            existed = path.exists()
            if not (existed and _sha256(path.read_bytes()) == sha):
                atomic_write(path, data)
                written += 1
                if not existed:
                    added.append(path)
        for e in entries.values():
            e["file"] = file_of[e.pop("group")]
        manifest = {"format": FORMAT, "generator_version": GENERATOR_VERSION,
                    "files": dict(sorted(files.items())),
                    "cases": {k: entries[k] for k in sorted(entries)}}
        text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
        old = (root / MANIFEST).read_text() if (root / MANIFEST).exists() else None
        if text != old:
            atomic_write(root / MANIFEST, text.encode())
    except BaseException:
        for p in added:                    # the old manifest does not name them: orphans otherwise
            p.unlink(missing_ok=True)
        raise
    removed = 0
    for p in sorted(root.glob("*/*.npz")):
        if p.relative_to(root).as_posix() not in files:
            p.unlink()
            removed += 1
    size = sum((root / r).stat().st_size for r in files)
    return {"cases": len(entries), "bundles": len(files), "written": written, "removed": removed,
            "bytes": size}


DRIFT_ULPS = 4


def check(cases: Iterable[Case], root: Path) -> List[str]:
    """Every problem with the goldens as one line each; empty when complete, intact and current."""
    root = Path(root)
    try:
        m = read_manifest(root)
    except GoldenError as e:
        return [str(e)]
    problems: List[str] = []
    if m.get("generator_version") != GENERATOR_VERSION:
        problems.append(f"goldens were made by generator version {m.get('generator_version')}, "
                        f"this is {GENERATOR_VERSION}: stale")
    store = GoldenStore(root, manifest=m)
    for rel, sha in m["files"].items():
        path = root / rel
        if not path.exists():
            problems.append(f"missing bundle {rel}")
        elif _sha256(path.read_bytes()) != sha:
            problems.append(f"corrupted bundle {rel} (sha256 differs from the manifest)")
    for p in sorted(root.glob("*/*.npz")):
        rel = p.relative_to(root).as_posix()
        if rel not in m["files"]:
            problems.append(f"orphaned file {rel} (not in the manifest)")
    want = numeric_cases(cases)
    for key in sorted(set(m["cases"]) - set(want)):
        problems.append(f"orphaned golden {key} (no case makes it)")
    bad_files = {p.split()[-1] for p in problems if p.startswith(("missing bundle", "corrupted"))}
    for key, case in sorted(want.items()):
        entry = m["cases"].get(key)
        if entry is None:
            problems.append(f"missing golden {key}")
            continue
        if entry["spec"] != spec_hash(case):
            problems.append(f"stale golden {key} (its case changed)")
            continue
        if entry["file"] in bad_files:
            continue
        try:
            stored = store.load(case)
        except (GoldenError, KeyError, ValueError) as e:
            problems.append(f"unreadable golden {key}: {e}")
            continue
        problems.extend(_drift(key, case, stored))
    return problems


def _drift(key: str, case: Case, stored: CaseData) -> List[str]:
    fresh = make_inputs(case)
    for n, a in fresh.items():
        s = stored.inputs.get(n)
        if s is None or s.dtype != a.dtype or s.shape != a.shape or not np.array_equal(
                dtypes.to_bits(s), dtypes.to_bits(a)):
            return [f"stale golden {key}: input {n} differs from what the generator draws now"]
    g = compute(case, stored.inputs)
    a, b = g.out, stored.golden.out
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return [f"drifted golden {key}: shape or NaN positions differ"]
    fin = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(a[~fin & ~np.isnan(a)], b[~fin & ~np.isnan(b)]):
        return [f"drifted golden {key}: infinities differ"]
    tol = DRIFT_ULPS * np.spacing(np.maximum(np.abs(g.scale[fin]), np.abs(a[fin])))
    err = np.abs(a[fin] - b[fin])
    if np.any(err > tol):
        worst = float(np.max(err / np.where(tol > 0, tol, 1) * DRIFT_ULPS))
        return [f"drifted golden {key}: recomputed result differs by {worst:.1f} float64 ulps "
                f"(limit {DRIFT_ULPS})"]
    return []
