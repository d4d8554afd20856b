"""Large cases: their fingerprints (sha256s of the inputs, samples and sums of the golden) and the
user's cache of computed goldens (GoldenCache)."""
from __future__ import annotations

import hashlib
import io
import math
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

import numpy as np

from suite.values import draw
from suite.cases.model import Case
from suite.ops.base import Golden, numel
from suite.golden.bundle import _npy, _sha256
from suite.golden.source import GENERATOR_VERSION, GoldenError, GoldenSource, SAMPLES, spec_hash


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
    for start, out, scale, path in _runs(source.blocks(), _RUN):
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


_RUN = 1 << 16                   # the flat run a fingerprint sums at a time (a held golden's blocks)


def _runs(blocks: Iterable[Tuple[int, np.ndarray, np.ndarray, np.ndarray]], size: int):
    """A source's blocks cut again into flat runs of `size` elements (the last shorter), so a
    fingerprint's sums are the same bits whatever blocks the source yields: a held golden's
    slices of `size` (passed through as they are) or a computed one's rows (Elementwise)."""
    parts: List[Tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    have = start = 0
    for _, out, scale, path in blocks:
        at = 0
        while at < out.size:
            take = min(size - have, out.size - at)
            part = scale[at:at + take]
            parts.append((out[at:at + take], part, part if path is scale else path[at:at + take]))
            have, at = have + take, at + take
            if have == size:
                yield (start, *_joined(parts))
                start, have, parts = start + size, 0, []
    if parts:
        yield (start, *_joined(parts))


def _joined(parts: List[Tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    if len(parts) == 1:
        return parts[0]
    out, scale = (np.concatenate([p[k] for p in parts]) for k in range(2))
    same = all(p[2] is p[1] for p in parts)          # one array for both (an elementwise golden's |out|)
    return out, scale, scale if same else np.concatenate([p[2] for p in parts])


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or np.array_equal(a, b, equal_nan=True)


def full_fingerprint(entry: Mapping) -> bool:
    """A fingerprint that covers scale and path: elementwise, or a sum's with both (the generator
    before them kept out's alone)."""
    return entry.get("nterms") == 1 or (
        "scale_sum" in entry and "path_sum" in entry and all(len(x) == 4 for x in entry.get("samples", [])))


DRIFT_ULPS = 4                   # float64 drift a fingerprint forgives, per sqrt(term) (drift_limit)


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
