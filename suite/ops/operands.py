"""Shaping an operator's inputs into per-term operands (Operator.operands): the helpers a
class-index operator needs so that its inputs broadcast to the terms' shape `b_shape` [N, C]
instead of being broadcast themselves. One value per sample becomes a column [N, 1]; the class
coordinate is an integer row [C] (broadcast along the rows block by block, so a walk of N x C =
10^8 terms holds one block of it, never N x C)."""
from __future__ import annotations

import numpy as np


def per_row(a: np.ndarray) -> np.ndarray:
    """A 1-D array of one value per sample as a column [N, 1], against terms [N, C]; a 0-d array
    (one value for every sample) is returned as it is."""
    a = np.asarray(a)
    return a.reshape(-1, 1) if a.ndim == 1 else a


def class_coordinate(c: int) -> np.ndarray:
    """The class index of each term along the last axis, as int64 [C]: compared with a class-index
    target (an index operand, Operator.indices), never a float."""
    return np.arange(int(c), dtype=np.int64)
