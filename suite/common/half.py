"""float32 and float64 to float16 with one round to nearest even, at the same speed for every value.

numpy's own cast gives the same bits, but takes about 75 ns an element (against about 3) for every
value whose float16 is subnormal, zero from a nonzero, or an overflow to infinity: it raises the
floating-point status per element. A loss's gradients are mostly such values in float16 (a mean
divides by N), and the reference backend and the judge cast hundreds of millions of them a run
(docs/figures.md, "Where the time goes"). This does the rounding on the bits instead:
- normal results: add the exponent rebias and the round-half-to-even carry to the bits, shift;
- subnormal results: one float addition of 2^-24's magic number (its ulp is float16's smallest
  subnormal) lets the hardware round the mantissa, exactly;
- overflows to infinity, infinities: 0x7C00 of the sign; NaNs: numpy's own cast (its payload bits).
tests/test_common_half.py checks it against numpy on every float16 midpoint and its neighbours;
benchmarks/half_exhaustive.py on all 2^32 float32 patterns.
"""
from __future__ import annotations

import numpy as np

_CHUNK = 1 << 16       # elements a pass: the temporaries stay in the core's cache
_SMALL = 256           # up to this many, numpy's cast costs less than this one's ~17 us of calls


def _half_bits(x: np.ndarray, utype: type, ftype: type, mant: int, bias: int) -> np.ndarray:
    """float16 bits of a contiguous 1-D float array (`mant` and `bias`: its mantissa bits and
    exponent bias)."""
    nbits = np.dtype(utype).itemsize * 8
    u = utype
    bits = x.view(utype)
    mag = bits & u((1 << (nbits - 1)) - 1)
    sign = (bits >> u(nbits - 16)) & u(0x8000)
    shift = mant - 10
    rebias = (((15 - bias) << mant) + (1 << (shift - 1)) - 1) % (1 << nbits)
    with np.errstate(all="ignore"):
        out = (mag + u(rebias) + ((mag >> u(shift)) & u(1))) >> u(shift)
        sub = mag < u((bias - 14) << mant)                  # below float16's smallest normal
        if sub.any():
            magic = ftype(2.0 ** (mant - 24))
            rounded = (mag.view(ftype) + magic).view(utype) - magic.view(utype)
            out = np.where(sub, rounded, out)
        over = mag >= u((bias + 16) << mant)                # 2^16 and up, infinity, NaN
        if over.any():
            out = np.where(over, u(0x7C00), out)
    half = (out | sign).astype(np.uint16)
    nan = mag > u(((1 << (nbits - mant - 1)) - 1) << mant)
    if nan.any():
        with np.errstate(all="ignore"):
            half[nan] = x[nan].astype(np.float16).view(np.uint16)
    return half


def to_float16(x: np.ndarray) -> np.ndarray:
    """`x` (float32 or float64, any shape) as float16: the bits numpy's `astype(np.float16)` gives."""
    arr = np.asarray(x)
    if arr.dtype == np.float32:
        kind = (np.uint32, np.float32, 23, 127)
    elif arr.dtype == np.float64:
        kind = (np.uint64, np.float64, 52, 1023)
    else:
        raise TypeError(f"to_float16 takes float32 or float64, not {arr.dtype}")
    if arr.size <= _SMALL:
        with np.errstate(all="ignore"):
            return arr.astype(np.float16)
    flat = np.ascontiguousarray(arr).reshape(-1)
    out = np.empty(flat.shape, np.uint16)
    for i in range(0, flat.size, _CHUNK):
        out[i:i + _CHUNK] = _half_bits(flat[i:i + _CHUNK], *kind)
    return out.view(np.float16).reshape(arr.shape)
