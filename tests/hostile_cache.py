"""Nondeterministic kernels behind a result cache (issue 43, item 3): each is the reference backend
with random noise in the last bit of its result (1 ulp: within every standard), which a cache keyed
by the call's inputs hides from two calls in one process. Used by tests/test_determinism_caches.py,
which runs them through the determinism tests of the suite; both must fail there.

  TmpdirCache   random noise from the OS; the results cached on disk in $TMPDIR, which the
                determinism tests' two processes used to share
  SeededCache   noise from a fixed-seed generator, drawn only on a cache miss (the cache in memory):
                a second process that sees the same distinct inputs in the same order draws the
                same numbers

Single-output operators only (the tests run one).
"""
from __future__ import annotations

import hashlib
import os

import numpy as np

from suite.backends.reference import ReferenceBackend
from suite.common import dtypes
from suite.contract import OpCall


def key(call: OpCall) -> str:
    """The call's inputs (dtype, shape, bytes), operator, attributes and product, as one digest."""
    h = hashlib.sha256(repr((call.op, sorted(call.attrs.items()), call.product)).encode())
    for name, a in sorted(call.inputs.items()):
        h.update(name.encode())
        if a is not None:
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def noisy(out: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`out` with the last bit of each element flipped where `rng` says (one draw per element)."""
    out = np.array(out)
    bits = dtypes.to_bits(out).reshape(-1)
    bits ^= rng.integers(0, 2, size=bits.size).astype(bits.dtype)
    return out


class TmpdirCache(ReferenceBackend):
    name = "tmpdir-cache"

    def run(self, call: OpCall) -> np.ndarray:
        path = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"hostile-cache-{key(call)}.npy")
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            pass
        out = noisy(super().run(call), np.random.default_rng())       # seeded from the OS
        part = f"{path}.{os.getpid()}.npy"
        np.save(part, out, allow_pickle=False)
        os.replace(part, path)
        return out


class SeededCache(ReferenceBackend):
    name = "seeded-cache"

    def __init__(self) -> None:
        super().__init__()
        self.rng = np.random.default_rng(43)
        self.cache = {}

    def run(self, call: OpCall) -> np.ndarray:
        k = key(call)
        if k not in self.cache:
            self.cache[k] = noisy(super().run(call), self.rng)
        return self.cache[k].copy()                 # a copy: the same buffer twice fails otherwise
