"""The suite has teeth: it fails every mutant in tests/mutants/gallery.py, on the cases where the
mutant's defect shows and nowhere else, and it passes three correct kernels on every case.

Mutants run in-process (tests/mutants/harness.py) over one fixed pairwise subset of the real
cases and goldens, through the same Runner checks the pytest plugin makes; one real pytest session
shows the plugin path fails a mutant too.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Callable, Dict, Set, Tuple

import pytest

from suite import ops
from suite.cases import NUMBERS, Case
from suite.ops.base import broadcast, numel
from tests.mutants import harness
from tests.mutants.correct import CORRECT
from tests.mutants.gallery import BY_NAME, ISSUE2, MUTANTS
from tests.mutants.kernel import Float32Kernel
from tests.mutants.report import kill_table, markdown, outcome

MSE, KL = "MseLossBackward", "KlDivBackward"


def _b(c: Case) -> Tuple[int, ...]:
    s = dict(c.shapes)
    return broadcast(s["self"], s["target"]) if c.op == KL else tuple(c.out_shape)


def _self(c: Case) -> Tuple[int, ...]:
    return dict(c.shapes)["self"]


def _red(c: Case) -> int:
    return dict(c.attrs)["reduction"]


def _dts(c: Case) -> Set[str]:
    return set(dict(c.dtypes).values())


def _any_empty(c: Case) -> bool:
    return any(s is not None and numel(s) == 0 for s in dict(c.shapes).values())


Where = Callable[[Case], bool]
NUM = {"numbers"}
REJ = {"rejection"}
# Per mutant: the kinds of check that must fail, and the cases its failures must lie in (a failure
# elsewhere would be the harness's or the suite's fault, not the defect's).
WHERE: Dict[str, Tuple[Set[str], Where]] = {
    "MseMissingFactor2": (NUM, lambda c: c.op == MSE),
    "MseSignFlip": (NUM, lambda c: c.op == MSE),
    "MseMeanDivisorNumelB": (NUM, lambda c: c.op == MSE and _red(c) == 1 and numel(_b(c)) != numel(_self(c))),
    "MseSumAsMean": (NUM, lambda c: c.op == MSE and _red(c) == 2 and numel(_self(c)) > 1),
    "KlSignFlip": (NUM, lambda c: c.op == KL),
    "KlMeanDivisorNumelSelf": (NUM, lambda c: c.op == KL and _red(c) == 1 and numel(_b(c)) != numel(_self(c))),
    "KlBatchmeanSelfDim0": (NUM, lambda c: c.op == KL and _red(c) == 3 and (_self(c) or (1,))[0] != _b(c)[0]),
    "KlMaskNonPositiveTargets": (NUM, lambda c: c.op == KL and not dict(c.attrs)["logTarget"]),
    "KlLogTargetIgnored": (NUM, lambda c: c.op == KL and dict(c.attrs)["logTarget"]),
    "KlBroadcastFirstSlice": (NUM, lambda c: c.op == KL and _b(c) != _self(c)),
    "KlBroadcastWrongAxes": (NUM, lambda c: c.op == KL and _b(c) != _self(c)),
    "Float32ViaFloat16": (NUM, lambda c: "float32" in _dts(c)),
    "Bfloat16ViaFloat16": (NUM, lambda c: "bfloat16" in _dts(c) and c.values in ("large", "tiny")),
    "Bfloat16Truncated": (NUM, lambda c: c.out_dtype == "bfloat16"),
    "NoProductDtypeCheck": (REJ, lambda c: c.product in ("atlas-training", "atlas-inference")
                            and "bfloat16" in _dts(c) | {c.out_dtype}),
    "WrongStatusNullptr": (REJ, lambda c: c.expect == 161002),
    "Rank9Accepted": (REJ, lambda c: any(s is not None and len(s) > 8
                                         for s in [*dict(c.shapes).values(), c.out_shape])),
    "MseReduction3Accepted": (REJ, lambda c: c.op == MSE and _red(c) == 3),
    "KlMixedDtypesRejected": (NUM, lambda c: c.op == KL and len(_dts(c)) > 1),
    "OutDtypeIgnored": (NUM, lambda c: c.out_dtype != dict(c.dtypes)["self"]),
    "OutShapeNotChecked": (REJ, lambda c: c.out_shape is not None
                           and tuple(c.out_shape) != ops.get(c.op).out_shape(dict(c.shapes))),
    "StridesIgnored": (NUM, lambda c: c.layout != "contiguous"),
    "LastElementUnwritten": (NUM, lambda c: c.expect == NUMBERS and numel(c.out_shape) > 0),
    "NanToZero": (NUM, lambda c: c.values == "specials"),
    "OverflowSaturates": (NUM, lambda c: c.values in ("large", "specials")),
    "EmptyCrashes": (NUM, _any_empty),
    "ZeroDimAsOneDim": (NUM, lambda c: tuple(c.out_shape) == ()),
    "OneUlpWobble": ({"determinism"}, lambda c: c.expect == NUMBERS),
}


def test_gallery_has_every_kind_of_defect() -> None:
    assert len(MUTANTS) >= 25
    assert set(WHERE) == set(BY_NAME), "every mutant has its expected failure area here"
    assert len(ISSUE2) == 5 and all(m in MUTANTS for m in ISSUE2)
    for m in MUTANTS:
        assert issubclass(m, Float32Kernel) and m is not Float32Kernel
        assert m.description and "\n" not in m.description


def test_subset_covers_every_facet_value() -> None:
    """The subset keeps every value of every facet, per operator and kind of check."""
    sub = harness.subset()
    assert len(sub) < len(harness.small_cases())

    def facet_values(cases):
        return {(c.op, tuple(harness.checks_of(c)), k, v)
                for c in cases for k, v in harness._facets(c).items()}
    assert facet_values(sub) == facet_values(harness.small_cases())
    assert harness.pairwise_subset(list(reversed(harness.small_cases()))) == list(sub), \
        "the subset depends on the cases alone, not on their order"


def test_the_unmutated_kernel_passes_the_subset() -> None:
    """So a mutant's failures are its defect's."""
    o = harness.run_backend(Float32Kernel(), harness.subset())
    assert o.ran > len(harness.subset()) and not o.failures, o.failures


@pytest.mark.parametrize("name", [m.__name__ for m in MUTANTS])
def test_mutant_fails_where_its_defect_is(name: str) -> None:
    o = outcome(name)
    kinds, where = WHERE[name]
    assert o.failures, f"{name} passed the suite"
    failed_kinds = {k for _, k in o.failures}
    assert kinds <= failed_kinds, f"{name}: expected {kinds} checks to fail, got {failed_kinds}"
    by_id = {c.id: c for c in harness.subset()}
    stray = [cid for cid in o.killing_cases if not where(by_id[cid])]
    assert not stray, f"{name} failed outside its defect's cases: {stray[:3]} ({o.failures})"


def test_kill_rate_is_100_percent() -> None:
    rows = kill_table()
    print("\n" + markdown(rows))
    survivors = [r.mutant for r in rows if not r.kills]
    assert not survivors, f"mutants the suite does not catch: {survivors}"
    assert all(r.example for r in rows)


@pytest.mark.parametrize("variant", CORRECT, ids=lambda v: v.__name__)
def test_correct_variant_passes_every_case(variant) -> None:
    """No false alarms: every numeric, rejection and determinism case of the full set."""
    o = harness.run_backend(variant(), harness.all_cases())
    expected = sum(len(harness.checks_of(c)) for c in harness.all_cases())
    assert o.ran == expected and o.skipped == 0
    assert not o.failures, dict(list(o.failures.items())[:5])


def test_plugin_path_fails_a_mutant() -> None:
    """A real pytest session with --backend tests.mutants.gallery:<Name> fails exactly the cases
    the in-process run says it should, and passes the rest of its selection."""
    name = "MseMeanDivisorNumelB"
    narrow = "MseLossBackward and mean and 2x3.3.2x3 and contiguous"
    root = str(harness.ROOT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    env["PYTHONPATH"] = root + os.pathsep + os.environ.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-rf",
         "--backend", f"tests.mutants.gallery:{name}", "-k", narrow, "suite/conformance"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    failed = {line.split("[", 1)[1].split("]", 1)[0]
              for line in out.splitlines() if line.startswith("FAILED ")}
    selected = [c for c in harness.all_cases() if c.op == "MseLossBackward" and c.reduction == 1
                and "2x3.3.2x3" in c.id and c.layout == "contiguous" and c.expect == NUMBERS]
    assert selected
    want = {c.id for c in selected
            if ("numbers" in harness.run_backend(BY_NAME[name](), [c]).kinds())}
    assert failed == want and want, out[-3000:]
    summary = re.search(r"(\d+) failed, (\d+) passed", out)
    assert summary and int(summary[1]) == len(want) and int(summary[2]) > 0, \
        "the selection also has cases the mutant passes"
