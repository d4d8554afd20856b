"""The store a run reads: golden/manifest.json and its bundles, pinned by sha256 before the backend
starts (GoldenStore), and which cases are read lazily."""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Callable, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.common import jsonfile
from suite.values import draw
from suite import ops
from suite.cases.inputs import draw_inputs
from suite.cases.model import Case
from suite.ops.base import numel
from suite.golden.manifest import read_manifest
from suite.golden.bundle import _read_bundle, _read_case, _sha256
from suite.golden.cache import GoldenCache, compare_fingerprints, fingerprint
from suite.golden.where import GENERATE
from suite.golden.source import CaseData, Elementwise, GoldenError, MANIFEST, Materialized, compute, compute_all, is_stored, spec_hash


# -- the store ---------------------------------------------------------------------------------
class GoldenStore:
    """Read side: the manifest (loaded once); small cases' bundles, each opened when a case first
    asks; large cases drawn, computed and checked against their fingerprint."""

    def __init__(self, root: Path, manifest: Optional[dict] = None,
                 cache: Optional[GoldenCache] = None, reuse: bool = False, command: str = GENERATE,
                 on_demand: Callable[[Case], bool] = lambda case: False) -> None:
        self.root = Path(root)
        # the exact `golden generate` command that remakes this folder and no other (where.command):
        # what every "run ..." of its messages says
        self.command = command
        # Which cases the manifest need not hold: their inputs are drawn from their seed and their
        # golden computed in this process when a test first needs them, as a large case's are, with
        # no fingerprint to check against (a user's own case files: where.is_own_case)
        self.on_demand = on_demand
        self._missing = False                   # no manifest file at all (not a broken one)
        # `reuse`: keep the last large case's data (read-only) for the next test of the same case
        # (its other products, layouts and kinds: the plugin orders them together), instead of
        # drawing its inputs and reading its golden again. Only where no backend code runs in
        # this process (an in-process backend could write into arrays it is given).
        self.reuse = reuse
        # (datakey, spec), its inputs, and its data once a numbers test loaded it (None: inputs only)
        self._last: Optional[Tuple[Tuple[str, str], Dict[str, np.ndarray], Optional[CaseData]]] = None
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
            self._missing = True
            self._hash, self._error = "", GoldenError(f"{path}: no golden manifest; run `{self.command}`")
            return
        except OSError as e:
            self._hash, self._error = "", GoldenError(f"{path}: cannot be read ({e.strerror or e})")
            return
        self._hash = _sha256(data)
        try:
            self._manifest = read_manifest(self.root, data, self.command)
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
        """The case's manifest entry; for a case computed on demand (`on_demand`) that the manifest
        lacks or holds for another spec, or with no manifest at all, one with no fingerprint to check
        against: {"spec", "computed": True}."""
        if self.on_demand(case):
            self.pin()
            if self._manifest is None and self._missing:
                return {"spec": spec_hash(case), "computed": True}
            entry = self.manifest["cases"].get(case.datakey)
            if entry is None or entry["spec"] != spec_hash(case):
                return {"spec": spec_hash(case), "computed": True}
            return entry
        entry = self.manifest["cases"].get(case.datakey)
        if entry is None:
            raise GoldenError(f"no golden for {case.datakey}; run `{self.command}`")
        if entry["spec"] != spec_hash(case):
            raise GoldenError(f"the golden for {case.datakey} is stale (its case changed); "
                              f"run `{self.command}`")
        return entry

    def inputs(self, case: Case) -> Dict[str, np.ndarray]:
        """The case's exact inputs (what the determinism check needs: no golden)."""
        entry = self.entry(case)
        if "file" in entry:
            return _read_case(self._bundle(entry["file"]), case.datakey).inputs
        kept = self._kept(case, entry)
        if kept is not None:
            return kept[0]
        inputs = self._drawn(case, entry)
        if self.reuse:
            _read_only(inputs.values())
            self._last = ((case.datakey, entry["spec"]), inputs, None)
        return inputs

    def load(self, case: Case) -> CaseData:
        """The case's inputs and golden. A large case's golden is computed on its first use in
        this process (and checked against the manifest's fingerprint); the tests that follow it
        with the same data get the same (read-only) arrays where the store may reuse them; other
        later uses read the cache only when its files' sha256s are those this process wrote, and
        compute it again otherwise."""
        entry = self.entry(case)
        if "file" in entry:
            return _read_case(self._bundle(entry["file"]), case.datakey)
        kept = self._kept(case, entry)
        if kept is not None and kept[1] is not None:
            return kept[1]
        data = self._load_large(case, entry, None if kept is None else kept[0])
        if self.reuse:
            _read_only(_arrays(data))
            self._last = ((case.datakey, entry["spec"]), data.inputs, data)
        return data

    def _kept(self, case: Case, entry: dict) -> Optional[Tuple[Dict[str, np.ndarray], Optional[CaseData]]]:
        """The last large case's inputs and data (None: not loaded yet) if `case` is that case;
        else None, and they are let go first (so two large cases' arrays are never held at once)."""
        if self._last is not None and self._last[0] == (case.datakey, entry["spec"]):
            return self._last[1], self._last[2]
        self._last = None
        return None

    def _load_large(self, case: Case, entry: dict, inputs: Optional[Dict[str, np.ndarray]] = None) -> CaseData:
        inputs = self._drawn(case, entry) if inputs is None else inputs
        if lazy(case):
            return CaseData(inputs, Elementwise(case.op, inputs, case.attrs), _others(case, inputs))
        key = (case.datakey, entry["spec"])
        want = self._digests.get(key)
        if want is not None:
            got = self.cache.read(case)
            if got is not None and got[1] == want:
                return CaseData(inputs, Materialized(got[0]), _others(case, inputs))
        g, others = compute_all(case, inputs)
        problems = [] if entry.get("computed") else compare_fingerprints(
            case.datakey, entry, fingerprint(case, None, Materialized(g)))
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
        return CaseData(inputs, Materialized(g), {n: Materialized(o) for n, o in others.items()})

    def _drawn(self, case: Case, entry: dict) -> Dict[str, np.ndarray]:
        inputs = draw_inputs(case)
        key = (case.datakey, entry["spec"])
        if key in self._inputs_ok or entry.get("computed"):     # already checked; or nothing to check against
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
                raise GoldenError(f"golden bundle {path} is missing; run `{self.command}`") from None
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


def _read_only(arrays) -> None:
    for a in arrays:
        if isinstance(a, np.ndarray):
            a.flags.writeable = False


def _arrays(data: CaseData):
    """The arrays a CaseData holds (a lazily computed golden holds its inputs only)."""
    yield from (a for a in data.inputs.values() if isinstance(a, np.ndarray))
    for g in [data.golden, *data.others.values()]:
        held = getattr(g, "golden", None)
        for name in ("out", "scale", "path"):
            a = getattr(held, name, None)
            if isinstance(a, np.ndarray):
                yield a


def _others(case: Case, inputs: Mapping[str, np.ndarray]) -> Dict[str, Materialized]:
    """A large case's other outputs' goldens, computed where its first output's came from the cache
    or is read lazily: neither the cache nor the manifest's fingerprint holds them (none for an
    operator with one output, which costs nothing here)."""
    if len(ops.get(case.op).outputs) == 1:
        return {}
    return {n: Materialized(g) for n, g in compute_all(case, inputs)[1].items()}


def lazy(case: Case) -> bool:
    """A large elementwise golden is computed as judging reads it, never held: one too big to
    cache (> LAZY_BYTES of float64) would cost more memory than the case's own arrays."""
    if is_stored(case):
        return False
    return elementwise(case) and numel(case.out_shape) * 8 > LAZY_BYTES


def elementwise(case: Case) -> bool:
    """One term per element: the broadcast shape is out's (so a golden can be computed per block)."""
    shapes = {n: s for n, s in case.shapes.items() if s is not None}    # a NULL optional input: none
    return tuple(ops.get(case.op).b_shape(shapes)) == tuple(case.out_shape)
