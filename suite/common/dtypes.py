"""The dtypes the suite passes, by name: the three floating dtypes whose results are judged (with
the rounding and storage facts that numpy and ml_dtypes get wrong for bfloat16, see
docs/precision.md), and the exact dtypes (integers and BOOL: class indices, integer operands an
operator promotes) which are drawn, stored and passed bit for bit but never judged, so the
tolerance table has no entry for them."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from suite.common.half import to_float16

bfloat16 = np.dtype(ml_dtypes.bfloat16)

# The judged dtypes: an output in one of these is compared with a tolerance (cases/tolerances.yaml).
JUDGED = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": bfloat16,
}
# The exact dtypes: inputs only. A value drawn is the value passed (no rounding), a result in one of
# them would need an exact comparison, not a tolerance: no case judges one (suite/cases/expand.py).
EXACT = {
    "int64": np.dtype(np.int64),
    "int32": np.dtype(np.int32),
    "int16": np.dtype(np.int16),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_),
}
DTYPES = {**JUDGED, **EXACT}
# Short forms accepted in case files.
ALIASES = {"fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16",
           "bf16": "bfloat16"}


def canonical(name: str) -> str:
    """The canonical dtype name for `name`, or KeyError."""
    name = ALIASES.get(name, name)
    if name not in DTYPES:
        raise KeyError(name)
    return name


def dtype_of(name: str) -> np.dtype:
    return DTYPES[canonical(name)]


def is_exact(name: str) -> bool:
    """Whether the dtype called `name` is an exact (integer or BOOL) one: never judged."""
    return canonical(name) in EXACT


def exact_range(name: str) -> "tuple[int, int]":
    """The smallest and largest value of an exact dtype (BOOL: 0 and 1)."""
    dt = EXACT[canonical(name)]
    if dt == np.bool_:
        return 0, 1
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def name_of(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    for name, dt in DTYPES.items():
        if dt == dtype:
            return name
    return str(dtype)


class FloatInfo:
    """What the comparison needs of a dtype: np.finfo refuses bfloat16, ml_dtypes.finfo does not."""

    def __init__(self, dtype: np.dtype) -> None:
        fi = ml_dtypes.finfo(dtype) if np.dtype(dtype) == bfloat16 else np.finfo(dtype)
        self.max = float(fi.max)
        self.tiny = float(fi.tiny)             # smallest normal
        self.mant_bits = int(fi.nmant)         # stored significand bits
        self.min_exp = int(fi.minexp)          # exponent of the smallest normal
        self.smallest_subnormal = float(fi.smallest_subnormal)


_INFO: dict = {}


def finfo(dtype: np.dtype) -> FloatInfo:
    dtype = np.dtype(dtype)
    if dtype not in _INFO:
        _INFO[dtype] = FloatInfo(dtype)
    return _INFO[dtype]


def round_to(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 -> `dtype` with one correct round-to-nearest-even.

    numpy rounds float64 to float32 and to float16 correctly in one step (float16 by
    suite/common/half.py, the same bits without numpy's slow path). ml_dtypes goes to
    bfloat16 through float32 (double rounding), so for bfloat16 we round the float64 bits to 8
    significant bits ourselves (then the casts are exact); values in bfloat16's subnormal range
    take the slower path of rounding to float32 *to odd* first, whose 16 spare bits make the
    second rounding exact.
    """
    dtype = np.dtype(dtype)
    x = np.asarray(x, dtype=np.float64)
    if dtype == np.float16:
        return to_float16(x)
    if dtype != bfloat16:
        with np.errstate(over="ignore"):
            return x.astype(dtype)
    bits = x.view(np.uint64)
    lsb = (bits >> np.uint64(45)) & np.uint64(1)
    r = (bits + (np.uint64(0x0FFFFFFFFFFF) + lsb)) & np.uint64(0xFFFFE00000000000)
    with np.errstate(over="ignore", invalid="ignore"):
        out = r.view(np.float64).astype(np.float32).astype(bfloat16)
        special = ~np.isfinite(x) | (np.abs(x) < _BF16_TINY)
    if np.any(special):
        out = np.where(special, _round_to_bf16_via_odd(x), out)
    return np.asarray(out)              # (0-d arithmetic gives numpy scalars: keep it an array)


_BF16_TINY = 2.0 ** -126


def _round_to_bf16_via_odd(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        back = f.astype(np.float64)
        # Truncate toward zero: step back where RNE went away from zero (this includes inf).
        away = np.abs(back) > np.abs(x)
        f = np.where(away, np.nextafter(f, np.float32(0)), f)
        inexact = f.astype(np.float64) != x
    bits = f.view(np.uint32)
    bits = np.where(inexact & np.isfinite(x), bits | np.uint32(1), bits)
    return bits.astype(np.uint32).view(np.float32).astype(bfloat16)


def to_bits(a: np.ndarray) -> np.ndarray:
    """Raw bits of an array, for storage that np.save cannot mangle."""
    a = np.asarray(a, order="C")     # (np.ascontiguousarray would make a 0-d array 1-d)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def from_bits(bits: np.ndarray, name: str) -> np.ndarray:
    return np.asarray(bits, order="C").view(dtype_of(name))


def ulp(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The spacing of `dtype` at |x| (float64 in, float64 out); the subnormal spacing below tiny,
    inf for inf and NaN. The exponent is read from the float64 bits (exact, and no log2)."""
    fi = finfo(dtype)
    x = np.asarray(x, dtype=np.float64)
    e = ((x.view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1023
    out = np.ldexp(1.0, np.maximum(e, fi.min_exp) - fi.mant_bits)
    if e.size and e.max() == 1024:
        out = np.where(e == 1024, np.inf, out)
    return out
