"""Running the conformance checks in-process, as the pytest plugin does, over a fixed subset of the
real cases; and the subset itself.

The subset is chosen from the case files alone, never from a mutant: a greedy pairwise covering,
in a fixed pseudo-random order (sha256 of the case id), so that within each operator and kind of
check every pair of facet values that occurs in the case files occurs in the subset, where the
facets are dtypes, the attributes (reduction and every attribute the operator declares, as one
facet), layout, value set, product and the shapes, and the explicit case line (`source`). Every
mutant is judged on the same subset.
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from suite.cases import model as cases_model
from suite.cases import load as cases_load
from suite.run.calls import InProcess
from suite.cases.model import NUMBERS, Case, Kind, kinds_of
from suite.golden.source import CaseData, is_stored
from suite.golden.cache import GoldenCache, default_cache_dir
from suite.golden.store import GoldenStore
from suite.common.grouping import grouped
from suite.run.runner import CaseFailure, CaseSkip, Runner, not_run_because
from suite.judge.table import ToleranceTable, load_table

ROOT = Path(__file__).resolve().parents[2]

KINDS = tuple(k.value for k in Kind)


class CachedStore(GoldenStore):
    """A GoldenStore that keeps what it loaded of small cases (many backends are run over the same
    cases); large cases' goldens go to the on-disk cache like a pytest run's."""

    def __init__(self, root: Path) -> None:
        # reuse: a large case's data is kept (read-only) for its next checks, as in a pytest run
        # (run_backend orders the cases of one data together); the backends here are the tests' own.
        super().__init__(root, cache=GoldenCache(default_cache_dir()), reuse=True)
        self._cache: Dict[str, CaseData] = {}

    def load(self, case: Case) -> CaseData:
        if not is_stored(case):
            return super().load(case)
        if case.datakey not in self._cache:
            self._cache[case.datakey] = super().load(case)
        return self._cache[case.datakey]


@lru_cache(maxsize=None)
def all_cases() -> Tuple[Case, ...]:
    """Every case of the default run (`pytest` with no --scale): small and scale sets."""
    cases, _ = cases_load.load_cases([ROOT / "cases"])
    return tuple(c for c in cases if c.tier == "default")


@lru_cache(maxsize=None)
def small_cases() -> Tuple[Case, ...]:
    """The cases with committed goldens (and every rejection): `pytest --scale small`."""
    return tuple(c for c in all_cases() if c.expect != NUMBERS or is_stored(c))


@lru_cache(maxsize=None)
def scale_cases() -> Tuple[Case, ...]:
    """The scale sets of the default run: numeric cases drawn and computed on demand."""
    return tuple(c for c in all_cases() if c.expect == NUMBERS and not is_stored(c))


@lru_cache(maxsize=None)
def store() -> CachedStore:
    return CachedStore(ROOT / "golden")


@lru_cache(maxsize=None)
def table() -> ToleranceTable:
    return load_table(ROOT / "cases" / cases_model.TOLERANCE_FILE)


def checks_of(case: Case) -> List[str]:
    """The kinds of check pytest runs on this case (one test per kind)."""
    return [k.value for k in kinds_of(case)]


def _facets(case: Case) -> Dict[str, Any]:
    return {"dtype": case.dtype_token, "attrs": tuple(sorted(dict(case.attrs).items())),
            "layout": case.layout, "values": case.values, "product": case.product,
            "shapes": (case.shapes, case.out_shape), "source": case.source}


def _order(case: Case) -> bytes:
    return hashlib.sha256(case.id.encode()).digest()


def pairwise_subset(cases: Sequence[Case]) -> List[Case]:
    """Every pair of facet values that occurs among `cases` (per operator and kind of check)
    occurs at least once in the result; cases are taken greedily in sha256(id) order."""
    seen = set()
    chosen = []
    for case in sorted(cases, key=_order):
        f = sorted(_facets(case).items())
        keys = {(case.op, tuple(checks_of(case)), a, b) for a, b in itertools.combinations(f, 2)}
        if not keys <= seen:
            seen |= keys
            chosen.append(case)
    return sorted(chosen, key=lambda c: c.id)


@lru_cache(maxsize=None)
def subset() -> Tuple[Case, ...]:
    """The pairwise subset of the small cases (the classic gallery's defects all show there)."""
    return tuple(pairwise_subset(small_cases()))


@dataclass
class Outcome:
    """One backend over some cases: which (case id, kind) failed, with the first line of why."""

    backend: str
    ran: int = 0
    skipped: int = 0
    failures: Dict[Tuple[str, str], str] = field(default_factory=dict)

    @property
    def killing_cases(self) -> List[str]:
        return sorted({cid for cid, _ in self.failures})

    def kinds(self) -> List[str]:
        return sorted({k for _, k in self.failures})


def run_backend(backend: Any, cases: Iterable[Case], kinds: Sequence[str] = KINDS,
                standard: Optional[str] = None) -> Outcome:
    """Each case through Runner.check_numbers / check_rejection / check_determinism, exactly the
    calls the plugin's `verify` fixture makes, with the products and capabilities it honours;
    `standard`: every case judged by it, as `pytest --standard` judges."""
    host = InProcess(backend)
    info = host.info
    runner = Runner(host, info, store(), table(), standard)
    out = Outcome(info.name)
    for case in grouped(list(cases), key=lambda c: c.datakey):
        if case.product not in info.products:
            continue
        for kind in checks_of(case):
            if kind not in kinds:
                continue
            if not_run_because(Kind(kind), info):
                out.skipped += 1
                continue
            out.ran += 1
            try:
                runner.check(Kind(kind), case, f"suite/conformance/test_{kind}.py::[{case.id}]")
            except CaseSkip:
                out.skipped += 1
            except CaseFailure as e:
                out.failures[(case.id, kind)] = str(e).splitlines()[0]
    return out
