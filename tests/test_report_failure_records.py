"""A numbers failure's worst elements travel as data (results.json `worst`,
docs/results-schema.md), and an error against a zero golden is given in absolute terms."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from suite.report import results
from suite.ops.base import Golden
from suite.run.worst import worst_element
from suite.judge.judging import judge
from tests.mutants import harness
from tests.reportkit import run_suite

ELEMENTWISE = "MseLossBackward-float32-atlas-a2-none-2x3.2x3.2x3-contiguous-uniform"
SUM = "KlDivBackward-float32-atlas-a2-batchmean-logtarget-2x3.2x1.2x3-contiguous-uniform"


def test_a_failed_records_worst_elements_are_data(tmp_path: Path) -> None:
    """A sign-flipped MSE kernel: each worst element names its index, the inputs behind it, the
    golden, the window, what came back and the error, and the values are those of the case."""
    ids = {c.id for c in harness.all_cases()}
    assert ELEMENTWISE in ids and SUM in ids
    r = run_suite(["suite/conformance/test_numerics.py", "--backend", "tests.mutants.gallery:MseSignFlip",
                   "-k", ELEMENTWISE, f"--report-dir={tmp_path}"])
    assert r.returncode == 1, r.stdout[-2000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert results.validate(doc) == []
    (rec,) = [x for x in doc["records"] if x["case"] == ELEMENTWISE]
    worst = rec["worst"]
    assert rec["outcome"] == "failed" and 1 <= len(worst) <= 5
    case = next(c for c in harness.all_cases() if c.id == ELEMENTWISE)
    data = harness.store().load(case)
    for w in worst:
        i = tuple(w["index"])
        assert set(w) == set(results.WORST_FIELDS) and w["unit"] == "ulp" and w["why"] in ("gross", "over")
        assert w["golden"] == float(data.golden.out[i])
        assert w["inputs"] == {n: float(np.broadcast_to(a, case.out_shape)[i]) for n, a in data.inputs.items()}
        # the sign flip: what came back is minus a correct result
        assert w["lo"] <= -w["got"] <= w["hi"] and w["got"] != 0 and w["error"] > 0
    assert not any("worst" in x for x in doc["records"] if x["outcome"] == "passed")


def test_a_sums_worst_elements_have_no_single_inputs(tmp_path: Path) -> None:
    r = run_suite(["suite/conformance/test_numerics.py", "--backend", "tests.mutants.gallery:KlSignFlip",
                   "-k", SUM, f"--report-dir={tmp_path}"])
    assert r.returncode == 1, r.stdout[-2000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    (rec,) = [x for x in doc["records"] if x["case"] == SUM]
    assert rec["worst"] and all(w["inputs"] is None for w in rec["worst"])
    assert "a sum of 3 terms" in r.stdout


def test_an_error_against_a_zero_golden_is_absolute() -> None:
    """An ulp of 0 is the subnormal spacing: 1e-3 against 0 would read as ~2e4 float16 ulps (or
    1.5e40 for bfloat16); the record says 1e-3 minus the window's end, absolutely."""
    got = np.array([0.0, 0.0, 1e-3], dtype=np.float16)
    v = judge(got, Golden(np.zeros(3), np.zeros(3)), np.dtype(np.float16), harness.table().standards["cann"],
              harness.table().slack_ulps)
    assert not v.passed
    e = v.elements[0]
    w = worst_element(e, (3,), None)
    assert (w["unit"], w["index"], w["why"]) == ("abs", [2], "gross")
    assert w["error"] == e.abs == float(np.float16(1e-3)) - e.hi > 0 and e.ulp > 1e4
    g = worst_element(e.__class__(1, 2.0, 1.0, 1.0, 1.0, 3.0, "over", 1.0), (3,), {"self": 1.0})
    assert (g["unit"], g["error"], g["inputs"]) == ("ulp", 3.0, {"self": 1.0})
