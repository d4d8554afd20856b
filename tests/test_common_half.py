"""suite/common/half.py gives numpy's float16 bits for float32 and float64, on the values where a
rounding goes wrong: every float16's midpoint with its neighbours (the ties), the subnormal and
overflow boundaries, signed zeros, infinities and NaN payloads. (All 2^32 float32 patterns:
benchmarks/half_exhaustive.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from suite.common import dtypes
from suite.common.half import _CHUNK, to_float16


def _numpy(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return x.astype(np.float16).view(np.uint16)


def _ties(ftype) -> np.ndarray:
    """Each finite float16, the midpoints between neighbours (and past 65504), one ulp of `ftype`
    either side of each, both signs."""
    h = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    mids = (h[:-1] + h[1:]) / 2                     # exact in float64 (and in float32: 12 bits)
    mids = np.concatenate([mids, [65504.0 + 16.0]])  # the midpoint to the next, infinity's
    points = np.concatenate([h, mids]).astype(ftype)
    up = np.nextafter(points, ftype(np.inf))
    down = np.nextafter(points, ftype(0))
    allp = np.concatenate([points, up, down])
    return np.concatenate([allp, -allp])


@pytest.mark.parametrize("ftype", [np.float32, np.float64])
def test_every_tie_and_its_neighbours_round_as_numpy_does(ftype):
    x = _ties(ftype)
    got = to_float16(x).view(np.uint16)
    want = _numpy(x)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("ftype,utype", [(np.float32, np.uint32), (np.float64, np.uint64)])
def test_specials_and_random_bit_patterns(ftype, utype):
    f = np.finfo(ftype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 65504.0, 65519.99, 65520.0, 65536.0,
                        2.0 ** -14, 2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0001, 2.0 ** -26, 3 * 2.0 ** -25,
                        float(f.max), float(f.tiny), float(f.smallest_subnormal)], dtype=ftype)
    nbits = np.dtype(utype).itemsize * 8
    rng = np.random.default_rng(20261202)
    raw = rng.integers(0, 2 ** 63, size=300_000, dtype=np.uint64)
    rand = (raw >> np.uint64(64 - nbits)).astype(utype).view(ftype) if nbits < 64 else raw.view(ftype)
    # NaNs with payloads of every kind: quiet, signalling, payload only in the bits a cast drops
    exp_all = ((1 << (nbits - 1)) - 1) ^ ((1 << np.finfo(ftype).nmant) - 1)
    nans = np.array([exp_all | 1, exp_all | (1 << (np.finfo(ftype).nmant - 1)), exp_all | 0x3FF,
                     (1 << (nbits - 1)) | exp_all | 5], dtype=utype).view(ftype)
    x = np.concatenate([special, rand, nans])
    got = to_float16(x).view(np.uint16)
    want = _numpy(x)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(x[i].view(utype), hex(got[i]), hex(want[i])) for i in bad[:5]]


def test_shapes_order_and_chunks_are_kept():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, _CHUNK // 2 + 7)) * 1e-5).astype(np.float32)   # more than a chunk
    view = x[:, ::2].T                                       # not contiguous
    assert np.array_equal(to_float16(view).view(np.uint16), _numpy(view))
    assert to_float16(view).shape == view.shape
    zero_d = to_float16(np.asarray(np.float64(1e-6)))
    assert zero_d.shape == () and zero_d.view(np.uint16) == _numpy(np.asarray(1e-6))
    assert to_float16(np.zeros((0, 4), np.float32)).shape == (0, 4)


def test_other_dtypes_are_refused():
    with pytest.raises(TypeError, match="float32 or float64"):
        to_float16(np.zeros(3, np.float16))


def test_round_to_float16_goes_through_it_and_keeps_one_rounding():
    # a float64 just above a float16 tie, which float32 would round onto the tie (then down to even)
    tie = (1.0 + 2.0 ** -11)                                 # between 1 and 1 + 2^-10
    x = np.array([tie + 2.0 ** -40, -(tie + 2.0 ** -40), 2.0 ** -25 + 2.0 ** -60])
    got = dtypes.round_to(x, np.float16).view(np.uint16)
    assert np.array_equal(got, _numpy(x))
    assert got[0] == 0x3C01 and got[2] == 0x0001            # up: the exact value is above the tie
