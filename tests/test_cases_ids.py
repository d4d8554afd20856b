"""Case ids from the operator's declared axes (suite/cases/ids.py): an operator without a reduction
attribute has no reduction token (and a case file need not name one), and the dtype token names
each input by the shortest prefix that tells it from the others only where first letters clash
(`target` and `totalWeight`), so every existing id keeps its `g.. s.. t..`. The report's grid
(suite/report/html.py) takes a record without a reduction too."""
from __future__ import annotations

from typing import Any, Mapping, Optional

import pytest

from suite import ops
from suite.cases.ids import _dtype_token
from suite.cases.load import load_cases
from suite.contract import ACLNN_ERR_PARAM_INVALID
from suite.ops.base import Operator, Shape, broadcast, element_inputs
from suite.report import html
from suite.values import sets as V
from tests.core_helpers import write


def test_first_letters_stay_where_they_do_not_clash():
    assert _dtype_token({"gradOutput": "float16", "self": "float32", "target": "float16"}, "float16") == \
        "gfloat16.sfloat32.tfloat16-to-float16"
    assert _dtype_token({"gradOutput": "float32", "self": "float32", "target": "float32"}, "float32") == "float32"


def test_clashing_first_letters_take_the_shortest_unique_prefix():
    from suite.cases.ids import input_tokens
    names = ("gradOutput", "self", "target", "weight", "totalWeight")
    assert input_tokens(names) == {"gradOutput": "g", "self": "s", "target": "ta", "weight": "w",
                                   "totalWeight": "to"}
    dts = {"gradOutput": "float32", "self": "float32", "target": "int64", "weight": "float32",
           "totalWeight": "float32"}
    assert _dtype_token(dts, "float32") == "gfloat32.sfloat32.taint64.wfloat32.tofloat32-to-float32"
    assert input_tokens(("self", "scale", "scores")) == {"self": "se", "scale": "sca", "scores": "sco"}


class NoReduction(Operator):
    """out = self * other on the broadcast shape: no reduction attribute at all."""

    name = "NoReductionTest"
    inputs = ("self", "other")
    c_params = (("self", "tensor", None), ("other", "tensor", None))
    value_sets = {"uniform": V.uniform_set}

    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        return None if None in shapes.values() else broadcast(*shapes.values())

    def b_shape(self, shapes):
        return broadcast(*shapes.values())

    def check(self, sig):
        bad = self._nulls(sig) or self._unsupported_dtype(sig, [*self.inputs, "out"])
        if bad:
            return bad
        if tuple(sig.out_shape) != self.b_shape(sig.shapes):
            return ACLNN_ERR_PARAM_INVALID, "out shape"
        return 0, ""

    def terms(self, x, attrs, shapes):
        return x["self"] * x["other"]

    reference_terms = terms

    def describe(self, x, attrs, out_shape, index):
        return element_inputs(x, out_shape, index)


CASES = """
op: NoReductionTest
matrices:
  - products: [atlas-a2]
    dtypes: [float32]
    shapes:
      - [2x3, 3]
cases:
  - {product: atlas-a2, dtypes: float32, shapes: [2x3, 2x3], out_shape: [3], expect: 161002}
"""


def test_an_operator_without_a_reduction_has_no_reduction_token(monkeypatch, tmp_path):
    monkeypatch.setitem(ops.OPERATORS, NoReduction.name, NoReduction())
    cases, _ = load_cases([write(tmp_path, "nored.yaml", CASES)])
    assert [c.id for c in cases] == ["NoReductionTest-float32-atlas-a2-2x3.3-contiguous-uniform",
                                     "NoReductionTest-float32-atlas-a2-2x3.2x3-out3-contiguous-uniform"]
    assert all("reduction" not in c.attrs and c.reduction is None for c in cases)


def test_a_case_file_may_not_name_a_reduction_the_operator_lacks(monkeypatch, tmp_path):
    from suite.common.yamlfile import FileError
    monkeypatch.setitem(ops.OPERATORS, NoReduction.name, NoReduction())
    bad = CASES.replace("    dtypes: [float32]\n", "    dtypes: [float32]\n    reductions: [none]\n")
    with pytest.raises(FileError, match="reductions"):
        load_cases([write(tmp_path, "nored.yaml", bad)])


def test_the_grid_takes_a_record_without_a_reduction():
    rec = {"kind": "numbers", "dtypes": {"self": "float32"}, "out_dtype": "float32", "reduction": None,
           "shapes": {"self": [2, 3]}, "out_shape": [2, 3], "outcome": "passed"}
    table = html.coverage_table([rec, {**rec, "reduction": 1}])
    assert "None" not in table and "reduction=1" in table
