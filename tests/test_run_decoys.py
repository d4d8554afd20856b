"""suite/run/decoys.py: the determinism tests' second process gets 1 to 3 decoy calls (the same
request, each input rolled) each time it starts, before its first call; the first process none. A
rolled input keeps its shape, dtype and values (class indices stay class indices); an input no roll
changes is sent as it is, and a call none of whose inputs changes makes no decoys yet. A fault in a
decoy is the call's fault, saying so. (End to end, with cached random kernels:
tests/test_determinism_caches.py.)"""
from __future__ import annotations

import os

import numpy as np
import pytest

from suite.run import decoys
from suite.run.decoys import Decoys, rolled
from suite.run.host import Fault, Hosted
from tests.test_run_host import _req
from tests.waiting import HANG_S


def _class_request():
    rng = np.random.default_rng(7)
    return {"op": "X", "layout": "contiguous", "attrs": {}, "out_shape": (), "out_dtype": "float32",
            "product": "atlas-a2",
            "inputs": {"self": rng.standard_normal((4, 5)).astype(np.float16),
                       "target": rng.integers(0, 5, size=4).astype(np.int64),
                       "weight": np.full(5, 0.5, dtype=np.float32), "one": np.float32(3.0).reshape(()),
                       "absent": None}}


def test_a_rolled_input_keeps_its_shape_dtype_and_values_and_one_no_roll_changes_is_kept():
    req = _class_request()
    for _ in range(20):
        got = rolled(req)
        assert {k: v for k, v in got.items() if k != "inputs"} == {k: v for k, v in req.items() if k != "inputs"}
        for name, a in req["inputs"].items():
            b = got["inputs"][name]
            if a is None:
                assert b is None
                continue
            assert (b.shape, b.dtype) == (a.shape, a.dtype)
            assert sorted(b.reshape(-1).tolist()) == sorted(a.reshape(-1).tolist())    # the same values
        for name in ("self", "target"):
            assert not np.array_equal(got["inputs"][name], req["inputs"][name])          # moved
        for name in ("weight", "one"):                  # one repeated value, one element: as they were
            assert got["inputs"][name] is req["inputs"][name]


def test_a_roll_is_of_the_flattened_input_by_a_drawn_offset():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = rolled({"inputs": {"a": a}}, pick=lambda n: 1)      # offset 1 + 1 = 2
    assert got["inputs"]["a"].tolist() == [[4, 5, 0], [1, 2, 3]]


def test_no_decoy_where_no_roll_changes_any_input():
    req = _class_request()
    req["inputs"] = {"weight": req["inputs"]["weight"], "one": req["inputs"]["one"], "absent": None}
    assert rolled(req) is None
    nan = np.array([np.nan, np.nan], dtype=np.float32)
    assert rolled({"inputs": {"a": nan}}) is None               # bit for bit: one repeated NaN


class Calls:
    def __init__(self, fail_at=None):
        self.made, self.fail_at = [], fail_at

    def __call__(self, req):
        self.made.append(req)
        if self.fail_at == len(self.made):
            raise Fault("the backend's process was killed by signal 11 (SIGSEGV) during the call", "signal 11 (SIGSEGV)")


@pytest.mark.parametrize("drawn", [0, 1, 2])
def test_one_to_three_decoys_once_per_start(drawn):
    picks = iter([drawn] + [0] * 10)
    d = Decoys(pick=lambda n: next(picks) if n == decoys.MOST else 0)
    req, calls = _req((2, 3)), Calls()
    d.before(1, req, calls)
    assert len(calls.made) == drawn + 1 == d.made
    assert all(c["inputs"]["self"].shape == (2, 3) and not np.array_equal(c["inputs"]["self"], req["inputs"]["self"])
               for c in calls.made)
    d.before(1, req, calls)                  # the same process: none
    assert len(calls.made) == drawn + 1
    d.before(2, req, calls)                  # restarted: decoys again
    assert len(calls.made) == drawn + 2


def test_decoys_wait_for_a_call_that_can_have_them():
    d, calls = Decoys(limit=1000), Calls()
    d.before(1, _req(()), calls)                 # one element each: a decoy would be the call itself
    d.before(1, _req((20, 20)), calls)           # 3,200 bytes of inputs: over the limit
    assert calls.made == [] and d.done_for is None
    d.before(1, _req((2, 3)), calls)
    assert 1 <= len(calls.made) <= decoys.MOST and d.done_for == 1


def test_a_fault_in_a_decoy_is_the_calls_and_says_so():
    d = Decoys(pick=lambda n: n - 1)             # three decoys; the second faults
    with pytest.raises(Fault) as e:
        d.before(1, _req((2, 3)), Calls(fail_at=2))
    assert e.value.kind == "signal 11 (SIGSEGV)"
    assert str(e.value).startswith("in a decoy call (the case's call on its inputs rolled") and "SIGSEGV" in str(e.value)


class Counting:
    """Answers with how many calls its process has had."""
    name = "counting"

    def __init__(self):
        self.calls = 0

    def run(self, call):
        self.calls += 1
        return np.full(call.out_shape, self.calls, dtype=np.float32)


class DiesFirst:
    """Exits on its process's first call."""
    name = "dies-first"

    def run(self, call):
        os._exit(3)


def test_the_second_process_has_decoys_before_its_first_call_the_first_none():
    h = Hosted("tests.test_run_decoys:Counting", {}, timeout=HANG_S)
    h.start()
    try:
        twin = h.twin()
        assert h.decoys is None and isinstance(twin.decoys, Decoys)
        first = [h.run(_req((2, 3)), 1, HANG_S)[0].arrays["out"].reshape(-1)[0] for _ in range(2)]
        second = [twin.run(_req((2, 3)), 1, HANG_S)[0].arrays["out"].reshape(-1)[0] for _ in range(2)]
        assert first == [1, 2] and 2 <= second[0] <= 1 + decoys.MOST and second[1] == second[0] + 1
        twin._kill()                                 # restarted: decoys again
        again = twin.run(_req((2, 3)), 1, HANG_S)[0].arrays["out"].reshape(-1)[0]
        assert 2 <= again <= 1 + decoys.MOST and twin.decoys.made == second[0] - 1 + again - 1
    finally:
        h.close()


def test_a_fault_in_the_second_processs_decoy_fails_the_call():
    h = Hosted("tests.test_run_decoys:DiesFirst", {}, timeout=HANG_S)
    h.start()
    try:
        with pytest.raises(Fault) as e:
            h.twin().run(_req((2, 3)), 1, HANG_S)
        assert e.value.kind == "exit 3" and str(e.value).startswith("in a decoy call"), str(e.value)
    finally:
        h._kill()
        h.close()
