"""Kernels that are wrong only at scale: each is `Float32Kernel` with one defect of a class that
breaks real NPU kernels where their tiling puts a boundary (tests/mutants/tiling.py models where),
and each is correct below its threshold, so the small cases cannot see it. `tests/test_scale.py`
proves the default run (with its scale sets) fails every one of them except `Int32Offsets`,
which needs the huge tier, and that each passes every small case.

`GENERIC` holds the ones that fit any operator (read off its declarations: `b_shape`, `out_shape`,
`primary`, `reads`, `tiling`); `SCALE_MUTANTS` adds every registered operator's own mutants that
show only at scale (tests/mutants/registry.py).

Run one as a backend: `pytest --backend tests.mutants.scale:<Name>`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from suite.ops.base import numel
from tests.mutants import tiling
from tests.mutants.kernel import Float32Kernel, SumKernel, terms_first


def _elementwise(op, call) -> bool:
    """The output is the broadcast shape: one kernel pass over it, split by the tiling."""
    shapes = {n: tuple(a.shape) for n, a in call.inputs.items() if a is not None}
    return tuple(op.b_shape(shapes)) == tuple(call.out_shape)


def _dtype(op, call):
    """The dtype the tiling is sized by: the primary input's."""
    return call.inputs[op.primary].dtype


class _Split(Float32Kernel):
    """A kernel whose defect lives in how the output is split over cores and UB tiles."""

    def finish(self, out, call):
        op = self.op(call)
        if not _elementwise(op, call) or out.size == 0:
            return out
        out = np.array(out, copy=True)
        self.damage(out.reshape(-1), tiling.split(out.size, call.op, call.product, _dtype(op, call)), call)
        return out


    def damage(self, flat, parts, call) -> None:
        raise NotImplementedError


class TailTileStale(_Split):
    description = ("the last UB tile of each core is copied out in whole 32-byte blocks: its last "
                   "partial block keeps the previous tile's values")

    def damage(self, flat, parts, call):
        blk = tiling.block(flat.dtype)
        for start, length, tiles in parts:
            sizes = tiling.tile_lengths(length, tiles)
            if len(sizes) < 2 or sizes[-1] % blk == 0:
                continue
            end = start + length
            keep = sizes[-1] % blk
            stale = slice(end - keep - sizes[-2], end - sizes[-2])     # same UB offsets, one tile back
            flat[end - keep:end] = flat[stale][:keep]


class RemainderCoreDropped(_Split):
    description = "the extra core that takes the split's remainder is never launched: those elements stay 0"

    def damage(self, flat, parts, call):
        if len(parts) > 1 and parts[-1][1] != parts[0][1]:
            start, length, _ = parts[-1]
            flat[start:start + length] = 0


class StaleElementPerCore(_Split):
    description = ("on multi-tile cores, each core's last element keeps a stale value (its first "
                   "element's): a few garbage elements in a large output")

    def damage(self, flat, parts, call):
        for start, length, tiles in parts:
            if tiles > 1 and length > 1:
                flat[start + length - 1] = flat[start]


class UnalignedRowsPadded(Float32Kernel):
    description = ("rows that are not whole 32-byte blocks are copied out rounded up: at every UB "
                   "tile boundary the next row starts with the padding (zeros)")

    def finish(self, out, call):
        op = self.op(call)
        if out.ndim < 2 or not _elementwise(op, call) or out.size == 0:
            return out
        rows, c = numel(out.shape[:-1]), out.shape[-1]
        blk = tiling.block(out.dtype)
        t = tiling.tile(call.op, call.product, _dtype(op, call))
        if not t or c % blk == 0 or out.size <= t:
            return out
        pad = blk - c % blk
        per_tile = max(1, t // c)
        out = np.array(out, copy=True)
        flat = out.reshape(rows, c)
        flat[per_tile::per_tile, :pad] = 0
        return out


class RepeatLimitBroadcast(Float32Kernel):
    description = ("an input broadcast along the last axis is filled by one vector instruction "
                   "whose 8-bit repeat count wraps past 255 repeats: the rest of each row is 0")

    def values(self, name, a, call):
        """The input as the kernel's broadcast leaves it (a itself when nothing is cut short)."""
        b = self.op(call).b_shape({n: tuple(x.shape) for n, x in call.inputs.items() if x is not None})
        span = b[-1] if b else 1
        limit = tiling.reach(a.dtype, call.product)
        if not (a.ndim and a.shape[-1] == 1 and span > limit):
            return a
        lanes = limit // 255                                  # elements per 256-byte repeat
        filled = (-(-span // lanes) % 256) * lanes            # the repeat count kept 8 bits
        full = np.array(np.broadcast_to(a, a.shape[:-1] + (span,)))
        full[..., filled:] = 0
        return full


class NarrowAccumulation(SumKernel):
    description = ("a sum over the broadcast axes out lacks is accumulated in the inputs' 16-bit "
                   "dtype once it has more than 4096 terms")

    LIMIT = 4096

    def compute(self, call):
        op = self.op(call)
        read = [a.dtype for n, a in call.inputs.items()
                if a is not None and (op.reads is None or n in op.reads)]
        self._dt = min(read, key=lambda d: d.itemsize)        # the narrowest input it reads
        return super().compute(call)

    def sum_back(self, terms, out_shape):
        seq = terms_first(terms, out_shape)
        if seq.shape[0] <= self.LIMIT or self._dt.itemsize != 2:
            return super().sum_back(terms, out_shape)
        acc = np.cumsum(seq.astype(self._dt), axis=0, dtype=self._dt)[-1]
        return acc.astype(np.float32).reshape(out_shape)


class AtomicAddArrival(SumKernel):
    description = ("long sums over the broadcast axes out lacks are split over the cores and the "
                   "partial sums combined by atomic adds in arrival order: the last bits differ "
                   "from run to run")

    def compute(self, call):
        self._cores = tiling.cores(call.product)
        self._tile = tiling.tile(call.op, call.product, _dtype(self.op(call), call))
        return super().compute(call)

    def sum_back(self, terms, out_shape):
        seq = terms_first(terms, out_shape)
        n = seq.shape[0]
        if not self._tile or n <= self._tile:
            return super().sum_back(terms, out_shape)
        bounds = np.linspace(0, n, self._cores + 1).astype(int)
        partials = [np.sum(seq[a:b], axis=0, dtype=np.float32) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        order = np.random.default_rng().permutation(len(partials))      # whoever arrives first
        acc = np.zeros(seq.shape[1:], dtype=np.float32)
        for k in order:
            acc = acc + partials[k]
        return acc.reshape(out_shape)


class Int32Offsets(Float32Kernel):
    description = ("element offsets are int32: past 2^31 elements the output repeats the values "
                   "at wrapped offsets (the huge tier's cases only)")

    LIMIT = 2 ** 31
    working_memory = 0.0                                 # the suite's block-by-block reference

    def run(self, call):
        self.validate(call)
        if numel(tuple(call.out_shape)) <= self.LIMIT:
            return super().run(call)
        out = self.op(call).reference(call)             # block by block: this output is 4+ GiB
        flat = out.reshape(-1)
        flat[self.LIMIT:] = flat[:flat.size - self.LIMIT]
        return out


GENERIC = [TailTileStale, RemainderCoreDropped, StaleElementPerCore, UnalignedRowsPadded,
           RepeatLimitBroadcast, NarrowAccumulation, AtomicAddArrival, Int32Offsets]
HUGE_ONLY = {"Int32Offsets"}


def __getattr__(name: str) -> Any:
    """SCALE_MUTANTS and BY_NAME: the generic ones and every operator's that shows only at scale
    (computed on first use: finding those reads the case files); any of them by name."""
    from tests.mutants import registry
    if name == "SCALE_MUTANTS":
        return GENERIC + registry.scale_operator_mutants()
    if name == "BY_NAME":
        return {m.__name__: m for m in GENERIC + registry.scale_operator_mutants()}
    if not name.startswith("__"):
        for m in registry.scale_operator_mutants():
            if m.__name__ == name:
                return m
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
