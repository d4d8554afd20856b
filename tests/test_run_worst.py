"""A numbers failure's worst elements (suite/run/worst.py) in pytest's own process: each as results.json
data (where, from which inputs, against what, in which unit) and as the failure message's lines, for the
only output and for an output beyond the first. tests/test_report_failure_records.py sees the same
through a pytest of its own, where a mutation run cannot follow it."""
from __future__ import annotations

import numpy as np

from suite.judge.judging import Element, Verdict
from suite.run import worst
from tests.mutants import harness

MSE = "MseLossBackward-float32-atlas-a2-none-2x3.2x3.2x3-contiguous-uniform"
NLL = "NLLLoss-sfloat32.tint64.wfloat32-to-float32-atlas-training-none-ignore-100-4x5.4.5-contiguous-uniform"
CASES = {c.id: c for c in harness.all_cases() if c.id in (MSE, NLL)}

# The largest error over the golden's window (ulps) and an error against a zero golden (absolute).
GROSS = Element(4, 1.5, 1.25, 1.0, 1.0, 12.5, "gross", 0.25)
AT_ZERO = Element(0, 0.0, 0.0, -1e-45, 1e-45, 3.0, "mismatch", 0.5)
OVER = Element(5, 2.0, 2.0, 2.0, 2.0, 7.0, "over", 0.125)
VERDICT = Verdict(False, "cann", 6, n_over=2, max_ulp=12.5, max_abs=1e-3, max_rel=0.5, rmse=2.5e-4,
                  elements=[GROSS, AT_ZERO, OVER])


def _inputs_at(data, shape, index):
    return {n: float(np.broadcast_to(a, shape)[index]) for n, a in data.inputs.items()}


def test_the_worst_elements_of_the_only_output_name_their_index_inputs_and_unit():
    case = CASES[MSE]
    data = harness.store().load(case)
    got = worst.worst_elements(case, data, VERDICT)
    assert got == [
        {"index": [1, 1], "inputs": _inputs_at(data, (2, 3), (1, 1)), "golden": 1.25, "lo": 1.0, "hi": 1.0,
         "got": 1.5, "error": 12.5, "unit": "ulp", "why": "gross"},
        {"index": [0, 0], "inputs": _inputs_at(data, (2, 3), (0, 0)), "golden": 0.0, "lo": -1e-45, "hi": 1e-45,
         "got": 0.0, "error": 0.5, "unit": "abs", "why": "mismatch"},
        {"index": [1, 2], "inputs": _inputs_at(data, (2, 3), (1, 2)), "golden": 2.0, "lo": 2.0, "hi": 2.0,
         "got": 2.0, "error": 7.0, "unit": "ulp", "why": "over"}]
    assert all(type(i) is int for w in got for i in w["index"])
    assert got == worst.worst_elements(case, data, VERDICT, "out")      # the first output named


def test_the_failure_message_gives_the_numbers_and_each_worst_element_with_its_inputs():
    case = CASES[MSE]
    data = harness.store().load(case)
    lines = worst.numbers_details(case, data, VERDICT, worst.worst_elements(case, data, VERDICT))

    def said(index):
        return ", ".join(f"{n}={v!r}" for n, v in _inputs_at(data, (2, 3), index).items())
    assert lines == [
        "  6 elements, 2 over; max error 12.5 ulp, max abs 0.001, max rel 0.5, rmse 0.00025",
        "  worst elements:",
        f"    index (1, 1): {said((1, 1))}",
        "      golden 1.25 (allowed 1.0), got 1.5, error 12.5 ulp of float32 (gross error)",
        f"    index (0, 0): {said((0, 0))}",
        "      golden 0.0 (allowed [-1e-45, 1e-45]), got 0.0, error 0.5 absolute (the golden is 0) (NaN/inf mismatch)",
        f"    index (1, 2): {said((1, 2))}",
        "      golden 2.0 (allowed 2.0), got 2.0, error 7 ulp of float32"]


def test_an_output_beyond_the_first_has_its_own_shape_and_no_inputs():
    case = CASES[NLL]
    data = harness.store().load(case)
    assert worst._output_of(case, None) == worst._output_of(case, "out") == (True, (4,), "float32")
    assert worst._output_of(case, "totalWeightOut") == (False, (), "float32")
    v = Verdict(False, "cann", 1, n_over=1, max_ulp=3.0, max_abs=0.5, max_rel=0.25, rmse=0.5,
                elements=[Element(0, 2.5, 2.0, 1.75, 2.25, 3.0, "over", 0.25)])
    got = worst.worst_elements(case, data, v, "totalWeightOut")
    assert got == [{"index": [], "inputs": None, "golden": 2.0, "lo": 1.75, "hi": 2.25, "got": 2.5, "error": 3.0,
                    "unit": "ulp", "why": "over"}]
    assert worst.numbers_details(case, data, v, got, "totalWeightOut") == [
        "  1 elements, 1 over; max error 3 ulp, max abs 0.5, max rel 0.25, rmse 0.5",
        "  worst elements:",
        "    totalWeightOut index ():",
        "      golden 2.0 (allowed [1.75, 2.25]), got 2.5, error 3 ulp of float32"]
    third = Element(2, 2.0, 2.0, 2.0, 2.0, 7.0, "over", 0.125)
    (first,) = worst.worst_elements(case, data, Verdict(False, "cann", 4, elements=[third]), "out")
    assert first["index"] == [2] and first["inputs"] == case_op_values(case, data, (2,))


def test_a_negative_golden_is_in_ulps_and_a_later_outputs_index_is_in_its_own_shape():
    below = Element(1, -1.5, -1.0, -1.25, -0.75, 2.0, "over", 0.25)
    assert worst.worst_element(below, (2,), None)["unit"] == "ulp"
    # an output beyond the first with more than one element (no shipped operator has one yet)
    from types import SimpleNamespace
    case = SimpleNamespace(op="NLLLoss", out_shape=(4,), out_dtype="float32", attrs={},
                           all_outputs={"out": ((4,), "float32"), "totalWeightOut": ((2, 3), "float16")})
    v = Verdict(False, "cann", 6, elements=[Element(4, 2.5, 2.0, 2.0, 2.0, 1.0, "", 0.5)])
    w = worst.worst_elements(case, None, v, "totalWeightOut")
    assert w[0]["index"] == [1, 1] and w[0]["inputs"] is None
    assert worst.numbers_details(case, None, v, w, "totalWeightOut")[2:] == [
        "    totalWeightOut index (1, 1):", "      golden 2.0 (allowed 2.0), got 2.5, error 1 ulp of float16"]


def case_op_values(case, data, index):
    from suite import ops
    return ops.get(case.op).element_values(data.inputs, tuple(case.out_shape), index)


def test_an_element_against_a_zero_golden_is_absolute_and_any_other_in_ulps():
    assert worst.worst_element(AT_ZERO, (3,), None) == {
        "index": [0], "inputs": None, "golden": 0.0, "lo": -1e-45, "hi": 1e-45, "got": 0.0, "error": 0.5,
        "unit": "abs", "why": "mismatch"}
    w = worst.worst_element(GROSS, (5,), {"self": 1.0})
    assert (w["index"], w["inputs"], w["error"], w["unit"]) == ([4], {"self": 1.0}, 12.5, "ulp")
    assert worst._index(GROSS, ()) == () and worst._index(GROSS, (2, 3)) == (1, 1)
    assert worst._fmt(np.float32(0.1)) == repr(float(np.float32(0.1))) and worst._fmt(1) == "1.0"


def test_a_reduced_outputs_line_says_what_it_is_a_sum_of_from_the_case_attributes():
    kl = "KlDiv-float32-atlas-a2-mean-plaintarget-7.7-contiguous-uniform"
    (case,) = [c for c in harness.all_cases() if c.id == kl]
    data = harness.store().load(case)
    v = Verdict(False, "cann", 1, n_over=1, max_ulp=3.0, max_abs=0.5, max_rel=0.25, rmse=0.5,
                elements=[Element(0, 2.5, 2.0, 2.0, 2.0, 3.0, "over", 0.5)])
    w = worst.worst_elements(case, data, v)
    assert w[0]["index"] == [] and w[0]["inputs"] is None                 # a sum: no single inputs
    assert worst.numbers_details(case, data, v, w)[2] == (
        "    index (): the sum of 7 terms target * (log(target) - self) over B = (7,) / numel(B)")
