"""Results compared bit for bit (suite/run/bits.py, the determinism tests): a copy is memory of its
own, a digest changes with any bit, dtype or shape, and the elements that differ are told, NaN
matching any NaN."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from suite.common import dtypes
from suite.run import bits


def test_a_copy_is_memory_of_its_own():
    a = np.arange(4, dtype=np.float32)
    c = bits._copied({"out": a})["out"]                  # a one-output call's result: its one entry
    a[0] = 9
    assert c.tolist() == [0.0, 1.0, 2.0, 3.0] and type(c) is np.ndarray
    d = {"out": np.ones(2, np.float16), "totalWeightOut": np.zeros((), np.float32)}
    cd = bits._copied(d)
    d["out"][0] = 5
    assert list(cd) == ["out", "totalWeightOut"] and cd["out"].tolist() == [1.0, 1.0]
    assert cd["out"].dtype == np.float16 and cd["totalWeightOut"].shape == ()
    assert not np.may_share_memory(cd["totalWeightOut"], d["totalWeightOut"])


def test_the_digest_is_of_dtype_shape_and_every_bit():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    h = hashlib.sha256(b"<f4(2, 3)")
    h.update(a.tobytes())
    assert bits._digest(a) == h.hexdigest()
    assert bits._digest(a.T) == bits._digest(np.ascontiguousarray(a.T))     # a view: its own bits, in order
    assert bits._digest(a) != bits._digest(a.reshape(3, 2))
    assert bits._digest(a) != bits._digest(a.view(np.int32))
    b = a.copy()
    b.view(np.uint32)[1, 2] ^= 1
    assert bits._digest(a) != bits._digest(b)
    nan1, nan2 = np.array([np.nan], np.float32), np.array([np.nan], np.float32)
    nan2.view(np.uint32)[0] ^= 1                                           # another payload
    assert bits._digest(nan1) != bits._digest(nan2)
    assert bits._digest(np.zeros((0, 3), np.float16)) != bits._digest(np.zeros((3, 0), np.float16))


def test_the_digest_of_several_outputs_names_each_in_order():
    x, y = np.ones(2, np.float32), np.zeros((), np.float32)
    assert bits.digest_of({"out": x}) == hashlib.sha256(f"out:{bits._digest(x)}".encode()).hexdigest()
    assert bits.digest_of({"out": x}) != bits.digest_of({"out": np.ones(2, np.float16)})
    want = hashlib.sha256(f"out:{bits._digest(x)}w:{bits._digest(y)}".encode()).hexdigest()
    assert bits.digest_of({"out": x, "w": y}) == want
    assert bits.digest_of({"w": y, "out": x}) != want
    assert bits.digest_of({"out": x, "v": y}) != want


def test_identical_results_do_not_differ_and_any_nan_matches_any_nan():
    a = np.array([1.0, np.nan, -0.0], np.float32)
    b = a.copy()
    b.view(np.uint32)[1] ^= 3                                              # another NaN
    assert bits.differing(a, b, (3,)) is None
    c = np.array([1.0, np.nan, 0.0], np.float32)                           # -0.0 and 0.0 differ in bits
    assert bits.differing(a, c, (3,)) == (1, 3, ["    index (2,): first -0.0, second 0.0"])
    d = np.array([1.0, 2.0, -0.0], np.float32)                             # NaN against a number
    assert bits.differing(a, d, (3,)) == (1, 3, ["    index (1,): first nan, second 2.0"])


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_the_first_five_differences_are_told_by_their_index(dt):
    t = dtypes.dtype_of(dt)
    a = np.zeros((2, 4), t)
    b = a.copy()
    b.reshape(-1)[1:8] = 1
    got = bits.differing(a, b, (2, 4))
    assert got[:2] == (7, 8)
    assert got[2] == [f"    index {i}: first 0.0, second 1.0" for i in [(0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]]
