"""Walking a large shape in blocks, so that nothing the size of a whole tensor is ever held in
float64: the golden, the reference kernel and the judging all go block by block."""
from __future__ import annotations

import itertools
import math
from typing import Iterator, Tuple


BLOCK = 1 << 16                        # elements per block: float64 temporaries stay in cache

Index = Tuple[slice, ...]


def numel(shape: Tuple[int, ...]) -> int:
    return math.prod(int(n) for n in shape)


def blocks(shape: Tuple[int, ...], limit: int = BLOCK) -> Iterator[Index]:
    """Index tuples (one slice per axis) that cover `shape` in C order, each block at most `limit`
    elements and one contiguous run of the flattened array, so the blocks cover flat offsets
    [0, numel) in order."""
    shape = tuple(int(n) for n in shape)
    if numel(shape) == 0:
        return
    if not shape:
        yield ()
        return
    axis = next(a for a in range(len(shape)) if numel(shape[a + 1:]) <= limit)
    step = max(1, limit // max(numel(shape[axis + 1:]), 1))
    tail = (slice(None),) * (len(shape) - axis - 1)
    for lead in itertools.product(*(range(n) for n in shape[:axis])):
        head = tuple(slice(i, i + 1) for i in lead)
        for j in range(0, shape[axis], step):
            yield head + (slice(j, min(j + step, shape[axis])),) + tail


def block_shape(index: Index, shape: Tuple[int, ...]) -> Tuple[int, ...]:
    return tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))


def reduced_axes(small: Tuple[int, ...], big: Tuple[int, ...]) -> Tuple[int, ...]:
    """Axes of `big` to sum so that the result reshapes to `small` (autograd's broadcast reduction).
    A `small` with more dimensions than `big` is read without its extra leading ones (a one-element
    out of [1, 1] for a 0-d or 1-d B, which a forward loss may accept)."""
    small = tuple(small)
    while len(small) > len(big) and small[0] == 1:
        small = small[1:]
    lead = len(big) - len(small)
    return tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(small) if n == 1 and big[lead + i] != 1)


def target_index(index: Index, big: Tuple[int, ...], small: Tuple[int, ...]) -> Index:
    """Where a block of `big`, summed over the reduced axes (keepdims), lands in `small`."""
    lead = len(big) - len(small)
    return tuple(slice(None) if small[i] == 1 and big[lead + i] != 1 else index[lead + i]
                 for i in range(len(small)))
