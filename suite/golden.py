"""Golden data: each numeric case's exact inputs and float64 result.

Small cases (up to STORED_LIMIT elements) are committed: their inputs and golden live in
deterministic zip bundles, golden/<op>/<bucket>-<sha12>.npz, listed with their sha256s in
golden/manifest.json. A case's data lives in the bucket its datakey hashes to, so adding a case
rewrites one bundle, not all. Bundles are named by content: `generate` writes new bundles, then
swaps the manifest in atomically, then removes what the new manifest no longer names; an
interrupted run leaves the previous manifest and bundles intact.

Large cases (the scale sets) commit no arrays. Their inputs are drawn on demand from the case's
seed (suite/draw.py: the same bits on any machine and numpy), and their golden is computed on
demand in float64, block by block, then kept in the user's cache (GoldenCache). The manifest holds
a fingerprint of each instead: the sha256 of every input and samples and sums of the golden (of its
scale and path too, for a sum), so `golden check` still proves that what a machine draws and
computes is what was generated.

What a run trusts (docs/scale.md, "What a run trusts"): the backend's process may rewrite any
file, the cache and golden/ included, with sha256s that agree. So the parent judges only with
- a small case's arrays from a bundle whose sha256 is the one in the manifest it read before the
  backend started (GoldenStore.pin; results.json records that manifest's hash, and `report diff`
  fails when it is not the baseline's);
- a large case's golden it computed itself in this process and checked against the fingerprint,
  or read back from the cache with exactly the sha256s it wrote (kept in memory). An entry left by
  an earlier run is never used: a fingerprint tolerant of float64 drift cannot tell a crafted
  change from drift, and recomputing costs about what reading and hashing the entry does.
"""
from __future__ import annotations

import hashlib
import io
import math
import json
import os
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import numpy as np

from suite import blocks, draw, dtypes, jsonfile, ops
from suite.values import draw_inputs
from suite.cases import NUMBERS, STORED_LIMIT, Case
from suite.ops.base import Golden, numel, present

GENERATOR_VERSION = "2"
FORMAT = 3
SAMPLES = 16                     # golden elements a large case's fingerprint keeps
MANIFEST = "manifest.json"
BUCKETS = 16
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
# The default of the `blocks` methods: inside their classes the name `blocks` is the method once it is
# defined (mutmut defines copies of each method after it), not the module.
_BLOCK = blocks.BLOCK


class GoldenError(Exception):
    """The goldens cannot be used as they are; the message says what to run."""


@dataclass
class CaseData:
    """What a numeric case needs at run time: exact inputs in their dtypes, and the golden."""

    inputs: Dict[str, np.ndarray]
    golden: "GoldenSource"


class GoldenSource:
    """A float64 golden that judging reads block by block: materialized (`Golden`) or, for an
    elementwise result too large to hold, computed from the inputs as each block is read."""

    shape: Tuple[int, ...]
    nterms: int

    def blocks(self, limit: int = _BLOCK) -> Iterator[Tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """(flat start, golden, sum of the terms' magnitudes, sum of the partial sums' magnitudes)
        of consecutive runs of the flattened output (see ops.base.Golden)."""
        raise NotImplementedError


class Materialized(GoldenSource):
    def __init__(self, golden: Golden) -> None:
        self.golden = golden
        self.shape = tuple(golden.out.shape)
        self.nterms = golden.nterms

    def blocks(self, limit: int = _BLOCK):
        out = self.golden.out.reshape(-1)
        scale = np.broadcast_to(self.golden.scale, self.shape).reshape(-1)
        path = np.broadcast_to(self.golden.path, self.shape).reshape(-1)
        for i in range(0, out.size, limit):
            yield i, out[i:i + limit], scale[i:i + limit], path[i:i + limit]

    # what tests and messages read
    @property
    def out(self) -> np.ndarray:
        return self.golden.out

    @property
    def scale(self) -> np.ndarray:
        return self.golden.scale


class Elementwise(GoldenSource):
    """An elementwise golden (one term per element) computed as it is read: never held whole."""

    def __init__(self, op_name: str, inputs: Mapping[str, np.ndarray], attrs: Mapping) -> None:
        self.op = ops.get(op_name)
        self.inputs, self.attrs = present(inputs), dict(attrs)
        self.shape = tuple(self.op.out_shape({n: tuple(a.shape) for n, a in self.inputs.items()}))
        self.nterms = 1

    def blocks(self, limit: int = _BLOCK):
        start = 0
        for _, t in self.op.term_blocks(self.inputs, self.attrs, np.float64, limit):
            t = t.reshape(-1)
            a = np.abs(t)
            yield start, t, a, a
            start += t.size


def compute(case: Case, inputs: Mapping[str, np.ndarray]) -> Golden:
    return ops.get(case.op).golden(inputs, dict(case.attrs))


def is_stored(case: Case) -> bool:
    """Committed to golden/ (small), or drawn and computed on demand (large, and every case of a
    generated scale set, whatever its size)."""
    return case.elements <= STORED_LIMIT and not case.generated


def spec_hash(case: Case) -> str:
    """Everything a case's data depends on; a change makes the stored golden stale."""
    key = (case.op, case.dtypes, case.out_dtype, case.shapes, case.attrs, case.values, case.datakey)
    if key not in _SPECS:
        _SPECS[key] = _spec_hash(case)
    return _SPECS[key]


_SPECS: Dict[tuple, str] = {}


def _spec_hash(case: Case) -> str:
    sig = case.signature
    doc = {"v": GENERATOR_VERSION, "op": case.op, "dtypes": sig.dtypes, "out": sig.out_dtype,
           "shapes": {k: None if v is None else list(v) for k, v in sig.shapes.items()}, "attrs": sig.attrs,
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


def _members(case: Case, inputs: Mapping[str, np.ndarray], g: Golden) -> Dict[str, np.ndarray]:
    """A case's arrays in a bundle: its inputs in their dtypes, the golden, the sum of magnitudes
    where it differs from |golden|, and the number of terms."""
    m = {f"in.{n}": np.asarray(a) for n, a in inputs.items() if a is not None}
    m["out"] = np.asarray(g.out, dtype=np.float64)
    if not np.array_equal(g.scale, np.abs(g.out), equal_nan=True):
        m["scale"] = np.asarray(g.scale, dtype=np.float64)
    if g.path is not g.scale and not np.array_equal(g.path, g.scale, equal_nan=True):
        m["path"] = np.asarray(g.path, dtype=np.float64)
    m["nterms"] = np.array(g.nterms, dtype=np.int64)
    return m


def _bundle_bytes(cases: Mapping[str, Mapping[str, np.ndarray]]) -> bytes:
    """One zip with two members that np.load reads: `data`, every array's raw bytes one after the
    other (8-byte aligned; bfloat16 as its bits, with its dtype name in the index), and `index`, a
    JSON map of datakey -> array name -> [dtype, shape, offset]. Reading a bundle is one
    decompression, and a case's arrays are views into it. Byte-identical for identical content."""
    index: Dict[str, Dict[str, list]] = {}
    chunks: List[bytes] = []
    offset = 0
    for key in sorted(cases):
        index[key] = {}
        for name in sorted(cases[key]):
            a = np.asarray(cases[key][name], order="C")     # (ascontiguousarray makes 0-d 1-d)
            raw = a.tobytes()
            index[key][name] = [dtypes.name_of(a.dtype), list(a.shape), offset]
            pad = -len(raw) % 8
            chunks.append(raw + b"\0" * pad)
            offset += len(raw) + pad
    data = np.frombuffer(b"".join(chunks), dtype=np.uint8)
    text = np.frombuffer(json.dumps(index, sort_keys=True, separators=(",", ":")).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, arr in (("data.npy", data), ("index.npy", text)):
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, _npy(arr), compresslevel=6)
    return buf.getvalue()


def _read_bundle(data: bytes) -> Tuple[dict, bytes]:
    npz = np.load(io.BytesIO(data), allow_pickle=False)
    index = json.loads(npz["index"].tobytes().decode())
    return index, npz["data"].tobytes()


_STORED_DTYPES = {"float64": np.dtype(np.float64), "int64": np.dtype(np.int64)}


def _unpack(index: dict, data: bytes, key: str) -> Dict[str, np.ndarray]:
    """A case's arrays, as read-only views of the bundle's bytes."""
    out = {}
    for name, (dname, shape, offset) in index[key].items():
        dt = _STORED_DTYPES.get(dname) or dtypes.dtype_of(dname)
        out[name] = np.frombuffer(data, dtype=dt, count=math.prod(shape), offset=offset).reshape(tuple(shape))
    return out


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


def _read_case(bundle: Tuple[dict, bytes], datakey: str) -> CaseData:
    index, data = bundle
    if datakey not in index:
        raise KeyError(f"{datakey} is not in its bundle")
    arrays = _unpack(index, data, datakey)
    inputs = {k[3:]: v for k, v in arrays.items() if k.startswith("in.")}
    out = arrays["out"]
    scale = arrays["scale"] if "scale" in arrays else np.abs(out)
    return CaseData(inputs, Materialized(Golden(out=out, scale=scale, nterms=int(arrays["nterms"]),
                                                path=arrays.get("path"))))


# -- large cases: fingerprints and the cache ------------------------------------------------------
def _hex(v: float) -> str:
    return float(v).hex()


def _sample_at(case: Case, n: int) -> List[int]:
    """Flat positions a large case's fingerprint samples: both ends and a fixed pseudo-random rest."""
    if n == 0:
        return []
    picks = draw.Stream(case.seed, "golden-samples").raw(SAMPLES - 2) % np.uint64(n)
    return sorted({0, n - 1, *(int(i) for i in picks)})


def fingerprint(case: Case, inputs: Optional[Mapping[str, np.ndarray]], source: GoldenSource) -> dict:
    """What the manifest keeps of a large case instead of its arrays (see module docstring). Every
    array judging reads is covered, so a recomputation that differs in any of them is caught
    (`compare_fingerprints`): `out` sampled at fixed positions and summed (finite elements), its
    NaN/inf positions, and the number of terms. Where the golden is a sum (nterms > 1), `scale`
    and `path` too: sampled at the same positions, summed, and their NaN/inf positions hashed with
    out's. Where it is elementwise, both are |out| by definition, and this checks that of the
    golden it is given (so out's fingerprint covers them, and the fingerprints of elementwise
    cases made before scale and path were added stay valid: 9 of the huge tier's 11, minutes each
    to make). With no `inputs`, only the golden's part (to check a computed golden without hashing
    its inputs)."""
    at = _sample_at(case, numel(source.shape))
    want = iter(at)
    nxt = next(want, None)
    full = source.nterms != 1
    samples: List[list] = []
    sums = {"out": 0.0, "abs": 0.0, "scale": 0.0, "path": 0.0}
    nonfinite = hashlib.sha256()
    for start, out, scale, path in source.blocks():
        if not full and not (_same(scale, np.abs(out)) and _same(path, scale)):
            raise GoldenError(f"golden {case.datakey}: an elementwise golden whose scale or path is not |out|")
        while nxt is not None and nxt < start + out.size:
            i = nxt - start
            samples.append([nxt, _hex(out[i]), _hex(scale[i])] + ([_hex(path[i])] if full else []))
            nxt = next(want, None)
        for name, a in (("out", out), ("scale", scale), ("path", path)) if full else (("out", out),):
            fin = np.isfinite(a)
            sums[name] += float(np.sum(a[fin]))
            if name == "out":
                sums["abs"] += float(np.sum(np.abs(a[fin])))
            nonfinite.update(np.packbits(np.isnan(a)).tobytes() + np.packbits(np.isposinf(a)).tobytes()
                             + np.packbits(np.isneginf(a)).tobytes())
    out = {"samples": samples, "sum": _hex(sums["out"]), "abs_sum": _hex(sums["abs"]),
           "nonfinite": nonfinite.hexdigest()[:32], "nterms": source.nterms}
    if full:
        out.update(scale_sum=_hex(sums["scale"]), path_sum=_hex(sums["path"]))
    if inputs is not None:
        out["inputs"] = {n: draw.digest(a) for n, a in inputs.items() if a is not None}
    return out


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or np.array_equal(a, b, equal_nan=True)


def full_fingerprint(entry: Mapping) -> bool:
    """A fingerprint that covers scale and path: elementwise, or a sum's with both (the generator
    before them kept out's alone)."""
    return entry.get("nterms") == 1 or (
        "scale_sum" in entry and "path_sum" in entry and all(len(x) == 4 for x in entry.get("samples", [])))


def drift_limit(nterms: int) -> float:
    """float64 ulps (of the larger of |golden| and the sum of magnitudes) by which a recomputed
    golden may differ: another machine, numpy or block size sums in another order, and float64
    summation errors grow like sqrt(n) (they matter to nothing judged in float32 or narrower).
    It follows the number of terms each element sums, not the number of elements."""
    return DRIFT_ULPS * max(1.0, math.sqrt(nterms))


def _ulps_over(pairs: Iterable[Tuple[float, float, float]], limit: float) -> Tuple[float, bool]:
    """The worst difference past `limit` float64 ulps (of the larger of the reference and the
    value) of (stored, fresh, reference) triples, and whether a NaN/inf differs (0.0, False: none)."""
    worst = 0.0
    for a, b, ref in pairs:
        if not (math.isfinite(a) and math.isfinite(b)):
            if not (a == b or (math.isnan(a) and math.isnan(b))):
                return 0.0, True
            continue
        ulps = abs(a - b) / math.ulp(max(abs(ref), abs(a), abs(b)) if math.isfinite(ref) else max(abs(a), abs(b)))
        if ulps > limit:
            worst = max(worst, ulps)
    return worst, False


def compare_fingerprints(key: str, stored: dict, fresh: dict) -> List[str]:
    """Problems (one line each) where `fresh` is not what was generated, to drift_limit: inputs,
    NaN/inf positions and the number of terms exactly; out, scale and path at every sample and in
    their sums, to drift_limit(nterms) float64 ulps."""
    for n, sha in fresh.get("inputs", {}).items():
        if stored.get("inputs", {}).get(n) != sha:
            return [f"stale golden {key}: input {n} differs from what the generator draws now"]
    if not full_fingerprint(stored):
        return [f"stale golden {key}: its fingerprint has no scale and path (an older generator's); "
                f"run `aclnn-conform golden generate`"]
    if stored.get("nonfinite") != fresh["nonfinite"] or stored.get("nterms") != fresh["nterms"]:
        return [f"drifted golden {key}: NaN/inf positions or the number of terms differ"]
    if [a[0] for a in stored["samples"]] != [b[0] for b in fresh["samples"]]:
        return [f"drifted golden {key}: the sampled positions differ"]
    limit = drift_limit(fresh["nterms"])
    hexes = lambda e, i: [float.fromhex(x[i]) for x in e["samples"]]         # noqa: E731
    mags = float.fromhex(fresh["abs_sum"])
    what = {"result": (hexes(stored, 1), hexes(fresh, 1), hexes(fresh, 2), "sum", mags)}
    if fresh["nterms"] != 1:
        what.update(scale=(hexes(stored, 2), hexes(fresh, 2), hexes(fresh, 2), "scale_sum", None),
                    path=(hexes(stored, 3), hexes(fresh, 3), hexes(fresh, 3), "path_sum", None))
    for name, (a, b, ref, total, mag) in what.items():
        s, f = float.fromhex(stored[total]), float.fromhex(fresh[total])
        worst, nonfinite = _ulps_over(list(zip(a, b, ref)) + [(s, f, f if mag is None else mag)], limit)
        if nonfinite:
            return [f"drifted golden {key}: a sampled NaN/inf of the {name} differs"]
        if worst:
            return [f"drifted golden {key}: recomputed {name} differs by {worst:.1f} float64 ulps "
                    f"(limit {limit:g})"]
    return []


def default_cache_dir() -> Path:
    """$ACLNN_CONFORMANCE_CACHE, else $XDG_CACHE_HOME/aclnn-conformance, else ~/.cache/..."""
    env = os.environ.get("ACLNN_CONFORMANCE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "aclnn-conformance"


class GoldenCache:
    """Computed goldens of large cases, one folder per case keyed by the generator version and the
    case's spec hash (so a changed case or generator never reads a stale entry). Entries are
    written to a temporary folder and renamed into place; each file's sha256 is checked on read
    against the entry's meta.json. Goldens above `max_bytes` are not kept.

    The cache is a file any process of the user can rewrite, the backend's included, together with
    its meta.json: its sha256s catch a torn or corrupted file, not a rewrite. So GoldenStore never
    judges with an entry it did not write or verify itself in this process (see GoldenStore.load)."""

    def __init__(self, root: Optional[Path], max_bytes: int = 1 << 30) -> None:
        self.root = Path(root) if root is not None else None
        self.max_bytes = max_bytes

    FORMAT = 2                     # bump when what an entry holds changes

    def _dir(self, case: Case) -> Path:
        return self.root / f"v{GENERATOR_VERSION}.{self.FORMAT}" / case.op / spec_hash(case)

    def get(self, case: Case) -> Optional[Golden]:
        got = self.read(case)
        return None if got is None else got[0]

    def read(self, case: Case) -> Optional[Tuple[Golden, Dict[str, str]]]:
        """The entry and the sha256 of each of its files as read (None: no usable entry)."""
        if self.root is None:
            return None
        d = self._dir(case)
        try:
            meta = json.loads((d / "meta.json").read_text())
            arrays, shas = {}, {}
            for name, sha in meta["files"].items():
                data = (d / name).read_bytes()
                if _sha256(data) != sha:
                    return None
                shas[name] = sha
                arrays[name] = np.load(io.BytesIO(data), allow_pickle=False)
            out = arrays["out.npy"]
            scale = arrays.get("scale.npy", None)
            if int(meta["nterms"]) != 1 and "path.npy" not in arrays:
                return None
            return Golden(out=out, scale=np.abs(out) if scale is None else scale, nterms=int(meta["nterms"]),
                          path=arrays.get("path.npy")), shas
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def files(self, g: Golden) -> Optional[Dict[str, bytes]]:
        """The files an entry of `g` holds; None when it is not kept (no cache, or too large)."""
        if self.root is None or g.out.nbytes * (1 if g.nterms == 1 else 3) > self.max_bytes:
            return None
        files = {"out.npy": _npy(g.out)}
        if g.nterms != 1:
            files["scale.npy"] = _npy(g.scale)
            files["path.npy"] = _npy(g.path)
        return files

    def put(self, case: Case, g: Golden, files: Optional[Dict[str, bytes]] = None) -> Optional[Dict[str, str]]:
        """Keep `g` (its `files`, when the caller has them already); the sha256 of each file
        written, or None when nothing was."""
        files = self.files(g) if files is None else files
        if files is None:
            return None
        d = self._dir(case)
        meta = {"spec": spec_hash(case), "nterms": g.nterms,
                "files": {k: _sha256(v) for k, v in files.items()}}
        try:
            d.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=d.parent, prefix=f".{d.name}.", suffix=".tmp"))
            try:
                for name, data in files.items():
                    (tmp / name).write_bytes(data)
                (tmp / "meta.json").write_text(json.dumps(meta))
                if d.exists():
                    shutil.rmtree(d, ignore_errors=True)      # a bad entry being replaced
                os.replace(tmp, d)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)    # another process got there first
        except OSError:
            return None                                        # a cache that cannot be written is no cache
        return meta["files"]


# -- the store ---------------------------------------------------------------------------------
class GoldenStore:
    """Read side: the manifest (loaded once); small cases' bundles, each opened when a case first
    asks; large cases drawn, computed and checked against their fingerprint."""

    def __init__(self, root: Path, manifest: Optional[dict] = None,
                 cache: Optional[GoldenCache] = None) -> None:
        self.root = Path(root)
        self._manifest = manifest
        self._open: Dict[str, Tuple[dict, bytes]] = {}
        self.cache = cache if cache is not None else GoldenCache(None)
        # (datakey, spec) of large cases whose drawn inputs and cached golden this process has
        # already checked against the manifest: the numbers and determinism tests, and every
        # product and layout of a case, share them, so the hashing is done once
        self._inputs_ok: set = set()
        # (datakey, spec) -> sha256 of each cache file of the golden this process computed and
        # checked against the manifest: the only cache content it judges with (see load)
        self._digests: Dict[Tuple[str, str], Dict[str, str]] = {}
        self._hash: Optional[str] = None
        self._error: Optional[GoldenError] = None

    def pin(self) -> None:
        """Read the manifest now, and keep it and the sha256 of its bytes for the rest of the run:
        the plugin calls this before the backend's process starts, so that every bundle is
        checked against a manifest the backend had no chance to rewrite, and results.json's
        manifest_hash is the hash of the manifest the run used. A missing or broken manifest is
        left for `manifest` to report (each case fails with it)."""
        if self._hash is not None:
            return
        path = self.root / MANIFEST
        if self._manifest is not None:          # given by the caller (golden check)
            self._hash = _sha256(path.read_bytes()) if path.exists() else ""
            return
        try:
            with open(path, "rb") as f:
                data = f.read(jsonfile.MAX_BYTES + 1)        # (past the limit: jsonfile.loads says so)
        except FileNotFoundError:
            self._hash, self._error = "", GoldenError(f"{path}: no golden manifest; run `aclnn-conform golden generate`")
            return
        except OSError as e:
            self._hash, self._error = "", GoldenError(f"{path}: cannot be read ({e.strerror or e})")
            return
        self._hash = _sha256(data)
        try:
            self._manifest = read_manifest(self.root, data)
        except GoldenError as e:
            self._error = e

    @property
    def manifest(self) -> dict:
        self.pin()
        if self._manifest is None:
            raise GoldenError(str(self._error))
        return self._manifest

    def manifest_hash(self) -> str:
        """The sha256 of the manifest this store reads ('' when there is none)."""
        self.pin()
        return self._hash or ""

    def entry(self, case: Case) -> dict:
        entry = self.manifest["cases"].get(case.datakey)
        if entry is None:
            raise GoldenError(f"no golden for {case.datakey}; run `aclnn-conform golden generate`")
        if entry["spec"] != spec_hash(case):
            raise GoldenError(f"the golden for {case.datakey} is stale (its case changed); "
                              f"run `aclnn-conform golden generate`")
        return entry

    def inputs(self, case: Case) -> Dict[str, np.ndarray]:
        """The case's exact inputs (what the determinism check needs: no golden)."""
        entry = self.entry(case)
        if "file" in entry:
            return _read_case(self._bundle(entry["file"]), case.datakey).inputs
        return self._drawn(case, entry)

    def load(self, case: Case) -> CaseData:
        """The case's inputs and golden. A large case's golden is computed on its first use in
        this process (and checked against the manifest's fingerprint); later uses read the cache
        only when its files' sha256s are those this process wrote, and compute it again otherwise."""
        entry = self.entry(case)
        if "file" in entry:
            return _read_case(self._bundle(entry["file"]), case.datakey)
        inputs = self._drawn(case, entry)
        if lazy(case):
            return CaseData(inputs, Elementwise(case.op, inputs, case.attrs))
        key = (case.datakey, entry["spec"])
        want = self._digests.get(key)
        if want is not None:
            got = self.cache.read(case)
            if got is not None and got[1] == want:
                return CaseData(inputs, Materialized(got[0]))
        g = compute(case, inputs)
        problems = compare_fingerprints(case.datakey, entry, fingerprint(case, None, Materialized(g)))
        if problems:
            raise GoldenError(problems[0] + "; run `aclnn-conform golden check`")
        files = self.cache.files(g)
        if files is not None:
            shas = {k: _sha256(v) for k, v in files.items()}
            got = self.cache.read(case)
            if got is None or got[1] != shas:
                shas = self.cache.put(case, g, files)
            if shas is not None:
                self._digests[key] = shas
        return CaseData(inputs, Materialized(g))

    def _drawn(self, case: Case, entry: dict) -> Dict[str, np.ndarray]:
        inputs = draw_inputs(case)
        key = (case.datakey, entry["spec"])
        if key in self._inputs_ok:             # the same draw, already checked in this process
            return inputs
        for n, a in inputs.items():
            if a is None:
                if n in entry.get("inputs", {}):
                    raise GoldenError(f"stale golden {case.datakey}: input {n} is NULL but the manifest has its "
                                      f"digest; run `aclnn-conform golden check`")
                continue
            if entry.get("inputs", {}).get(n) != draw.digest(a):
                raise GoldenError(f"stale golden {case.datakey}: input {n} differs from what the "
                                  f"generator draws now; run `aclnn-conform golden check`")
        self._inputs_ok.add(key)
        return inputs

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
            try:
                self._open[rel] = _read_bundle(data)
            except (ValueError, KeyError, OSError, zipfile.BadZipFile) as e:
                raise GoldenError(f"golden bundle {path} is unreadable ({e}); regenerate") from None
        return self._open[rel]


LAZY_BYTES = 1 << 30


def lazy(case: Case) -> bool:
    """A large elementwise golden is computed as judging reads it, never held: one too big to
    cache (> LAZY_BYTES of float64) would cost more memory than the case's own arrays."""
    if is_stored(case):
        return False
    shapes = {n: s for n, s in case.shapes.items() if s is not None}    # a NULL optional input: none
    op = ops.get(case.op)
    b = op.b_shape(shapes)
    return tuple(b) == tuple(case.out_shape) and numel(b) * 8 > LAZY_BYTES


def read_manifest(root: Path, data: Optional[bytes] = None) -> dict:
    """The manifest (or `data`, the bytes already read from it), checked entry by entry (so no
    later use of an entry meets a wrong type); any problem is one GoldenError that starts with the
    manifest's path."""
    path = Path(root) / MANIFEST
    if data is not None:
        m = jsonfile.loads(path, data, GoldenError)
    elif not path.exists():
        raise GoldenError(f"{path}: no golden manifest; run `aclnn-conform golden generate`")
    else:
        m = jsonfile.load(path, GoldenError)
    problem = _manifest_problem(m)
    if problem:
        raise GoldenError(f"{path}: not a golden manifest of format {FORMAT}: {problem}; "
                          f"restore it from git or run `aclnn-conform golden generate`")
    return m


_BUNDLE_NAME = re.compile(r"[A-Za-z0-9_]+/[0-9]+-[0-9a-f]{12}\.npz")     # <op>/<bucket>-<sha12>.npz
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _hexfloat(v: object) -> bool:
    try:
        float.fromhex(v)                # type: ignore[arg-type]
        return True
    except (TypeError, ValueError, OverflowError):
        return False


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _entry_problem(e: object, files: Mapping) -> Optional[str]:
    """What is wrong with one case's entry: a small case's {file, spec}, or a large case's
    fingerprint (see `fingerprint`); None when it is well formed."""
    if not isinstance(e, dict):
        return "not an object"
    if not isinstance(e.get("spec"), str):
        return "field 'spec' is missing or not a string"
    if "file" in e:
        return None if isinstance(e["file"], str) and e["file"] in files else "field 'file' names no bundle of 'files'"
    for k in ("sum", "abs_sum"):
        if not _hexfloat(e.get(k)):
            return f"field '{k}' is missing or not a hexadecimal float"
    for k in ("scale_sum", "path_sum"):            # absent in an older generator's (then stale)
        if k in e and not _hexfloat(e[k]):
            return f"field '{k}' is not a hexadecimal float"
    if not isinstance(e.get("nonfinite"), str) or not _int(e.get("nterms")):
        return "fields 'nonfinite' (a string) and 'nterms' (an integer) are required"
    samples = e.get("samples")
    if not isinstance(samples, list) or not all(
            isinstance(x, list) and len(x) in (3, 4) and _int(x[0]) and all(_hexfloat(v) for v in x[1:])
            for x in samples):
        return "field 'samples' is not a list of [position, out, scale, path] (hex floats)"
    ins = e.get("inputs", {})
    if not isinstance(ins, dict) or not all(isinstance(v, str) for v in ins.values()):
        return "field 'inputs' is not an object of input name to sha256"
    return None


def _manifest_problem(m: object) -> Optional[str]:
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        return "unknown format"
    files, cases = m.get("files"), m.get("cases")
    if not isinstance(files, dict) or not isinstance(cases, dict):
        return "'files' and 'cases' are objects"
    for rel, sha in files.items():
        if not _BUNDLE_NAME.fullmatch(rel) or not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            return f"files: {jsonfile.short(rel)}: not <op>/<bucket>-<sha>.npz with a sha256"
    for key, e in cases.items():
        problem = _entry_problem(e, files)
        if problem:
            return f"cases: {jsonfile.short(key)}: {problem}"
    return None


# -- generate and check ------------------------------------------------------------------------
def _fresh(case: Case) -> Tuple[Dict[str, np.ndarray], GoldenSource]:
    inputs = draw_inputs(case)
    if lazy(case):
        return inputs, Elementwise(case.op, inputs, case.attrs)
    return inputs, Materialized(compute(case, inputs))


def generate(cases: Iterable[Case], root: Path, progress: Callable[[str], None] = lambda s: None,
             cache: Optional[GoldenCache] = None, fresh: bool = False) -> dict:
    """Write every numeric case's golden (small cases' arrays, large cases' fingerprints); returns
    counts. Idempotent and atomic (module docstring). A large case whose fingerprint the manifest
    already holds for the same spec keeps it, unless `fresh` (`golden check` recomputes them)."""
    root = Path(root)
    for stray in _leftovers(root):           # a write killed before its rename (SIGKILL, power)
        stray.unlink(missing_ok=True)
    per_bundle: Dict[str, Dict[str, Dict[str, np.ndarray]]] = {}
    entries: Dict[str, dict] = {}
    todo = numeric_cases(cases)
    try:
        old = {"files": {}, "cases": {}} if fresh else read_manifest(root)
    except GoldenError:
        old = {"files": {}, "cases": {}}
    old_cases = old["cases"]
    kept = _Kept(root, old)
    for i, (key, case) in enumerate(sorted(todo.items())):
        spec = spec_hash(case)
        if not is_stored(case) and old_cases.get(key, {}).get("spec") == spec and "file" not in old_cases[key] \
                and full_fingerprint(old_cases[key]):
            entries[key] = old_cases[key]
            continue
        inputs, src = _fresh(case)
        if is_stored(case):
            group = f"{case.op}/{bucket_of(key):02d}"
            per_bundle.setdefault(group, {})[key] = kept.members(key, spec, inputs, src.golden) or _members(
                case, inputs, src.golden)
            entries[key] = {"group": group, "spec": spec}
        else:
            entries[key] = {"spec": spec, **fingerprint(case, inputs, src)}
            if cache is not None and isinstance(src, Materialized):
                cache.put(case, src.golden)
        if i % 500 == 0:
            progress(f"{i}/{len(todo)} cases")
    files: Dict[str, str] = {}
    file_of: Dict[str, str] = {}
    written = 0
    added: List[Path] = []                 # bundles this run created, undone if it is interrupted
    try:
        for group, members in sorted(per_bundle.items()):
            data = kept.bundle_bytes(members) or _bundle_bytes(members)
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
            if "group" in e:
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
    large = sum(1 for e in entries.values() if "file" not in e)
    return {"cases": len(entries), "bundles": len(files), "written": written, "removed": removed,
            "bytes": size, "large": large}


DRIFT_ULPS = 4


class _Kept:
    """The committed arrays of small cases, for `generate` to keep where a recomputation agrees
    with them: float64 exp and sums differ in their last bits between machines (numpy picks an
    AVX-512, AVX2 or scalar exp at run time: the goldens of an operator whose formula calls exp
    differed by 1 to 2 ulps between two x86 machines), and rewriting a bundle for that would make `generate` on
    another machine rewrite the goldens with no case changed. A case is kept when its inputs are
    bit-identical and `compare_goldens` finds nothing (the limit `golden check` applies), from a
    bundle whose sha256 is the one the existing manifest names."""

    def __init__(self, root: Path, manifest: Mapping) -> None:
        self.root, self.manifest = root, manifest
        self._open: Dict[str, Optional[Tuple[dict, bytes]]] = {}
        self._raw: Dict[str, bytes] = {}
        self.source: Dict[str, str] = {}           # datakey -> the bundle its kept arrays came from

    def bundle_bytes(self, members: Mapping[str, Mapping[str, np.ndarray]]) -> Optional[bytes]:
        """The existing bundle, when every case of `members` was kept from it and it holds no
        other: the bytes _bundle_bytes would make again (skips its compression)."""
        rels = {self.source.get(k) for k in members}
        if len(rels) != 1 or None in rels:
            return None
        rel = rels.pop()
        bundle = self._open.get(rel)
        return self._raw[rel] if bundle is not None and set(bundle[0]) == set(members) else None

    def _bundle(self, rel: str) -> Optional[Tuple[dict, bytes]]:
        if rel not in self._open:
            self._open[rel] = None
            try:
                data = (self.root / rel).read_bytes()
                if _sha256(data) == self.manifest["files"].get(rel):
                    self._open[rel] = _read_bundle(data)
                    self._raw[rel] = data
            except (OSError, ValueError, KeyError, zipfile.BadZipFile):
                pass
        return self._open[rel]

    def members(self, key: str, spec: str, inputs: Mapping[str, np.ndarray], g: Golden) -> Optional[Dict[str, np.ndarray]]:
        e = self.manifest["cases"].get(key)
        if not e or e.get("spec") != spec or "file" not in e:
            return None
        bundle = self._bundle(e["file"])
        if bundle is None or key not in bundle[0]:
            return None
        try:
            arrays = _unpack(bundle[0], bundle[1], key)
            stored = _read_case(bundle, key)
        except (KeyError, ValueError, TypeError):
            return None
        ins = {n: a for n, a in inputs.items() if a is not None}
        if set(ins) != set(stored.inputs) or any(
                s.dtype != ins[n].dtype or s.shape != ins[n].shape
                or not np.array_equal(dtypes.to_bits(s), dtypes.to_bits(ins[n])) for n, s in stored.inputs.items()):
            return None
        if compare_goldens(key, g, stored.golden.golden):
            return None
        self.source[key] = e["file"]
        return arrays


def _leftovers(root: Path) -> List[Path]:
    """Temporary files of atomic_write that never got renamed into place."""
    return sorted(p for p in Path(root).rglob(".*.tmp") if p.is_file()) if Path(root).is_dir() else []


def check(cases: Iterable[Case], root: Path, tiers: Iterable[str] = ("default",),
          skipped: Optional[List[str]] = None) -> List[str]:
    """Every problem with the goldens as one line each; empty when complete, intact and current.
    Large cases are drawn and computed again and compared with their fingerprints, for the cases
    of `tiers` (the others' keys go to `skipped`: the huge tier takes minutes per case)."""
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
    bad_files = set()                 # reported once here, not again for each case they hold
    for rel, sha in m["files"].items():
        path = root / rel
        if not path.exists():
            problems.append(f"missing bundle {rel}")
            bad_files.add(rel)
        elif _sha256(path.read_bytes()) != sha:
            problems.append(f"corrupted bundle {rel} (sha256 differs from the manifest)")
            bad_files.add(rel)
    for p in sorted(root.glob("*/*.npz")):
        rel = p.relative_to(root).as_posix()
        if rel not in m["files"]:
            problems.append(f"orphaned file {rel} (not in the manifest)")
    for p in _leftovers(root):
        problems.append(f"leftover temporary file {p.relative_to(root).as_posix()} (a write that was "
                        f"interrupted; `aclnn-conform golden generate` removes it)")
    want = numeric_cases(cases)
    for key in sorted(set(m["cases"]) - set(want)):
        problems.append(f"orphaned golden {key} (no case makes it)")
    for key, case in sorted(want.items()):
        entry = m["cases"].get(key)
        if entry is None:
            problems.append(f"missing golden {key}")
            continue
        if entry["spec"] != spec_hash(case):
            problems.append(f"stale golden {key} (its case changed)")
            continue
        if "file" not in entry:
            if is_stored(case):
                problems.append(f"stale golden {key} (stored as large, but the case is small)")
                continue
            if case.tier not in tiers:
                if skipped is not None:
                    skipped.append(key)
                continue
            inputs, src = _fresh(case)
            problems.extend(compare_fingerprints(key, entry, fingerprint(case, inputs, src)))
            continue
        if not is_stored(case):
            problems.append(f"stale golden {key} (stored as small, but the case is large)")
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
    fresh = draw_inputs(case)
    for n, a in fresh.items():
        s = stored.inputs.get(n)
        if a is None and s is None:
            continue                          # an optional input passed as NULL: nothing stored
        if s is None or a is None or s.dtype != a.dtype or s.shape != a.shape or not np.array_equal(
                dtypes.to_bits(s), dtypes.to_bits(a)):
            return [f"stale golden {key}: input {n} differs from what the generator draws now"]
    return compare_goldens(key, compute(case, stored.inputs), stored.golden.golden)


def compare_goldens(key: str, fresh: Golden, stored: Golden) -> List[str]:
    """Problems (at most one line) where a stored golden is not `fresh`, a recomputation: every
    array judging reads is compared, the number of terms exactly, `out`, `scale` and `path` with
    the same NaN/inf elements and the finite ones within drift_limit(nterms) float64 ulps (of the
    larger of |out| and scale, or of path itself: the values their window is made of)."""
    if all(np.asarray(x).dtype == np.float64 and np.shape(x) == np.shape(y) and np.asarray(x).tobytes() == np.asarray(y).tobytes()
           for x, y in ((fresh.out, stored.out), (fresh.scale, stored.scale), (fresh.path, stored.path))) \
            and int(stored.nterms) == int(fresh.nterms):
        return []                                 # the same bits (most cases): nothing to measure
    if int(stored.nterms) != int(fresh.nterms):
        return [f"drifted golden {key}: the number of terms differs ({int(stored.nterms)}, recomputed "
                f"{int(fresh.nterms)})"]
    limit = drift_limit(fresh.nterms)
    shape = np.shape(fresh.out)
    ref = np.maximum(np.abs(fresh.out), np.where(np.isfinite(fresh.scale), fresh.scale, 0.0))
    for name, a, b in (("result", fresh.out, stored.out), ("scale", fresh.scale, stored.scale),
                       ("path", fresh.path, stored.path)):
        if name != "result" and np.shape(b) not in (shape, ()) and np.shape(b) != np.shape(a):
            return [f"drifted golden {key}: the {name} has shape {np.shape(b)}, not {shape}"]
        a = np.broadcast_to(np.asarray(a, dtype=np.float64), shape)
        if np.shape(b) != shape and name == "result":
            return [f"drifted golden {key}: shape or NaN positions differ"]
        b = np.broadcast_to(np.asarray(b, dtype=np.float64), shape)
        if not np.array_equal(np.isnan(a), np.isnan(b)):
            return [f"drifted golden {key}: shape or NaN positions differ" if name == "result"
                    else f"drifted golden {key}: the {name}'s NaN positions differ"]
        fin = np.isfinite(a) & np.isfinite(b)
        if not np.array_equal(a[~fin & ~np.isnan(a)], b[~fin & ~np.isnan(b)]):
            return [f"drifted golden {key}: infinities differ" if name == "result"
                    else f"drifted golden {key}: the {name}'s infinities differ"]
        r = np.abs(a[fin]) if name == "path" else np.maximum(ref[fin], np.abs(a[fin]))
        ulps = np.abs(a[fin] - b[fin]) / np.spacing(np.maximum(r, np.abs(a[fin])))
        if np.any(ulps > limit):
            what = "result" if name == "result" else name
            return [f"drifted golden {key}: recomputed {what} differs by {float(np.max(ulps)):.1f} float64 ulps "
                    f"(limit {limit:g})"]
    return []
