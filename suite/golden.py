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
a fingerprint of each instead: the sha256 of every input and samples of the golden, so `golden
check` still proves that what a machine draws and computes is what was generated.
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

    def blocks(self, limit: int = blocks.BLOCK) -> Iterator[Tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """(flat start, golden, sum of the terms' magnitudes, sum of the partial sums' magnitudes)
        of consecutive runs of the flattened output (see ops.base.Golden)."""
        raise NotImplementedError


class Materialized(GoldenSource):
    def __init__(self, golden: Golden) -> None:
        self.golden = golden
        self.shape = tuple(golden.out.shape)
        self.nterms = golden.nterms

    def blocks(self, limit: int = blocks.BLOCK):
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

    def blocks(self, limit: int = blocks.BLOCK):
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
    """What the manifest keeps of a large case instead of its arrays (see module docstring); with
    no `inputs`, only the golden's part (to check a cached golden without hashing its inputs)."""
    at = _sample_at(case, numel(source.shape))
    want = iter(at)
    nxt = next(want, None)
    samples, total, mags = [], 0.0, 0.0
    nonfinite = hashlib.sha256()
    for start, out, scale, _ in source.blocks():
        while nxt is not None and nxt < start + out.size:
            samples.append([nxt, _hex(out[nxt - start]), _hex(scale[nxt - start])])
            nxt = next(want, None)
        fin = np.isfinite(out)
        total += float(np.sum(out[fin]))
        mags += float(np.sum(np.abs(out[fin])))
        nonfinite.update(np.packbits(np.isnan(out)).tobytes() + np.packbits(np.isposinf(out)).tobytes()
                         + np.packbits(np.isneginf(out)).tobytes())
    out = {"samples": samples, "sum": _hex(total), "abs_sum": _hex(mags),
           "nonfinite": nonfinite.hexdigest()[:32], "nterms": source.nterms}
    if inputs is not None:
        out["inputs"] = {n: draw.digest(a) for n, a in inputs.items() if a is not None}
    return out


def drift_limit(nterms: int) -> float:
    """float64 ulps (of the larger of |golden| and the sum of magnitudes) by which a recomputed
    golden may differ: another machine, numpy or block size sums in another order, and float64
    summation errors grow like sqrt(n) (they matter to nothing judged in float32 or narrower)."""
    return DRIFT_ULPS * max(1.0, math.sqrt(nterms))


def compare_fingerprints(key: str, stored: dict, fresh: dict) -> List[str]:
    """Problems (one line each) where `fresh` is not what was generated, to drift_limit."""
    for n, sha in fresh.get("inputs", {}).items():
        if stored.get("inputs", {}).get(n) != sha:
            return [f"stale golden {key}: input {n} differs from what the generator draws now"]
    if stored.get("nonfinite") != fresh["nonfinite"] or stored.get("nterms") != fresh["nterms"]:
        return [f"drifted golden {key}: NaN/inf positions or the number of terms differ"]
    worst = 0.0
    pairs = [(float.fromhex(a[1]), float.fromhex(b[1]), float.fromhex(a[2]))
             for a, b in zip(stored.get("samples", []), fresh["samples"]) if a[0] == b[0]]
    if len(pairs) != len(fresh["samples"]):
        return [f"drifted golden {key}: the sampled positions differ"]
    mags = float.fromhex(stored["abs_sum"])
    pairs.append((float.fromhex(stored["sum"]), float.fromhex(fresh["sum"]), mags))
    limit = drift_limit(fresh["nterms"])
    for a, b, scale in pairs:
        if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
            if not (a == b or (math.isnan(a) and math.isnan(b))):
                return [f"drifted golden {key}: a sampled NaN/inf differs"]
            continue
        ulps = abs(a - b) / math.ulp(max(abs(scale), abs(a)))
        if ulps > limit:
            worst = max(worst, ulps)
    if worst:
        return [f"drifted golden {key}: recomputed result differs by {worst:.1f} float64 ulps "
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
    written to a temporary folder and renamed into place; each file's sha256 is checked on read,
    and an entry that fails is recomputed and replaced. Goldens above `max_bytes` are not kept."""

    def __init__(self, root: Optional[Path], max_bytes: int = 1 << 30) -> None:
        self.root = Path(root) if root is not None else None
        self.max_bytes = max_bytes

    FORMAT = 2                     # bump when what an entry holds changes

    def _dir(self, case: Case) -> Path:
        return self.root / f"v{GENERATOR_VERSION}.{self.FORMAT}" / case.op / spec_hash(case)

    def get(self, case: Case) -> Optional[Golden]:
        if self.root is None:
            return None
        d = self._dir(case)
        try:
            meta = json.loads((d / "meta.json").read_text())
            arrays = {}
            for name, sha in meta["files"].items():
                data = (d / name).read_bytes()
                if _sha256(data) != sha:
                    return None
                arrays[name] = np.load(io.BytesIO(data), allow_pickle=False)
            out = arrays["out.npy"]
            scale = arrays.get("scale.npy", None)
            if int(meta["nterms"]) != 1 and "path.npy" not in arrays:
                return None
            return Golden(out=out, scale=np.abs(out) if scale is None else scale, nterms=int(meta["nterms"]),
                          path=arrays.get("path.npy"))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, case: Case, g: Golden) -> None:
        if self.root is None or g.out.nbytes * (1 if g.nterms == 1 else 3) > self.max_bytes:
            return
        d = self._dir(case)
        files = {"out.npy": _npy(g.out)}
        if g.nterms != 1:
            files["scale.npy"] = _npy(g.scale)
            files["path.npy"] = _npy(g.path)
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
            pass                                               # a cache that cannot be written is no cache


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
        self._golden_ok: set = set()

    @property
    def manifest(self) -> dict:
        if self._manifest is None:
            self._manifest = read_manifest(self.root)
        return self._manifest

    def manifest_hash(self) -> str:
        path = self.root / MANIFEST
        return _sha256(path.read_bytes()) if path.exists() else ""

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
        entry = self.entry(case)
        if "file" in entry:
            return _read_case(self._bundle(entry["file"]), case.datakey)
        inputs = self._drawn(case, entry)
        if lazy(case):
            return CaseData(inputs, Elementwise(case.op, inputs, case.attrs))
        key = (case.datakey, entry["spec"])
        g = self.cache.get(case)
        if g is not None and key not in self._golden_ok and compare_fingerprints(
                case.datakey, entry, fingerprint(case, None, Materialized(g))):
            g = None                           # made by other code than today's: compute it again
        if g is None:
            g = compute(case, inputs)
            problems = compare_fingerprints(case.datakey, entry, fingerprint(case, None, Materialized(g)))
            if problems:
                raise GoldenError(problems[0] + "; run `aclnn-conform golden check`")
            self.cache.put(case, g)
        self._golden_ok.add(key)
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


def read_manifest(root: Path) -> dict:
    """The manifest, checked entry by entry (so no later use of an entry meets a wrong type); any
    problem is one GoldenError that starts with the manifest's path."""
    path = Path(root) / MANIFEST
    if not path.exists():
        raise GoldenError(f"{path}: no golden manifest; run `aclnn-conform golden generate`")
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
    if not isinstance(e.get("nonfinite"), str) or not _int(e.get("nterms")):
        return "fields 'nonfinite' (a string) and 'nterms' (an integer) are required"
    samples = e.get("samples")
    if not isinstance(samples, list) or not all(
            isinstance(x, list) and len(x) == 3 and _int(x[0]) and _hexfloat(x[1]) and _hexfloat(x[2])
            for x in samples):
        return "field 'samples' is not a list of [position, hex float, hex float]"
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
        old_cases = {} if fresh else read_manifest(root)["cases"]
    except GoldenError:
        old_cases = {}
    for i, (key, case) in enumerate(sorted(todo.items())):
        spec = spec_hash(case)
        if not is_stored(case) and old_cases.get(key, {}).get("spec") == spec and "file" not in old_cases[key]:
            entries[key] = old_cases[key]
            continue
        inputs, src = _fresh(case)
        if is_stored(case):
            group = f"{case.op}/{bucket_of(key):02d}"
            per_bundle.setdefault(group, {})[key] = _members(case, inputs, src.golden)
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
    g = compute(case, stored.inputs)
    a, b = g.out, stored.golden.out
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return [f"drifted golden {key}: shape or NaN positions differ"]
    fin = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(a[~fin & ~np.isnan(a)], b[~fin & ~np.isnan(b)]):
        return [f"drifted golden {key}: infinities differ"]
    limit = drift_limit(g.nterms)
    ulps = np.abs(a[fin] - b[fin]) / np.spacing(np.maximum(np.abs(g.scale[fin]), np.abs(a[fin])))
    if np.any(ulps > limit):
        return [f"drifted golden {key}: recomputed result differs by {float(np.max(ulps)):.1f} float64 ulps "
                f"(limit {limit:g})"]
    return []
