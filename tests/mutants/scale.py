"""Kernels that are wrong only at scale: each is `Float32Kernel` with one defect of a class that
breaks real NPU kernels where their tiling puts a boundary (tests/mutants/tiling.py models where),
and each is correct below its threshold, so the small cases cannot see it. `tests/test_scale.py`
proves the default run (with its scale sets) fails every one of them except `Int32Offsets`,
which needs the huge tier, and that each passes every small case.

Run one as a backend: `pytest --backend tests.mutants.scale:<Name>`.
"""
from __future__ import annotations

import numpy as np

from suite import ops
from suite.ops.base import numel, reduced_axes
from tests.mutants import tiling
from tests.mutants.kernel import Float32Kernel


def _elementwise(call) -> bool:
    """The output is the broadcast shape: one kernel pass over it, split by the tiling."""
    shapes = {n: tuple(a.shape) for n, a in call.inputs.items()}
    return tuple(ops.get(call.op).b_shape(shapes)) == tuple(call.out_shape)


class _Split(Float32Kernel):
    """A kernel whose defect lives in how the output is split over cores and UB tiles."""

    def finish(self, out, call):
        if not _elementwise(call) or out.size == 0:
            return out
        out = np.array(out, copy=True)
        self.damage(out.reshape(-1), tiling.split(out.size, call.op, call.product, call.inputs["self"].dtype), call)
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
        if out.ndim < 2 or not _elementwise(call) or out.size == 0:
            return out
        rows, c = numel(out.shape[:-1]), out.shape[-1]
        blk = tiling.block(out.dtype)
        t = tiling.tile(call.op, call.product, call.inputs["self"].dtype)
        if c % blk == 0 or out.size <= t:
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

    def _filled(self, name, a, call):
        """The input as the kernel's broadcast leaves it (a itself when nothing is cut short)."""
        b = ops.get(call.op).b_shape({n: tuple(x.shape) for n, x in call.inputs.items()})
        span = b[-1] if b else 1
        src = call.inputs[name]
        limit = tiling.reach(src.dtype, call.product)
        if not (a.ndim and a.shape[-1] == 1 and span > limit):
            return a
        lanes = limit // 255                                  # elements per 256-byte repeat
        filled = (-(-span // lanes) % 256) * lanes            # the repeat count kept 8 bits
        full = np.array(np.broadcast_to(a, a.shape[:-1] + (span,)), dtype=np.float32)
        full[..., filled:] = 0
        return full

    def mse(self, call, g, s, t):
        return super().mse(call, *(self._filled(n, a, call) for n, a in zip(tiling.INPUTS, (g, s, t))))

    def kl(self, call, g, s, t):
        return super().kl(call, *(self._filled(n, a, call) for n, a in zip(tiling.INPUTS, (g, s, t))))


class NarrowAccumulation(Float32Kernel):
    description = ("KL's sum back to self's shape is accumulated in the inputs' 16-bit dtype "
                   "once it has more than 4096 terms")

    LIMIT = 4096

    def run(self, call):
        self.validate(call)
        self._dt = call.inputs["target"].dtype
        return super().run(call)

    def kl_sum_back(self, terms, self_shape):
        axes = reduced_axes(self_shape, terms.shape)
        n = numel(tuple(terms.shape[i] for i in axes))
        if n <= self.LIMIT or self._dt.itemsize != 2:
            return super().kl_sum_back(terms, self_shape)
        kept = [i for i in range(terms.ndim) if i not in axes]
        seq = np.transpose(terms, list(axes) + kept).reshape((n,) + tuple(terms.shape[i] for i in kept))
        with np.errstate(all="ignore"):
            acc = np.cumsum(seq.astype(self._dt), axis=0, dtype=self._dt)[-1]
        return acc.astype(np.float32).reshape(self_shape)


class AtomicAddArrival(Float32Kernel):
    description = ("KL's long sums are split over the cores and the partial sums combined by "
                   "atomic adds in arrival order: the last bits differ from run to run")

    def run(self, call):
        self.validate(call)
        self._cores = tiling.cores(call.product)
        self._tile = tiling.tile(call.op, call.product, call.inputs["self"].dtype)
        return super().run(call)

    def kl_sum_back(self, terms, self_shape):
        axes = reduced_axes(self_shape, terms.shape)
        n = numel(tuple(terms.shape[i] for i in axes))
        if n <= self._tile:
            return super().kl_sum_back(terms, self_shape)
        kept = [i for i in range(terms.ndim) if i not in axes]
        seq = np.transpose(terms, list(axes) + kept).reshape((n,) + tuple(terms.shape[i] for i in kept))
        bounds = np.linspace(0, n, self._cores + 1).astype(int)
        partials = [np.sum(seq[a:b], axis=0, dtype=np.float32) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        order = np.random.default_rng().permutation(len(partials))      # whoever arrives first
        acc = np.zeros(seq.shape[1:], dtype=np.float32)
        with np.errstate(all="ignore"):
            for k in order:
                acc = acc + partials[k]
        return acc.reshape(self_shape)


class MeanCountInFloat16(Float32Kernel):
    description = ("MSE mean on float16 inputs holds N in float16 for the coefficient 2/N: "
                   "past 65504 it is inf and every result 0")

    def run(self, call):
        self.validate(call)
        self._half = call.inputs["self"].dtype == np.float16
        return super().run(call)

    def mse_cof(self, reduction, self_shape, b_shape):
        n = numel(self_shape)
        if reduction == 1 and n and self._half:
            with np.errstate(over="ignore"):
                return np.float32(2.0) / np.float32(np.float16(n))
        return super().mse_cof(reduction, self_shape, b_shape)


class BatchCountInt16(Float32Kernel):
    description = "KL batchmean holds B[0] in int16: past 32767 it wraps negative"

    def kl_scale(self, reduction, self_shape, b):
        if reduction == 3 and numel(b):
            b0 = int(np.array(b[0]).astype(np.int64).astype(np.int16))
            return np.float32(1.0 / b0)
        return super().kl_scale(reduction, self_shape, b)


class Int32Offsets(Float32Kernel):
    description = ("element offsets are int32: past 2^31 elements the output repeats the values "
                   "at wrapped offsets (the huge tier's cases only)")

    LIMIT = 2 ** 31
    working_memory = 0.0                                 # the suite's block-by-block reference

    def run(self, call):
        self.validate(call)
        if numel(tuple(call.out_shape)) <= self.LIMIT:
            return super().run(call)
        out = ops.get(call.op).reference(call)          # block by block: this output is 4+ GiB
        flat = out.reshape(-1)
        flat[self.LIMIT:] = flat[:flat.size - self.LIMIT]
        return out


SCALE_MUTANTS = [TailTileStale, RemainderCoreDropped, StaleElementPerCore, UnalignedRowsPadded,
                 RepeatLimitBroadcast, NarrowAccumulation, AtomicAddArrival, MeanCountInFloat16,
                 BatchCountInt16, Int32Offsets]
HUGE_ONLY = {"Int32Offsets"}
BY_NAME = {m.__name__: m for m in SCALE_MUTANTS}
