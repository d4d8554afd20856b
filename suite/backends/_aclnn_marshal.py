"""numpy views <-> aclTensor layouts for the `aclnn` backend.

A view travels as it is: the staging buffer spans from the lowest address the view touches (or
the start of the array it was sliced from, so a sliced view keeps a real storage offset) to the
highest, the view's elements are scattered into it at their own positions, and shape, strides and
offset go to aclCreateTensor in elements. Gaps the view does not cover are filled with 0xFF bytes
(NaN for every float dtype), so a kernel that reads outside the view produces visible garbage.
Nothing here writes to the caller's arrays.
"""
from __future__ import annotations

from dataclasses import dataclass
import ctypes
from typing import List, Optional, Sequence, Tuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

# aclDataType by numpy dtype name (docs/aclnn-status.md).
ACL_DTYPES = {
    "float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int16": 6, "uint16": 7,
    "uint32": 8, "int64": 9, "uint64": 10, "float64": 11, "bool": 12, "bfloat16": 27,
}
ACL_BF16 = ACL_DTYPES["bfloat16"]
ALIGN = 32  # device buffers are sized and aligned in 32-byte units
_RAW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class LayoutError(Exception):
    """The view cannot be expressed to aclCreateTensor; the message says why."""


def acl_dtype(dtype: np.dtype, bf16_code: int = ACL_BF16) -> int:
    dtype = np.dtype(dtype)
    if dtype.name == "bfloat16":
        return bf16_code
    if dtype.name not in ACL_DTYPES:
        raise LayoutError(f"dtype {dtype.name} has no aclDataType")
    return ACL_DTYPES[dtype.name]


def raw_dtype(dtype: np.dtype) -> np.dtype:
    """Unsigned integer dtype of the same width: the bits travel, never converted values."""
    return np.dtype(_RAW[np.dtype(dtype).itemsize])


def contiguous_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    strides, run = [], 1
    for n in reversed(shape):
        strides.append(run)
        run *= max(int(n), 1)
    return tuple(reversed(strides))


@dataclass
class Layout:
    """One tensor as aclCreateTensor sees it, plus the host staging bytes of its storage."""
    dims: Tuple[int, ...]
    strides: Tuple[int, ...]  # elements
    offset: int  # elements from the buffer start to the first element
    storage: np.ndarray  # 1-D raw-bits staging array covering the whole storage
    code: int

    @property
    def nbytes(self) -> int:
        return int(self.storage.nbytes)

    @property
    def alloc_bytes(self) -> int:
        return max(ALIGN, -(-self.nbytes // ALIGN) * ALIGN)


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def input_layout(a: np.ndarray, allow_negative: bool, bf16_code: int = ACL_BF16) -> Layout:
    """The layout of input view `a`; negative strides raise LayoutError unless allowed."""
    code, isz, shape = acl_dtype(a.dtype, bf16_code), a.dtype.itemsize, tuple(int(n) for n in a.shape)
    raw = raw_dtype(a.dtype)
    if a.size == 0:  # nothing to read: any strides do; keep them canonical
        return Layout(shape, contiguous_strides(shape), 0, np.empty(0, raw), code)
    estrides = []
    for n, s in zip(shape, a.strides):
        if n == 1:
            estrides.append(None)  # never stepped along: any stride is equivalent
            continue
        if s % isz:
            raise LayoutError(f"stride {s} bytes is not a multiple of the item size {isz}")
        estrides.append(s // isz)
    canon = contiguous_strides(shape)
    estrides = [c if s is None else s for s, c in zip(estrides, canon)]
    if not allow_negative and any(s < 0 for s in estrides):
        raise LayoutError("negative stride")
    low = sum((n - 1) * s for n, s in zip(shape, estrides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, estrides) if s > 0)
    lead = _lead_elements(a, low, high, isz)
    offset = lead - low
    storage = np.full(offset + high + 1, np.iinfo(raw).max, dtype=raw)
    dst = as_strided(storage[offset:], shape=shape, strides=[s * isz for s in estrides], writeable=True)
    dst[...] = a.view(raw)
    return Layout(shape, tuple(estrides), offset, storage, code)


def _lead_elements(a: np.ndarray, low: int, high: int, isz: int) -> int:
    """Elements of the parent array before the view's lowest element (0 if unknowable)."""
    root = _root(a)
    if root is a or not (root.flags.c_contiguous or root.flags.f_contiguous):
        return 0
    start = a.__array_interface__["data"][0] + low * isz - root.__array_interface__["data"][0]
    end = a.__array_interface__["data"][0] + (high + 1) * isz - root.__array_interface__["data"][0]
    if start < 0 or end > root.nbytes or start % isz:
        return 0
    return start // isz


def out_layout(shape: Sequence[int], dtype: np.dtype, order: str = "C", lead: int = 0,
               bf16_code: int = ACL_BF16) -> Layout:
    """A fresh out tensor, pre-filled with 0xFF bytes (NaN) so unwritten elements show."""
    shape = tuple(int(n) for n in shape)
    code, raw = acl_dtype(dtype, bf16_code), raw_dtype(dtype)
    if order == "F":
        strides = tuple(reversed(contiguous_strides(tuple(reversed(shape)))))
    else:
        strides = contiguous_strides(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if n == 0:
        return Layout(shape, contiguous_strides(shape), 0, np.empty(0, raw), code)
    storage = np.full(lead + n, np.iinfo(raw).max, dtype=raw)
    return Layout(shape, strides, lead, storage, code)


def gather_out(layout: Layout, dtype: np.dtype) -> np.ndarray:
    """out's elements read through its strides, as a fresh C-contiguous array of `dtype`."""
    dtype = np.dtype(dtype)
    if layout.storage.size == 0:
        return np.empty(layout.dims, dtype=dtype)
    isz = layout.storage.dtype.itemsize
    view = as_strided(layout.storage[layout.offset:], shape=layout.dims,
                      strides=[s * isz for s in layout.strides], writeable=False)
    return np.ascontiguousarray(view).view(dtype).reshape(layout.dims)


def ptr(a: np.ndarray) -> Optional[int]:
    return a.__array_interface__["data"][0] if a.size else None


def outputs_of(call, op) -> List[Tuple[str, Optional[tuple], Optional[np.dtype]]]:
    """Every output of the operator's declaration, in its order, with the shape and dtype the call
    gives it (None: a NULL tensor): OpCall.outputs where the call has it (a name it leaves out is
    NULL; a name the declaration lacks is a suite defect, never a dropped tensor), else out_shape
    and out_dtype for the first and NULL for any other."""
    declared = tuple(getattr(op, "outputs", ("out",))) or ("out",)
    given = getattr(call, "outputs", None)
    if given is None:
        return [(declared[0], call.out_shape, call.out_dtype)] + [(n, None, None) for n in declared[1:]]
    stray = [n for n in given if n not in declared]
    if stray:
        raise ValueError(f"{call.op}: outputs {stray} are not among its declared outputs {list(declared)}")
    found = []
    for name in declared:
        shape, dtype = given.get(name, (None, None))
        found.append((name, None if shape is None else tuple(shape), None if dtype is None else np.dtype(dtype)))
    return found


def int64s(values: Sequence[int]):
    """A C int64_t array of `values` (one element at least: ctypes cannot make an empty one)."""
    return (ctypes.c_int64 * max(len(values), 1))(*values)
