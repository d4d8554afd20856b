"""What a backend's run returned for a call with several outputs (suite/run/several.py), in pytest's
process: every written output exactly its shape and dtype, memory of its own, each refusal said."""
from __future__ import annotations

import types

import numpy as np
import pytest

from suite.contract import OpCall
from suite.run import several as sv

OUTPUTS = [("out", (2,), "float32"), ("totalWeightOut", (), "float32")]


def _call(**inputs):
    return OpCall(op="NLLLoss", inputs=inputs or {"self": np.zeros(2, np.float32), "weight": None}, attrs={},
                  out_shape=None, out_dtype=None, product="atlas-a2", outputs={})


def _req(written=("out", "totalWeightOut"), outputs=OUTPUTS):
    return {"outputs": outputs, "written": list(written)}


def _good():
    return {"out": np.ones(2, np.float32), "totalWeightOut": np.full((), 2, np.float32)}


def test_the_outputs_a_call_writes_are_spelled_as_a_message_says_them():
    three = OUTPUTS + [("w", None, "float16")]
    assert sv.outputs_text(OUTPUTS, ["out"]) == "out float32[2]"
    assert sv.outputs_text(OUTPUTS, ["out", "totalWeightOut"]) == "out float32[2] and totalWeightOut float32[]"
    assert sv.outputs_text(three, ["out", "totalWeightOut", "w"]) == \
        "out float32[2], totalWeightOut float32[] and w float16NULL"


def test_a_good_mapping_is_taken_with_its_arrays_in_signature_order():
    got = {"totalWeightOut": np.full((), 2, np.float32), "out": np.ones(2, np.float32)}
    o, kept = sv.several(_call(), _req(), got, [])
    assert list(o.arrays) == ["out", "totalWeightOut"] and o.aliased is None and o.returned is None
    assert o.arrays["out"] is got["out"] and [k is got[n] for k, n in zip(kept, ["out", "totalWeightOut"])] == [True, True]


def test_an_output_the_call_does_not_write_is_dropped_whatever_it_holds():
    o, kept = sv.several(_call(), _req(written=["out"]), {"out": np.ones(2, np.float32), "totalWeightOut": "junk"}, [])
    assert list(o.arrays) == ["out"] and len(kept) == 1
    o, _ = sv.several(_call(), _req(written=["out"]), {"out": np.ones(2, np.float32)}, [])
    assert list(o.arrays) == ["out"]
    # an unwritten output before a written one: the written one is still checked and taken
    o, kept = sv.several(_call(), _req(written=["totalWeightOut"]), {"out": "junk", "totalWeightOut": np.ones((), np.float32)}, [])
    assert list(o.arrays) == ["totalWeightOut"] and len(kept) == 1
    o, _ = sv.several(_call(), _req(written=["totalWeightOut"]), {"totalWeightOut": np.ones(3, np.float32)}, [])
    assert o.returned == "totalWeightOut as shape (3,) dtype float32"


@pytest.mark.parametrize("got, returned", [
    ([np.ones(2)], "list, not a numpy array; a call with several outputs returns a mapping of output name to "
                   "array (out, totalWeightOut)"),
    ({**_good(), "extra": 1}, "a mapping with 'extra', which is no output of NLLLoss (its outputs: out, totalWeightOut)"),
    ({"x" * 200: 1}, f"a mapping with {repr('x' * 200)[:80]}, which is no output of NLLLoss (its outputs: out, "
                     "totalWeightOut)"),
    ({"out": np.ones(2, np.float32)}, "a mapping without totalWeightOut"),
    ({}, "a mapping without out, totalWeightOut"),
    ({**_good(), "out": np.ones(3, np.float32)}, "out as shape (3,) dtype float32"),
    ({**_good(), "out": np.ones(2, np.float16)}, "out as shape (2,) dtype float16"),
    ({**_good(), "totalWeightOut": 2.0}, "totalWeightOut as float, not a numpy array"),
])
def test_what_is_not_the_outputs_is_described(got, returned):
    o, kept = sv.several(_call(), _req(), got, [])
    assert (o.returned, o.arrays, kept) == (returned, None, None)


def test_an_output_without_a_shape_is_never_taken():
    o, kept = sv.several(_call(), _req(outputs=[("out", None, "float32"), ("totalWeightOut", (), "float32")]),
                         _good(), [])
    assert o.returned == "out as shape (2,) dtype float32" and kept is None


def test_a_masked_output_is_a_violation_and_a_subclass_is_taken_by_value():
    got = {**_good(), "out": np.ma.masked_array(np.ones(2, np.float32), mask=[True, False])}
    o, kept = sv.several(_call(), _req(), got, [])
    assert o.violation.startswith("the backend returned out as a numpy.ma.MaskedArray with 1 masked elements")
    assert kept is None
    got = {**_good(), "out": np.ma.masked_array(np.ones(2, np.float32))}
    o, kept = sv.several(_call(), _req(), got, [])
    assert type(o.arrays["out"]) is np.ndarray and o.violation is None


def test_an_output_that_shares_memory_is_named():
    x = np.ones(4, np.float32)
    o, _ = sv.several(_call(self=x[:2], weight=None), _req(), {**_good(), "out": x[:2]}, [])
    assert o.aliased == "input self (as out)"
    earlier = [np.zeros(3), np.ones((), np.float32)]
    o, _ = sv.several(_call(), _req(), {**_good(), "totalWeightOut": earlier[1]}, earlier)
    assert o.aliased == "an earlier result"
    buf = np.ones(3, np.float32)
    o, _ = sv.several(_call(), _req(outputs=[("out", (2,), "float32"), ("totalWeightOut", (2,), "float32")]),
                      {"out": buf[:2], "totalWeightOut": buf[1:]}, [])
    assert o.aliased == "output out (as totalWeightOut)"
    empty = np.zeros((0,), np.float32)
    o, _ = sv.several(_call(self=empty, weight=None), _req(outputs=[("out", (0,), "float32"),
                                                                    ("totalWeightOut", (), "float32")]),
                      {"out": empty, "totalWeightOut": np.ones((), np.float32)}, [empty])
    assert o.aliased is None                          # an empty output holds nothing to share


def test_the_shapes_and_outputs_of_a_case():
    one = types.SimpleNamespace(outputs=None, out_shape=(4,))
    two = types.SimpleNamespace(outputs={"out": ((2,), "float32"), "totalWeightOut": ((), "float32")}, out_shape=None)
    assert sv.out_shapes(one) == [(4,)] and sv.out_shapes(two) == [(2,), ()]
    assert sv.request_outputs(one) == [] and sv.request_outputs(two) == [("out", (2,), "float32"),
                                                                         ("totalWeightOut", (), "float32")]


def test_what_an_aliased_result_is_told():
    assert sv.aliased_text("output out (as w)") == ("the result shares memory with output out (as w): two outputs "
                                                    "of one call must each be memory of their own")
    assert sv.aliased_text("input self") == ("the result shares memory with input self: the backend returned a "
                                             "view of its input, not a result of its own")
    assert sv.aliased_text("an earlier result") == (
        "the second call's result shares memory with the first's: the backend hands out a buffer it reuses, "
        "so an earlier result changes under the caller")


def test_the_record_of_several_outputs_keeps_the_first_outputs_metrics_on_top():
    m = {"out": {"max_ulp": 1}, "w": {"max_ulp": 2}}
    rec = sv.outputs_record("out", m)
    assert rec == {"max_ulp": 1, "outputs": {"out": {"max_ulp": 1}, "w": {"max_ulp": 2}}}
    assert rec["outputs"]["out"] is not m["out"]
    assert sv.outputs_record("x", m) == {"outputs": m}
