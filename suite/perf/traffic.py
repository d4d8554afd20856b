"""What one launch of a call moves through memory: every input's bytes at its dtype (a broadcast
or strided view counts its logical elements, which is what the kernel reads) and every output's.
The GB/s of a timing record is this over the median time (docs/results-schema.md, "timing")."""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from suite.contract import OpCall


def _out_bytes(shape: Optional[Tuple[int, ...]], dtype: Optional[np.dtype]) -> int:
    if shape is None or dtype is None:
        return 0
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def bytes_moved(call: OpCall) -> int:
    """Inputs read plus outputs written, in bytes (NULL tensors move nothing)."""
    read = sum(int(a.size) * a.dtype.itemsize for a in call.inputs.values() if a is not None)
    if call.outputs:
        return read + sum(_out_bytes(s, d) for s, d in call.outputs.values())
    return read + _out_bytes(call.out_shape, call.out_dtype)
