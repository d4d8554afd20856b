"""`golden generate` and `golden check`: writing the bundles and manifest, and proving that what this
machine draws and computes is what was committed (drift limits, leftovers)."""
from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple

import numpy as np

from suite.common import dtypes
from suite.cases.inputs import draw_inputs
from suite.cases.model import Case
from suite.ops.base import Golden
from suite.golden.manifest import read_manifest
from suite.common.files import atomic_write
from suite.golden.bundle import _bundle_bytes, _members, _read_bundle, _read_case, _sha256, _unpack
from suite.golden.store import GoldenStore, elementwise, lazy
from suite.golden.cache import GoldenCache, compare_fingerprints, drift_limit, fingerprint, full_fingerprint
from suite.golden.source import CaseData, Elementwise, FORMAT, GENERATOR_VERSION, GoldenError, GoldenSource, MANIFEST, Materialized, bucket_of, compute, compute_all, is_stored, numeric_cases, spec_hash


# -- generate and check ------------------------------------------------------------------------
def _fresh(case: Case, hold: bool = True) -> Tuple[Dict[str, np.ndarray], GoldenSource, Dict[str, Golden]]:
    """The case's drawn inputs, its first output's golden, and the other written outputs' goldens.
    Without `hold` (a large case's fingerprint, not kept in a cache), an elementwise golden is not
    held but computed block by block as it is read: its memory is the inputs' and one block's."""
    inputs = draw_inputs(case)
    if lazy(case) or (not hold and not is_stored(case) and elementwise(case)):
        return inputs, Elementwise(case.op, inputs, case.attrs), {}
    g, others = compute_all(case, inputs)
    return inputs, Materialized(g), others


class _Eta:
    """`generate`'s progress, one line per case computed: how many, the time so far and the time
    left, estimated from the elements of the cases still to compute at the rate of those done."""

    def __init__(self, todo: Mapping[str, Case]) -> None:
        self.total = len(todo)
        self.left = sum(c.elements for c in todo.values())
        self.done = 0
        self.start = time.monotonic()

    def step(self, i: int, case: Case, computed: bool) -> str:
        self.left -= case.elements
        if computed:
            self.done += case.elements
        spent = time.monotonic() - self.start
        eta = spent / self.done * self.left if self.done else 0.0
        return f"{i + 1}/{self.total} cases, {_clock(spent)} so far, about {_clock(eta)} left ({case.datakey})"


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{seconds:.1f} s"


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
    eta = _Eta(todo)
    for i, (key, case) in enumerate(sorted(todo.items())):
        spec = spec_hash(case)
        if not is_stored(case) and old_cases.get(key, {}).get("spec") == spec and "file" not in old_cases[key] \
                and full_fingerprint(old_cases[key]):
            entries[key] = old_cases[key]
            progress(eta.step(i, case, False))
            continue
        inputs, src, others = _fresh(case, hold=cache is not None)
        if is_stored(case):
            group = f"{case.op}/{bucket_of(key):02d}"
            per_bundle.setdefault(group, {})[key] = kept.members(key, spec, inputs, src.golden, others) or _members(
                case, inputs, src.golden, others)
            entries[key] = {"group": group, "spec": spec}
        else:
            entries[key] = {"spec": spec, **fingerprint(case, inputs, src)}
            if cache is not None and isinstance(src, Materialized):
                cache.put(case, src.golden)
        del inputs, src, others              # before the next case's are made: one case's arrays at a time
        progress(eta.step(i, case, True))
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
            try:
                p.unlink()
            except FileNotFoundError:          # another generate (a second terminal, a retry) was first
                continue
            removed += 1
    size = sum((root / r).stat().st_size for r in files)
    large = sum(1 for e in entries.values() if "file" not in e)
    return {"cases": len(entries), "bundles": len(files), "written": written, "removed": removed,
            "bytes": size, "large": large}



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

    def members(self, key: str, spec: str, inputs: Mapping[str, np.ndarray], g: Golden,
                others: Mapping[str, Golden] = {}) -> Optional[Dict[str, np.ndarray]]:
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
        if compare_goldens(key, g, stored.golden.golden) or _compare_others(key, others, stored):
            return None
        self.source[key] = e["file"]
        return arrays


def _leftovers(root: Path) -> List[Path]:
    """Temporary files of atomic_write that never got renamed into place."""
    return sorted(p for p in Path(root).rglob(".*.tmp") if p.is_file()) if Path(root).is_dir() else []


def check(cases: Iterable[Case], root: Path, tiers: Iterable[str] = ("default",),
          skipped: Optional[List[str]] = None,
          recompute: Optional[Callable[[str], bool]] = None) -> List[str]:
    """Every problem with the goldens as one line each; empty when complete, intact and current.
    Large cases are drawn and computed again and compared with their fingerprints, for the cases
    of `tiers` (the others' keys go to `skipped`: the huge tier takes minutes per case). With
    `recompute`, only the keys it accepts are drawn and computed again (a sample); every other
    check (the manifest, each file's sha256, missing, orphaned and stale entries) covers all."""
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
        if is_stored(case) != ("file" in entry):
            stored_as, is_ = ("small", "large") if "file" in entry else ("large", "small")
            problems.append(f"stale golden {key} (stored as {stored_as}, but the case is {is_})")
            continue
        if recompute is not None and not recompute(key):
            continue
        if "file" not in entry:
            if case.tier not in tiers:
                if skipped is not None:
                    skipped.append(key)
                continue
            inputs, src, _ = _fresh(case, hold=False)
            problems.extend(compare_fingerprints(key, entry, fingerprint(case, inputs, src)))
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
    g, others = compute_all(case, stored.inputs)
    return compare_goldens(key, g, stored.golden.golden) or _compare_others(key, others, stored)


def _compare_others(key: str, fresh: Mapping[str, Golden], stored: CaseData) -> List[str]:
    """compare_goldens for each written output beyond the first (none for one output): a missing
    or extra stored golden is a problem too."""
    if set(fresh) != set(stored.others):
        return [f"drifted golden {key}: goldens of outputs {sorted(stored.others)} stored, "
                f"{sorted(fresh)} recomputed"]
    for name, g in fresh.items():
        problems = compare_goldens(f"{key} ({name})", g, stored.others[name].golden)
        if problems:
            return problems
    return []


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
        with np.errstate(over="ignore"):      # past float64 (a drift from 0 in ulps of a subnormal): inf, past any limit
            ulps = np.abs(a[fin] - b[fin]) / np.spacing(np.maximum(r, np.abs(a[fin])))
        if np.any(ulps > limit):
            return [f"drifted golden {key}: recomputed {name} differs by {float(np.max(ulps)):.1f} float64 ulps "
                    f"(limit {limit:g})"]
    return []
