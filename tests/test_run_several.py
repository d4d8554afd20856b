"""What a backend's run returned for a call with several outputs (suite/run/calls.py `taken`, the
one path every call takes), in pytest's process: every written output exactly its shape and dtype,
memory of its own, each refusal said; and the outputs of a case as a request and a record carry them."""
from __future__ import annotations

import types

import numpy as np
import pytest

from suite.contract import OpCall
from suite.run import calls as sv
from suite.run import worst
from suite.run.runner import request_of
from tests.mutants import harness

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
    o, kept = sv.taken(_call(), _req(), got, [])
    assert list(o.arrays) == ["out", "totalWeightOut"] and o.aliased is None and o.returned is None
    assert o.arrays["out"] is got["out"] and [k is got[n] for k, n in zip(kept, ["out", "totalWeightOut"])] == [True, True]


def test_an_output_the_call_does_not_write_is_dropped_whatever_it_holds():
    o, kept = sv.taken(_call(), _req(written=["out"]), {"out": np.ones(2, np.float32), "totalWeightOut": "junk"}, [])
    assert list(o.arrays) == ["out"] and len(kept) == 1
    o, _ = sv.taken(_call(), _req(written=["out"]), {"out": np.ones(2, np.float32)}, [])
    assert list(o.arrays) == ["out"]
    # an unwritten output before a written one: the written one is still checked and taken
    o, kept = sv.taken(_call(), _req(written=["totalWeightOut"]), {"out": "junk", "totalWeightOut": np.ones((), np.float32)}, [])
    assert list(o.arrays) == ["totalWeightOut"] and len(kept) == 1
    o, _ = sv.taken(_call(), _req(written=["totalWeightOut"]), {"totalWeightOut": np.ones(3, np.float32)}, [])
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
    o, kept = sv.taken(_call(), _req(), got, [])
    assert (o.returned, o.arrays, kept) == (returned, None, None)


def test_an_output_without_a_shape_is_never_taken():
    o, kept = sv.taken(_call(), _req(outputs=[("out", None, "float32"), ("totalWeightOut", (), "float32")]),
                         _good(), [])
    assert o.returned == "out as shape (2,) dtype float32" and kept is None


def test_a_masked_output_is_a_violation_and_a_subclass_is_taken_by_value():
    got = {**_good(), "out": np.ma.masked_array(np.ones(2, np.float32), mask=[True, False])}
    o, kept = sv.taken(_call(), _req(), got, [])
    assert o.violation.startswith("the backend returned out as a numpy.ma.MaskedArray with 1 masked elements")
    assert kept is None
    got = {**_good(), "out": np.ma.masked_array(np.ones(2, np.float32))}
    o, kept = sv.taken(_call(), _req(), got, [])
    assert type(o.arrays["out"]) is np.ndarray and o.violation is None


def test_an_output_that_shares_memory_is_named():
    x = np.ones(4, np.float32)
    o, _ = sv.taken(_call(self=x[:2], weight=None), _req(), {**_good(), "out": x[:2]}, [])
    assert o.aliased == "input self (as out)"
    earlier = [np.zeros(3), np.ones((), np.float32)]
    o, _ = sv.taken(_call(), _req(), {**_good(), "totalWeightOut": earlier[1]}, earlier)
    assert o.aliased == "an earlier result"
    buf = np.ones(3, np.float32)
    o, _ = sv.taken(_call(), _req(outputs=[("out", (2,), "float32"), ("totalWeightOut", (2,), "float32")]),
                      {"out": buf[:2], "totalWeightOut": buf[1:]}, [])
    assert o.aliased == "output out (as totalWeightOut)"
    empty = np.zeros((0,), np.float32)
    o, _ = sv.taken(_call(self=empty, weight=None), _req(outputs=[("out", (0,), "float32"),
                                                                    ("totalWeightOut", (), "float32")]),
                      {"out": empty, "totalWeightOut": np.ones((), np.float32)}, [empty])
    assert o.aliased is None                          # an empty output holds nothing to share


MSE = "MseLossBackward-float32-atlas-a2-none-2x3.2x3.2x3-contiguous-uniform"
NLL = "NLLLoss-sfloat32.tint64.wfloat32-to-float32-atlas-training-none-ignore-100-4x5.4.5-contiguous-uniform"


def _cases():
    found = {c.id: c for c in harness.all_cases() if c.id in (MSE, NLL)}
    return found[MSE], found[NLL]


def test_the_shapes_and_outputs_of_a_case():
    """Every case has a mapping of outputs (a one-output operator's one entry, named by its
    declaration), and its request carries it with the outputs the call writes."""
    one, two = _cases()
    assert dict(one.all_outputs) == {"out": ((2, 3), "float32")}
    assert dict(two.all_outputs) == {"out": ((4,), "float32"), "totalWeightOut": ((), "float32")}
    req = request_of(one, {})
    assert (req["outputs"], req["written"]) == ([["out", (2, 3), "float32"]], ["out"])
    assert sv.call_of({**req, "inputs": {}}).outputs is None            # the contract's one-output call
    req = request_of(two, {})
    assert req["outputs"] == [["out", (4,), "float32"], ["totalWeightOut", (), "float32"]]
    assert req["written"] == ["out"]                                    # reduction none
    # a request that names no outputs (one made by hand) has out's alone, written
    bare = {"out_shape": (4,), "out_dtype": "float32"}
    assert (sv.outputs_of(bare), sv.written_of(bare)) == ([("out", (4,), "float32")], ("out",))


def test_a_one_output_calls_array_is_its_mappings_one_entry():
    call = OpCall(op="MseLossBackward", inputs={"self": np.zeros(2, np.float32)}, attrs={}, out_shape=(2,),
                  out_dtype=np.dtype(np.float32), product="atlas-a2")
    req = {"outputs": [("out", (2,), "float32")], "written": ["out"]}
    got = np.ones(2, np.float32)
    o, kept = sv.taken(call, req, got, [])
    assert list(o.arrays) == ["out"] and o.arrays["out"] is got and kept == [got] and o.aliased is None
    o, kept = sv.taken(call, req, {"out": got}, [])              # a mapping is no array of a one-output call
    assert (o.returned, o.arrays, kept) == ("dict, not a numpy array", None, None)
    o, _ = sv.taken(call, req, np.ones(3, np.float32), [])       # its refusals name no output
    assert o.returned == "shape (3,) dtype float32"
    o, _ = sv.taken(call, req, np.ma.masked_array(got, mask=[True, False]), [])
    assert o.violation.startswith("the backend returned a numpy.ma.MaskedArray with 1 masked")
    o, _ = sv.taken(call, req, call.inputs["self"], [])
    assert o.aliased == "input self"
    o, _ = sv.taken(call, req, got, [got])
    assert o.aliased == "an earlier result"


def test_what_an_aliased_result_is_told():
    assert sv.aliased_text("output out (as w)") == ("the result shares memory with output out (as w): two outputs "
                                                    "of one call must each be memory of their own")
    assert sv.aliased_text("input self") == ("the result shares memory with input self: the backend returned a "
                                             "view of its input, not a result of its own")
    assert sv.aliased_text("an earlier result") == (
        "the second call's result shares memory with the first's: the backend hands out a buffer it reuses, "
        "so an earlier result changes under the caller")


def test_the_record_of_several_outputs_keeps_the_first_outputs_metrics_on_top():
    one, two = _cases()
    v = {n: types.SimpleNamespace(metrics=lambda n=n: {"max_ulp": len(n)}) for n in ("out", "totalWeightOut")}
    rec = worst.outputs_record(two, v)
    assert rec == {"max_ulp": 3, "outputs": {"out": {"max_ulp": 3}, "totalWeightOut": {"max_ulp": 14}}}
    rec["max_ulp"] = 0
    assert rec["outputs"]["out"] == {"max_ulp": 3}                      # the top is a copy
    assert worst.outputs_record(two, {"totalWeightOut": v["totalWeightOut"]}) == {
        "outputs": {"totalWeightOut": {"max_ulp": 14}}}
    assert worst.outputs_record(one, {"out": v["out"]}) == {"max_ulp": 3}     # one output: as it always was
