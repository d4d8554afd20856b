"""The framing of a backend's reply (suite/run/protocol.py), checked in pytest's process: each reply
the backend's process may send, and for every way it can be wrong the one line that says so. A
reply let through here is taken as the backend's answer, so each check is tried on both sides of
its bound."""
from __future__ import annotations

import numpy as np
import pytest

from suite.common import dtypes
from suite.run import protocol
from suite.run.wire import ProtocolError


def _head(**fields):
    """An outcome's header, its keys in sorted order: its repr (in a reason, and so in a test's
    id) must not depend on the hash seed, or two xdist workers collect different tests."""
    h = {k: None for k in sorted(protocol.KEYS)}
    h["device_lost"] = False
    h.update(fields)
    return h


def _cut(text):
    """What _short makes of a long description: 77 characters and an ellipsis."""
    return text if len(text) <= 80 else text[:77] + "..."


def _refused(fn, *args, **kw):
    with pytest.raises(ProtocolError) as e:
        fn(*args, **kw)
    return str(e.value)


# A one-output call's written output: every outcome names its arrays by output, one entry here.
ONE = [("out", "float32", (2,))]


# -- one outcome ---------------------------------------------------------------------------------
def test_the_fields_of_an_outcome():
    assert protocol.RESULTS == ("array", "status", "unsupported", "raised", "returned", "violation", "device_fault")
    assert protocol.TEXTS == ("unsupported", "raised", "trace", "returned", "aliased", "violation", "device_fault")
    assert protocol.KEYS == set(protocol.RESULTS) | set(protocol.TEXTS) | {"device_lost"}
    assert protocol.MAX_TEXT == 65536


@pytest.mark.parametrize("fields", [
    {"array": {"out": 0}}, {"array": {"out": 2}}, {"array": {"out": 0}, "aliased": "input self"}, {"status": 0}, {"status": -5},
    {"unsupported": "no"}, {"raised": ""}, {"raised": "E: x", "trace": 'File "b.py", line 3, in run'}, {"returned": "x" * protocol.MAX_TEXT}, {"violation": "v"},
    {"device_fault": "f"}, {"device_fault": "f", "device_lost": True},
])
def test_a_well_formed_outcome_is_returned_as_a_copy(fields):
    h = _head(**fields)
    got = protocol.outcome(h, 3, ONE)
    assert got == h and got is not h


@pytest.mark.parametrize("head, why", [
    (["array", 0], "an outcome that is a list, not a dict"),
    (None, "an outcome that is a NoneType, not a dict"),
    ({**_head(status=1), "extra": 1, 3: 4}, "an outcome with keys 'extra', 3 too many and none missing"),
    ({k: v for k, v in _head(status=1).items() if k not in ("raised", "aliased")},
     "an outcome with keys none too many and aliased, raised missing"),
    (_head(array={"out": 3}), "array index 3 of out (the reply carries 3 arrays)"),
    (_head(array={"out": -1}), "array index -1 of out (the reply carries 3 arrays)"),
    (_head(array={"out": True}), "array index True of out (the reply carries 3 arrays)"),
    (_head(array={"out": 1.0}), "array index 1.0 of out (the reply carries 3 arrays)"),
    (_head(array=0), "arrays 0 for the outputs out"),           # a bare index: no output named
    (_head(status=1.0), "status 1.0: not an int"),
    (_head(status=False), "status False: not an int"),
    (_head(raised=b"x"), "raised bytes: not a str of at most 65536 characters"),
    (_head(returned="x" * 65537), "returned str: not a str of at most 65536 characters"),
    (_head(array={"out": 0}, aliased=3), "aliased int: not a str of at most 65536 characters"),
    (_head(device_fault=1), "device_fault int: not a str of at most 65536 characters"),
    (_head(unsupported=["x"]), "unsupported list: not a str of at most 65536 characters"),
    (_head(violation=1), "violation int: not a str of at most 65536 characters"),
    (_head(status=1, device_lost=1), "device_lost 1: not a bool"),
    (_head(status=1, device_lost=None), "device_lost None: not a bool"),
    (_head(), "an outcome with 0 results (none), not one"),
    (_head(status=1, raised="x", array={"out": 0}), "an outcome with 3 results (array, status, raised), not one"),
    (_head(status=1, aliased="input self"), "aliased without an array"),
    (_head(status=1, device_lost=True), "device_lost without a device fault"),
    (_head(status=1, trace="File"), "trace without an exception raised"),
    (_head(raised="E: x", trace=["File"]), "trace list: not a str of at most 65536 characters"),
])
def test_every_way_an_outcome_is_wrong_is_said(head, why):
    assert _refused(protocol.outcome, head, 3, ONE) == why


def test_an_outcome_of_several_outputs_names_each_outputs_array():
    written = [("out", "float32", (2,)), ("totalWeightOut", "float32", ())]
    h = _head(array={"totalWeightOut": 1, "out": 0})
    assert protocol.outcome(h, 2, written) == h
    assert protocol.outcome(_head(status=3), 2, written)["status"] == 3          # no array: nothing to name
    assert _refused(protocol.outcome, _head(array=0), 2, written) == \
        "arrays 0 for the outputs out, totalWeightOut"
    assert _refused(protocol.outcome, _head(array={"out": 0}), 2, written) == \
        "arrays {'out': 0} for the outputs out, totalWeightOut"
    assert _refused(protocol.outcome, _head(array={"out": 0, "totalWeightOut": 1, "x": 2}), 3, written) == \
        "arrays {'out': 0, 'totalWeightOut': 1, 'x': 2} for the outputs out, totalWeightOut"
    assert _refused(protocol.outcome, _head(array={"out": 0, "totalWeightOut": 2}), 2, written) == \
        "array index 2 of totalWeightOut (the reply carries 2 arrays)"
    assert _refused(protocol.outcome, _head(array={"out": -1, "totalWeightOut": 1}), 2, written) == \
        "array index -1 of out (the reply carries 2 arrays)"
    assert _refused(protocol.outcome, _head(array={"out": True, "totalWeightOut": 1}), 2, written) == \
        "array index True of out (the reply carries 2 arrays)"
    assert _refused(protocol.outcome, _head(array={1: 0, "out": 1}), 2, [("out", "float32", (2,))]) == \
        "arrays {1: 0, 'out': 1} for the outputs out"


# -- a run's reply -------------------------------------------------------------------------------
def test_a_run_reply_gives_each_outcome_once_checked():
    heads = [_head(array={"out": 1}), _head(status=3), _head(array={"out": 0})]
    outs = protocol.done(("done", 9, heads), 9, 3, 2, ONE, [np.zeros(2, np.float32)] * 2)
    assert outs == heads and all(o is not h for o, h in zip(outs, heads))
    assert protocol.done(("done", 1, [_head(raised="x")]), 1, 1, 0, ONE) == [_head(raised="x")]


@pytest.mark.parametrize("reply, why", [
    (["done", 9, []], "a reply ['done', 9, []], not ('done', 9, outcomes)"),
    (("done", 9), "a reply ('done', 9), not ('done', 9, outcomes)"),
    (("done", 9, [], 1), "a reply ('done', 9, [], 1), not ('done', 9, outcomes)"),
    (("timed", 9, []), "a reply ('timed', 9, []), not ('done', 9, outcomes)"),
    (("done", 8, []), "a reply to request 8, not to this one (9)"),
    (("done", 9.0, []), "a reply to request 9.0, not to this one (9)"),
    (("done", 9, (_head(status=1),)), _cut(repr((_head(status=1),))) + " as the outcomes of 1 calls"),
    (("done", 9, []), "[] as the outcomes of 1 calls"),
    (("done", 9, [_head(status=1)] * 2), _cut(repr([_head(status=1)] * 2)) + " as the outcomes of 1 calls"),
])
def test_every_way_a_run_reply_is_wrong_is_said(reply, why):
    assert _refused(protocol.done, reply, 9, 1, 0, ONE) == why


def test_each_array_of_a_run_reply_is_used_exactly_once():
    two = [np.zeros(2, np.float32)] * 2
    assert _refused(protocol.done, ("done", 9, [_head(array={"out": 0}), _head(array={"out": 0})]), 9, 2, 2,
                    ONE, two) == "array indices [0, 0] for the 2 arrays carried"
    assert _refused(protocol.done, ("done", 9, [_head(array={"out": 1})]), 9, 1, 2, ONE, two) == \
        "array indices [1] for the 2 arrays carried"
    assert _refused(protocol.done, ("done", 9, [_head(status=1)]), 9, 1, 1, ONE, two[:1]) == \
        "array indices [] for the 1 arrays carried"


def _arrays():
    return [np.zeros(2, np.float32), np.zeros((), np.float32), np.zeros(2, np.float32), np.zeros((), np.float32)]


WRITTEN = [("out", "float32", (2,)), ("totalWeightOut", "float32", ())]


def test_a_run_reply_of_several_outputs_checks_each_arrays_dtype_and_shape():
    heads = [_head(array={"out": 2, "totalWeightOut": 1}), _head(array={"out": 0, "totalWeightOut": 3})]
    assert protocol.done(("done", 4, heads), 4, 2, 4, WRITTEN, _arrays()) == heads
    swapped = [_head(array={"out": 1, "totalWeightOut": 0}), _head(array={"out": 2, "totalWeightOut": 3})]
    assert _refused(protocol.done, ("done", 4, swapped), 4, 2, 4, WRITTEN, _arrays()) == \
        "out as dtype float32 shape (), not float32 (2,)"
    arrays = _arrays()
    arrays[3] = np.zeros((), np.float16)
    assert _refused(protocol.done, ("done", 4, heads), 4, 2, 4, WRITTEN, arrays) == \
        "totalWeightOut as dtype float16 shape (), not float32 ()"
    arrays = [np.zeros(2, dtypes.bfloat16), np.zeros((), np.float32)]
    assert _refused(protocol.done, ("done", 4, [_head(array={"out": 0, "totalWeightOut": 1})]), 4, 1, 2,
                    WRITTEN, arrays) == "out as dtype bfloat16 shape (2,), not float32 (2,)"
    reused = [_head(array={"out": 0, "totalWeightOut": 1}), _head(array={"out": 0, "totalWeightOut": 1})]
    assert _refused(protocol.done, ("done", 4, reused), 4, 2, 4, WRITTEN, _arrays()) == \
        "array indices [0, 1, 0, 1] for the 4 arrays carried"
    assert protocol.done(("done", 4, [_head(status=2)]), 4, 1, 0, WRITTEN, []) == [_head(status=2)]
    # the shape as the host gives it (a list from the request) is compared as a tuple
    one = [_head(array={"out": 0, "totalWeightOut": 1})]
    assert protocol.done(("done", 4, one), 4, 1, 2, [("out", "float32", [2]), ("totalWeightOut", "float32", [])],
                         _arrays()[:2]) == one


# -- start-up, timing, close -----------------------------------------------------------------------
READY = {"name": "n", "capabilities": ["status"], "products": ["atlas-a2"], "deterministic": True,
         "working_memory": 2.0}


def test_a_start_up_reply_is_ready_with_exactly_its_fields_or_an_error():
    assert protocol.ready(("ready", READY)) == ("ready", READY)
    assert protocol.ready(("error", "no device")) == ("error", "no device")
    assert protocol.ready(("error", "x" * protocol.MAX_TEXT)) == ("error", "x" * protocol.MAX_TEXT)
    assert protocol.READY == {"name": str, "capabilities": list, "products": list, "deterministic": bool,
                              "working_memory": float}


@pytest.mark.parametrize("reply, why", [
    (["ready", READY], "a start-up reply " + _cut(repr(["ready", READY]))),
    (("ready",), "a start-up reply ('ready',)"),
    (("ready", READY, 1), "a start-up reply " + _cut(repr(("ready", READY, 1)))),
    (("error", b"x"), "a start-up reply ('error', b'x')"),
    (("error", "x" * (protocol.MAX_TEXT + 1)), "a start-up reply ('error', '" + "x" * 66 + "..."),
    (("error", "x", 1), "a start-up reply ('error', 'x', 1)"),
    (["error", "x"], "a start-up reply ['error', 'x']"),
    (("hello", READY), "a start-up reply " + _cut(repr(("hello", READY)))),
    (("ready", [("name", "n")]), "a start-up reply ('ready', [('name', 'n')])"),
    (("ready", {**READY, "x": 1}), "start-up fields " + _cut(repr({**READY, "x": 1}))),
    (("ready", {k: v for k, v in READY.items() if k != "name"}),
     "start-up fields " + _cut(repr({k: v for k, v in READY.items() if k != "name"}))),
    (("ready", {**READY, "working_memory": 2}), "start-up fields"),
    (("ready", {**READY, "deterministic": 1}), "start-up fields"),
    (("ready", {**READY, "capabilities": ("status",)}), "start-up fields"),
    (("ready", {**READY, "products": "atlas-a2"}), "start-up fields"),
    (("ready", {**READY, "name": b"n"}), "start-up fields"),
    (("ready", {**READY, "capabilities": [1]}), "start-up fields"),
    (("ready", {**READY, "products": ["x" * (protocol.MAX_TEXT + 1)]}), "start-up fields"),
    (("ready", {**READY, "name": "x" * (protocol.MAX_TEXT + 1)}), "start-up fields"),
])
def test_every_way_a_start_up_reply_is_wrong_is_said(reply, why):
    got = _refused(protocol.ready, reply)
    assert got == why if why != "start-up fields" else got.startswith("start-up fields {")


def test_a_close_reply_is_closed_with_an_incident_or_none():
    assert protocol.closed(("closed", None)) is None
    assert protocol.closed(("closed", "close() raised")) == "close() raised"
    for bad, why in [(["closed", None], "a reply ['closed', None] to close"), (("closed",), "a reply ('closed',) to close"),
                     (("closed", None, 1), "a reply ('closed', None, 1) to close"),
                     (("done", None), "a reply ('done', None) to close"), (("closed", 3), "a reply ('closed', 3) to close"),
                     (("closed", "x" * (protocol.MAX_TEXT + 1)), None)]:
        got = _refused(protocol.closed, bad)
        assert got == why if why else got.startswith("a reply ('closed', 'xxx") and got.endswith("... to close")


GOOD = {"clock": "device", "source": "e", "seconds": [1.0, 2.0], "wall_s": 3.0}


@pytest.mark.parametrize("reply, why", [
    (["timed", 7, GOOD], "a reply " + _cut(repr(["timed", 7, GOOD])) + ", not ('timed', 7, answer)"),
    (("timed", 7), "a reply ('timed', 7), not ('timed', 7, answer)"),
    (("timed", 7, GOOD, 1), "a reply " + _cut(repr(("timed", 7, GOOD, 1))) + ", not ('timed', 7, answer)"),
    (("timed", 7, [1.0]), "a reply ('timed', 7, [1.0]), not ('timed', 7, answer)"),
    (("timed", True, GOOD), "a timing reply to request True, not to this one (7)"),
    (("timed", 7.0, GOOD), "a timing reply to request 7.0, not to this one (7)"),
    (("timed", 7, {"not_timed": "x" * (protocol.MAX_TEXT + 1)}), "a not-timed reason 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                                                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."),
    (("timed", 7, {"not_timed": "x", "clock": "device"}), "timing fields ['clock', 'not_timed']"),
    (("timed", 7, {k: v for k, v in GOOD.items() if k != "source"}), "timing fields ['clock', 'seconds', 'wall_s']"),
    (("timed", 7, {**GOOD, "clock": 1}), "timing fields {'clock': 1, 'source': 'e', 'seconds': [1.0, 2.0], 'wall_s': 3.0}"),
    (("timed", 7, {**GOOD, "source": None}), "timing fields {'clock': 'device', 'source': None, 'seconds': [1.0, 2.0], "
                                             "'wall_s': 3.0}"),
    (("timed", 7, {**GOOD, "wall_s": 3}), "timing fields {'clock': 'device', 'source': 'e', 'seconds': [1.0, 2.0], "
                                          "'wall_s': 3}"),
    (("timed", 7, {**GOOD, "seconds": (1.0, 2.0)}), "(1.0, 2.0) as the seconds of 2 launches"),
    (("timed", 7, {**GOOD, "seconds": [1.0, 2.0, 3.0]}), "[1.0, 2.0, 3.0] as the seconds of 2 launches"),
    (("timed", 7, {**GOOD, "seconds": [1.0, 2]}), "[1.0, 2] as the seconds of 2 launches"),
])
def test_every_way_a_timing_reply_is_wrong_is_said(reply, why):
    assert _refused(protocol.timed, reply, 7, 2) == why


def test_a_timing_reply_is_returned_as_a_copy():
    a = {"not_timed": "no hook"}
    got = protocol.timed(("timed", 7, a), 7, 2)
    assert got == a and got is not a
    got = protocol.timed(("timed", 7, GOOD), 7, 2)
    assert got == GOOD and got is not GOOD
    assert protocol.timed(("timed", 7, {**GOOD, "seconds": []}), 7, 0)["seconds"] == []


class _BadRepr:
    def __repr__(self):
        raise RuntimeError("no")


def test_whatever_came_is_described_in_at_most_80_characters():
    assert protocol._short("x" * 78) == repr("x" * 78)
    assert protocol._short("x" * 79) == "'" + "x" * 76 + "..."
    assert len(protocol._short(list(range(100)))) == 80
    assert protocol._short(_BadRepr()) == "<_BadRepr>"
