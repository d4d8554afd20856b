"""Input data that stays the same forever, at any size.

Every input value comes from PCG64's raw 64-bit output, seeded by our own hash of the case's seed
and a label, and turned into numbers by our own transforms below, which use only exact IEEE
operations (no log, exp or numpy distribution methods, whose streams and last bits numpy may change
between versions or CPUs). Each (input, purpose) pair has its own stream, consumed in order, one raw
word per element, so drawing in chunks gives the same values as drawing at once: a 10^9-element
input is made chunk by chunk in its own dtype, never held in float64.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from suite.common import dtypes

CHUNK = 1 << 16                       # elements drawn per step: bounds float64 temporaries
_U53 = 2.0 ** -53


class Stream:
    """One label's raw stream: PCG64 with its 128-bit state and increment taken from sha256."""

    def __init__(self, seed: int, label: str) -> None:
        h = hashlib.sha256(f"{seed}/{label}".encode()).digest()
        self._bg = np.random.PCG64(0)
        self._bg.state = {"bit_generator": "PCG64",
                          "state": {"state": int.from_bytes(h[:16], "little"),
                                    "inc": int.from_bytes(h[16:], "little") | 1},
                          "has_uint32": 0, "uinteger": 0}

    def raw(self, n: int) -> np.ndarray:
        return self._bg.random_raw(n)

    def unit(self, n: int) -> np.ndarray:
        """Uniform on [0, 1): the top 53 bits of each word, scaled exactly."""
        u = (self.raw(n) >> np.uint64(11)).astype(np.float64)
        u *= _U53
        return u


Streams = Callable[[str], Stream]     # purpose -> that input's stream for it


class Dist:
    """A distribution of float64 values; `sample` must consume exactly one word per element from
    each stream it uses, so that chunking cannot change the values."""

    def sample(self, streams: Streams, n: int, state: dict) -> np.ndarray:
        raise NotImplementedError

    def finish(self, streams: Streams, out: np.ndarray, state: dict) -> None:
        """A last fix-up over the whole drawn array (in its dtype), if the distribution needs one."""

    def bind(self, sig: Any) -> "Dist":
        """This distribution for one call (a Signature): one that reads the call (a class count
        from an input's shape, an ignore value from an attribute) returns its bound form."""
        return self

    def bounds(self) -> Optional[Tuple[int, int]]:
        """The least and greatest integer an exact distribution (bound to its call) can draw;
        None for a float one. What `fits` checks against a dtype before anything is drawn."""
        return None


@dataclass(frozen=True)
class Uniform(Dist):
    """Uniform on [lo, hi)."""

    lo: float
    hi: float

    def sample(self, streams, n, state):
        u = streams("value").unit(n)
        u *= self.hi - self.lo
        u += self.lo
        return u


@dataclass(frozen=True)
class Constant(Dist):
    """Every element `value` (NaN, an infinity and -0.0 included). Reads no stream: a constant
    needs no randomness, and chunking cannot change it."""

    value: float

    def sample(self, streams, n, state):
        return np.full(n, self.value, dtype=np.float64)


@dataclass(frozen=True)
class Binades(Dist):
    """Magnitudes in [lo, hi] spread evenly over the binades (powers of two) between them, so every
    decade gets its share (log-uniform, built from an integer exponent and a uniform significand:
    exact, no log or exp); random signs unless `signed` is false."""

    lo: float
    hi: float
    signed: bool = True

    def sample(self, streams, n, state):
        e_lo = math.frexp(self.lo)[1] - 1                  # floor(log2(lo)), exactly
        e_top = math.frexp(self.hi)[1] - 1                 # floor(log2(hi))
        span = np.uint64(e_top - e_lo + 1)
        e = (streams("exponent").raw(n) % span).astype(np.int64) + e_lo
        # significand in [1, 2), narrowed in the first and last binade to stay within [lo, hi]
        m_lo = np.where(e == e_lo, math.ldexp(self.lo, -e_lo), 1.0)
        m_hi = np.where(e == e_top, math.ldexp(self.hi, -e_top), 2.0)
        m = streams("value").unit(n)
        m *= m_hi - m_lo
        m += m_lo
        m = np.ldexp(m, e)
        if self.signed:
            neg = (streams("sign").raw(n) >> np.uint64(63)).astype(bool)
            np.negative(m, out=m, where=neg)
        return m


@dataclass(frozen=True)
class Sprinkle(Dist):
    """`base`, with about `share` of the elements replaced by picks from `values`; at least one
    element is replaced in a non-empty array, so a small case still has one."""

    base: Dist
    values: Tuple[float, ...]
    share: float

    def sample(self, streams, n, state):
        return sprinkled(self, streams, n, state, np.float64)

    def finish(self, streams, out, state):
        sprinkle_fallback(self, streams, out, state, lambda v: dtypes.round_to(np.float64(v), out.dtype))


def sprinkled(d: Any, streams: Streams, n: int, state: dict, dtype: Any) -> np.ndarray:
    """`d.base`'s sample with about `d.share` of it replaced by picks from `d.values` (as `dtype`),
    each from its own stream; counts the hits in `state` (Sprinkle, and exact.IntSprinkle)."""
    a = d.base.sample(streams, n, state)
    hit = streams("hit").unit(n) < d.share
    picks = np.asarray(d.values, dtype=dtype)[streams("pick").raw(n) % np.uint64(len(d.values))]
    a[hit] = picks[hit]
    state["hits"] = state.get("hits", 0) + int(hit.sum())
    return a


def sprinkle_fallback(d: Any, streams: Streams, out: np.ndarray, state: dict, cast: Callable) -> None:
    """Where no element was replaced in a non-empty array, one is (from the fallback stream)."""
    if out.size and not state.get("hits"):
        s = streams("fallback")
        at = int(s.raw(1)[0] % np.uint64(out.size))
        out.reshape(-1)[at] = cast(d.values[int(s.raw(1)[0] % np.uint64(len(d.values)))])


@dataclass(frozen=True)
class Choice(Dist):
    """One of `values` for every element, uniformly (a value listed twice comes twice as often).
    Inputs draw from streams of their own, so two inputs whose values must be related (say, whose
    difference must hit an operator's threshold exactly) each draw from a lattice of exact values on
    which the threshold lies."""

    values: Tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("Choice needs at least one value")

    def sample(self, streams, n, state):
        v = np.asarray(self.values, dtype=np.float64)
        return v[streams("pick").raw(n) % np.uint64(v.size)]


def draw(dist: Dist, seed: int, name: str, shape: Tuple[int, ...], dtype: np.dtype,
         chunk: int = CHUNK) -> np.ndarray:
    """`shape` values of `dist` for input `name` of the case with `seed`, rounded once (correctly)
    to `dtype`; an exact dtype (integers, BOOL) takes an exact distribution's integers as they are
    (suite/values/exact.py), and refuses a float distribution or a value it cannot hold. The
    result is the same whatever `chunk` is."""
    dtype = np.dtype(dtype)
    exact = dtypes.name_of(dtype) in dtypes.EXACT
    fits(dist, dtype, name)
    made: Dict[str, Stream] = {}

    def streams(purpose: str) -> Stream:
        if purpose not in made:
            made[purpose] = Stream(seed, f"{name}/{purpose}")
        return made[purpose]

    n = int(np.prod(shape, dtype=np.int64))
    out = np.empty(n, dtype=dtype)
    state: dict = {}
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(0, n, chunk):
            m = min(chunk, n - i)
            v = dist.sample(streams, m, state)
            out[i:i + m] = _exact(v, dtype, name) if exact else dtypes.round_to(v, dtype)
        dist.finish(streams, out, state)
    return out.reshape(shape)


def fits(dist: Dist, dtype: np.dtype, name: str) -> None:
    """A ValueError (one line naming input `name`) where `dist`, bound to its call, cannot be drawn
    into `dtype`: floats for an exact dtype, or integers past its range. Checked before a draw and
    when a case file is read (suite/cases/inputs.py), so a case that loads can be drawn."""
    dtype = np.dtype(dtype)
    if dtypes.name_of(dtype) not in dtypes.EXACT:
        return
    if not getattr(dist, "exact", False):
        raise ValueError(f"input {name} is {dtypes.name_of(dtype)}, an exact dtype, but its value set "
                         f"draws floats ({type(dist).__name__}); give it an exact distribution "
                         f"(suite/values/exact.py)")
    b = dist.bounds()
    if b is not None:
        _range(b[0], b[1], dtype, name)


def _range(lo: int, hi: int, dtype: np.dtype, name: str) -> None:
    dlo, dhi = dtypes.exact_range(dtypes.name_of(dtype))
    if lo < dlo or hi > dhi:
        raise ValueError(f"input {name}: the value set draws {lo}..{hi}, "
                         f"outside {dtypes.name_of(dtype)}'s {dlo}..{dhi}")


def _exact(v: np.ndarray, dtype: np.dtype, name: str) -> np.ndarray:
    """Integers stored in an exact dtype unchanged: one outside its range is the value set's
    mistake, refused (never wrapped or clipped)."""
    v = np.asarray(v)
    if v.size:
        _range(int(v.min()), int(v.max()), dtype, name)
    return v.astype(dtype)


def digest(a: np.ndarray) -> str:
    """sha256 of an array's raw bits in C order (what `golden check` compares across machines)."""
    h = hashlib.sha256()
    flat = np.ascontiguousarray(a).reshape(-1)
    bits = dtypes.to_bits(flat)
    for i in range(0, flat.size, CHUNK):
        h.update(bits[i:i + CHUNK].tobytes())
    return h.hexdigest()
