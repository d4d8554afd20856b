"""Distributions of exact (integer and BOOL) values: integers uniform in a range, class indices in
[0, C) with C read from another input's shape, a share set to an ignore value read from an
attribute, and out-of-range class indices as their own set.

Like suite/values/draw.py's float distributions, every value comes from PCG64's raw words through
our own integer transform, never numpy's integer methods (whose streams numpy may change), so a
case's integers are the same forever on every machine; one word per element from the value stream,
and the rare word that would bias the range (the top 2^64 mod span words) is replaced from a retry
stream consumed in element order, so the draw is exactly uniform and chunking changes nothing.
A distribution that depends on the call (C, the ignore value) is bound to its Signature first
(`Dist.bind`, done by suite/cases/inputs.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Tuple

import numpy as np

from suite.values.draw import Dist, Streams, sprinkle_fallback, sprinkled

_WORDS = 1 << 64


def uniform_ints(streams: Streams, n: int, lo: int, hi: int, purpose: str = "value") -> np.ndarray:
    """n integers uniform on [lo, hi] (int64), exactly: a word w is used as w mod span only when it
    lies below the largest multiple of span; the others are replaced from `purpose`/retry, element
    by element in order (with span 3 * 2^62 a quarter of the words; with a span of a few
    thousand, one word in 10^15)."""
    span = hi - lo + 1
    if not 0 < span <= _WORDS or lo < -(1 << 63) or hi >= 1 << 63:
        raise ValueError(f"integers in [{lo}, {hi}]: not an int64 range")
    w = streams(purpose).raw(n)
    if span < _WORDS:
        limit = _WORDS - _WORDS % span
        if limit < _WORDS:
            # element by element, in order, each until it takes a word: the retry stream is then
            # read in the same order however the elements are chunked
            top = np.uint64(limit)
            for i in np.flatnonzero(w >= top):
                retry = streams(purpose + "/retry")
                while w[i] >= top:
                    w[i] = retry.raw(1)[0]
        w = w % np.uint64(span)
    # lo + w in wrapping uint64 arithmetic: exact, since the result lies in [lo, hi]
    return (w + np.uint64(lo % _WORDS)).view(np.int64)


class ExactDist(Dist):
    """A distribution of integers: `sample` returns int64 values, which suite.values.draw.draw
    stores exactly in the input's dtype (refusing any outside it)."""

    exact = True


class CallBound(ExactDist):
    """A distribution that reads the call (a class count, an ignore value): only its `bind` form is
    drawn, so drawing it unbound is a mistake in the suite, said in one line."""

    def sample(self, streams, n, state):
        raise ValueError(f"{self!r} is drawn only once bound to a call")

    def bounds(self):
        raise ValueError(f"{self!r} is drawn only once bound to a call")


@dataclass(frozen=True)
class Integers(ExactDist):
    """Integers uniform on [lo, hi], both included (BOOL: Integers(0, 1))."""

    lo: int
    hi: int

    def sample(self, streams, n, state):
        return uniform_ints(streams, n, self.lo, self.hi)

    def bounds(self):
        return self.lo, self.hi


@dataclass(frozen=True)
class IntSprinkle(ExactDist):
    """An exact `base`, with about `share` of the elements replaced by picks from the integers
    `values` (draw.Sprinkle for an integer or BOOL input: the same streams, the picks kept exact);
    at least one element replaced in a non-empty array."""

    base: ExactDist
    values: Tuple[int, ...]
    share: float

    def sample(self, streams, n, state):
        return sprinkled(self, streams, n, state, np.int64)

    def bounds(self):
        lo, hi = self.base.bounds()
        return min(lo, *self.values), max(hi, *self.values)

    def finish(self, streams, out, state):
        sprinkle_fallback(self, streams, out, state, lambda v: v)


@dataclass(frozen=True)
class ClassIndex(CallBound):
    """Class indices uniform on [0, C), C the size of input `of` along `axis` (a class-index
    loss's target takes C from the scores' last axis: `of` names that input, `axis=-1`)."""

    of: str
    axis: int = -1

    def bind(self, sig: Any) -> Dist:
        return Integers(0, _classes(self, sig) - 1)


@dataclass(frozen=True)
class OutOfRange(CallBound):
    """Class indices outside [0, C): uniform over [-C, -1] (`low`) and [C, 2C - 1] (`high`), C as in
    ClassIndex. An unsigned target takes `low=False`."""

    of: str
    axis: int = -1
    low: bool = True
    high: bool = True

    def bind(self, sig: Any) -> Dist:
        if not (self.low or self.high):
            raise ValueError("OutOfRange needs low or high")
        return _Outside(_classes(self, sig), self.low, self.high)


@dataclass(frozen=True)
class _Outside(ExactDist):
    c: int
    low: bool
    high: bool

    def sample(self, streams, n, state):
        k = uniform_ints(streams, n, 0, self.c * (self.low + self.high) - 1)
        if not self.low:
            return k + self.c
        # k < C: -(k + 1), in [-C, -1]; else k in [C, 2C - 1]
        return np.where(k < self.c, -(k + 1), k)

    def bounds(self):
        return -self.c if self.low else self.c, 2 * self.c - 1 if self.high else -1


@dataclass(frozen=True)
class Ignored(CallBound):
    """`base`, with about `share` of the elements set to the value of attribute `attr` (a
    class-index loss's ignore value: the operator names its attribute); at least one in a
    non-empty array, so a small case has one."""

    base: ExactDist
    attr: str
    share: float = 0.1

    def bind(self, sig: Any) -> Dist:
        if self.attr not in sig.attrs:
            raise ValueError(f"Ignored: the call has no attribute {self.attr!r}")
        value = sig.attrs[self.attr]
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"Ignored: attribute {self.attr} is {value!r}, not an integer")
        return _Ignored(self.base.bind(sig), int(value), self.share)


@dataclass(frozen=True)
class _Ignored(ExactDist):
    base: Dist
    value: int
    share: float

    def sample(self, streams, n, state):
        a = self.base.sample(streams, n, state)
        hit = streams("hit").unit(n) < self.share
        a[hit] = self.value
        state["hits"] = state.get("hits", 0) + int(hit.sum())
        return a

    def bounds(self):
        b = self.base.bounds()
        return None if b is None else (min(b[0], self.value), max(b[1], self.value))

    def finish(self, streams, out, state):
        if out.size and not state.get("hits"):
            at = int(streams("fallback").raw(1)[0] % np.uint64(out.size))
            out.reshape(-1)[at] = self.value


def _classes(dist: Any, sig: Any) -> int:
    shape = sig.shapes.get(dist.of)
    if shape is None:
        raise ValueError(f"{type(dist).__name__}: the call has no input {dist.of!r} to take C from")
    if not shape or not -len(shape) <= dist.axis < len(shape):
        raise ValueError(f"{type(dist).__name__}: {dist.of} {tuple(shape)} has no axis {dist.axis}")
    c = int(shape[dist.axis])
    if c < 1:
        raise ValueError(f"{type(dist).__name__}: {dist.of} has C = 0 classes along axis {dist.axis}")
    return c
