"""An optional input (Operator.optional) travels through the whole core: a case file may pass it
as NULL in a numeric case, the golden and the reference leave it out, the dtype of a NULL tensor is
no dtype, and NULL for a required input is still 161001. Proven on a made-up operator registered
for the test, so no real operator's module is needed."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Mapping, Optional

import numpy as np
import pytest

from suite import ops
from suite.golden import build as golden_build
from suite.golden import source as golden_source
from suite.golden import store as golden_store
from suite.backends.reference import ReferenceBackend
from suite.cases.model import NUMBERS
from suite.cases.load import load_cases
from suite.contract import ACLNN_ERR_PARAM_INVALID
from suite.run.calls import InProcess
from suite.ops.base import Operator, Shape, broadcast, element_inputs
from suite.run.runner import CaseFailure, Runner, build_call
from suite.judge.table import load_table
from suite.values import sets as V
from tests.core_helpers import write

ROOT = Path(__file__).resolve().parents[1]


class Weighted(Operator):
    """out = gradOutput * self * weight, weight optional (NULL: 1), on the broadcast shape."""

    name = "WeightedTest"
    inputs = ("gradOutput", "self", "weight")
    optional = ("weight",)
    reductions = {"none": 0, "sum": 2}
    c_params = (("gradOutput", "tensor", None), ("self", "tensor", None), ("weight", "tensor", None),
                ("reduction", "int64", 0))
    value_sets = {"uniform": V.uniform_set}

    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        if shapes.get("gradOutput") is None or shapes.get("self") is None:
            return None
        return self.b_shape({n: s for n, s in shapes.items() if s is not None})

    def b_shape(self, shapes):
        return broadcast(*shapes.values())

    def check(self, sig):
        bad = self._nulls(sig) or self._unsupported_dtype(sig, [*self.inputs, "out"])
        if bad:
            return bad
        live = {n: s for n, s in sig.shapes.items() if s is not None}
        if broadcast(*live.values()) is None or tuple(sig.out_shape) != self.b_shape(live):
            return ACLNN_ERR_PARAM_INVALID, "shapes"
        return 0, ""

    def terms(self, x, attrs, shapes):
        w = x["weight"] if "weight" in x else 1.0
        return x["gradOutput"] * x["self"] * w

    def reference_terms(self, x, attrs, shapes):
        w = x["weight"] if "weight" in x else np.float32(1.0)
        return x["gradOutput"] * x["self"] * w

    def describe(self, x, attrs, out_shape, index):
        return element_inputs(x, out_shape, index)


class NullWeightAsZero(Weighted):
    """The defect: a NULL weight read as zeros."""

    def reference_terms(self, x, attrs, shapes):
        w = x["weight"] if "weight" in x else np.float32(0.0)
        return x["gradOutput"] * x["self"] * w


CASES = """
op: WeightedTest
matrices:
  - products: [atlas-a2]
    dtypes: [float32, {inputs: float16, weight: float32}]
    reductions: [none]
    shapes:
      - [2x3, 2x3, null]
      - [2x3, 2x3, 3]
      - [200x100, 200x100, null]    # a large case: drawn on demand, fingerprinted
cases:
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [null, 2x3, 2x3], expect: 161001}
  - {product: atlas-a2, dtypes: float32, reduction: sum, shapes: [2x3, 2x3, null], expect: 0}
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2x3, 2x3, 4], expect: 161002}
"""


class _Kernel(ReferenceBackend):
    def __init__(self, op: Operator) -> None:
        self.op = op

    def run(self, call):
        from suite.contract import AclnnError
        from suite.ops.base import Signature
        status, why = self.op.check(Signature.of_call(call))
        if status:
            raise AclnnError(status, why)
        return self.op.reference(call)


@pytest.fixture
def weighted(monkeypatch, tmp_path):
    monkeypatch.setitem(ops.OPERATORS, Weighted.name, Weighted())
    cases, _ = load_cases([write(tmp_path, "weighted.yaml", CASES)])
    golden_build.generate(cases, tmp_path / "golden")
    return cases, golden_store.GoldenStore(tmp_path / "golden")


def _run(backend, cases, store) -> Dict[str, str]:
    runner = Runner(InProcess(backend), InProcess(backend).info, store, load_table(ROOT / "cases" / "tolerances.yaml"))
    failed = {}
    for c in cases:
        try:
            if c.expect == NUMBERS:
                runner.check_numbers(c, c.id)
            else:
                runner.check_rejection(c, c.id)
        except CaseFailure as e:
            failed[c.id] = e.summary
    return failed


def test_a_null_optional_input_is_a_numeric_case(weighted) -> None:
    cases, _ = weighted
    by_shape = {tuple(c.shapes.values()): c for c in cases}
    null_w = by_shape[((2, 3), (2, 3), None)]
    assert null_w.expect == NUMBERS and null_w.dtypes["weight"] is None
    assert "null" in null_w.id
    assert by_shape[(None, (2, 3), (2, 3))].expect == 161001
    assert by_shape[((2, 3), (2, 3), (4,))].expect == 161002
    mixed = [c for c in cases if c.dtypes.get("self") == "float16"]
    assert {c.dtype_token for c in mixed} == {"float16", "gfloat16.sfloat16.wfloat32-to-float16"}, \
        "a NULL tensor's dtype takes no part in the case's dtype token"


def test_the_golden_and_the_call_leave_a_null_input_out(weighted) -> None:
    cases, store = weighted
    c = next(c for c in cases if c.expect == NUMBERS and c.shapes["weight"] is None)
    data = store.load(c)
    assert "weight" not in data.inputs
    call = build_call(c, data.inputs)
    assert call.inputs["weight"] is None and list(call.inputs) == list(Weighted.inputs)
    want = data.inputs["gradOutput"].astype(np.float64) * data.inputs["self"]
    np.testing.assert_array_equal(data.golden.out, want)


def test_reference_passes_and_a_null_misread_fails_where_it_shows(weighted) -> None:
    cases, store = weighted
    assert _run(_Kernel(Weighted()), cases, store) == {}
    failed = _run(_Kernel(NullWeightAsZero()), cases, store)
    null_numeric = {c.id for c in cases if c.expect == NUMBERS and c.shapes["weight"] is None}
    assert set(failed) == null_numeric and len(null_numeric) == 5, failed


def test_goldens_with_a_null_input_check_clean_small_and_large(weighted, tmp_path) -> None:
    cases, store = weighted
    large = [c for c in cases if c.expect == NUMBERS and not golden_source.is_stored(c)]
    assert large and all(c.shapes["weight"] is None for c in large)
    assert golden_build.check(cases, tmp_path / "golden") == []
    data = store.load(large[0])                          # drawn, checked against its fingerprint
    assert "weight" not in {n for n, a in data.inputs.items() if a is not None}
