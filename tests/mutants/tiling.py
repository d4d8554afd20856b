"""The vendor's tiling, as the scale mutants model it: which core computes which elements, in
which UB tiles (from the same ops-nn tiling the shape generators use: each operator's `tiling`,
whose `tile` is one UB tile in elements; an operator that declares none is not split).

A mutant stands for one chip: the first core count its family lists in cases/hardware.yaml."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from suite.common import dtypes
from suite.cases import hardware
from suite import ops


@lru_cache(maxsize=None)
def _hw() -> Dict[str, hardware.Hardware]:
    return hardware.load_hardware()


def cores(product: str) -> int:
    return _hw()[product].cores[0]


def block(dtype) -> int:
    """Elements per 32-byte block."""
    return 32 // dtypes.dtype_of(dtypes.name_of(dtype)).itemsize


def reach(dtype, product: str) -> int:
    """Elements one vector instruction covers at its repeat limit."""
    hw = _hw()[product]
    return hw.max_repeat * hw.repeat_bytes // dtypes.dtype_of(dtypes.name_of(dtype)).itemsize


def tile(op: str, product: str, dtype) -> Optional[int]:
    """One UB tile of the operator's kernel, in elements, every input of `dtype` (None: the
    operator declares no tile)."""
    name = dtypes.name_of(dtype)
    o = ops.get(op)
    return o.tiling(_hw()[product], {n: name for n in o.inputs}).get("tile")


def split(n: int, op: str, product: str, dtype) -> List[Tuple[int, int, int]]:
    """The vendor's elementwise split of n elements (ops-nn's elementwise loss-gradient host tiling,
    which the operators' `tiling` docstrings cite; the model for every operator): (start, length,
    tiles) per core. Up to one core per UB tile; an even split if n
    divides, else n // (used - 1) on all but one extra core, which takes the remainder; tiles of
    at most one UB tile, half of one with double buffering (past 65536 elements). No split (no
    parts) where the operator declares no tile."""
    t = tile(op, product, dtype)
    if not t:
        return []
    loops = -(-n // t)
    used = min(cores(product), loops)
    if used == 0:
        return []
    if n % used == 0:
        parts = [(i * (n // used), n // used) for i in range(used)]
    else:
        used -= 1
        length = n // used
        parts = [(i * length, length) for i in range(used)] + [(used * length, n % used)]
    cap = t // 2 if n > 256 * 256 else t
    return [(s, length, max(1, -(-length // cap))) for s, length in parts]


def tile_lengths(length: int, tiles: int) -> List[int]:
    """One core's tiles: ceil(length / tiles) each, the last one what is left."""
    each = math.ceil(length / tiles)
    out = []
    while length > 0:
        out.append(min(each, length))
        length -= each
    return out
