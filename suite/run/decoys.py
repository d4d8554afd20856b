"""Decoy calls: the determinism tests' second process (suite/run/host.py, `Hosted.twin`) sees a call
history of its own, so that no state that follows the calls, a cache in memory included, makes it
agree with the first process (issue 43).

The attack it answers: a kernel that draws a random result, from a fixed-seed generator, only when
it has not seen a call's inputs before (a cache keyed by their bytes). Run alone, the determinism
tests' second process sees the same distinct inputs in the same order as the first process did, so
it draws the same numbers and agrees bit for bit; so does a kernel keyed on how many calls it has
had. Here, each time the second process (re)starts, before its first call it gets 1 to `most` decoy
calls, how many drawn from the OS's randomness (`secrets`): the same request with each input rolled
by an offset of its own (flattened, so each element stays a value of its input's value set, class
indices and ignore tokens included, and the shapes, dtypes, layout and attributes are the case's).
Their results are discarded; a fault in one (a crash, an exit, an overrun deadline) is the case's,
like any call of the second process, and its message says it came in a decoy call.

An input no roll changes (one element, one repeated value) is sent as it is; a call none of whose
inputs a roll changes gets no decoys (each would be that very call): they wait for the first call
that has one, and until then a cache keyed on the inputs sees the first process's history (one-
element cases agree by chance anyway). Not covered (docs/backend-contract.md): a backend that tells
decoys apart (keys its cache on the multiset of an input's values, or on anything else a roll keeps)
can still agree; so can a cache on disk in a folder both processes can write (not their own TMPDIRs
nor the temporary folder, which the confinement protects, suite/run/protected.py; but a folder of
$HOME, say), whatever their histories. A call whose inputs are over
`limit` bytes makes no decoys either (a rolled copy of its inputs would be one copy too many).
"""
from __future__ import annotations

import secrets
from typing import Any, Callable, Optional

import numpy as np

from suite.run.calls import Request

MOST = 3                      # decoy calls at most, before a (re)started second process's first call
LIMIT = 64 << 20              # bytes of a call's inputs above which it makes no decoys
TRIES = 4                     # offsets tried per input for a roll that changes it


def _roll(a: np.ndarray, pick: Callable[[int], int]) -> Optional[np.ndarray]:
    """`a` flattened and rolled by 1 to size - 1 places (a random offset, up to TRIES of them), in
    `a`'s shape; None where no offset tried changes a bit of it (one element, one repeated value)."""
    if a.size < 2:
        return None
    flat = np.ascontiguousarray(a).reshape(-1)
    for _ in range(TRIES):
        r = np.roll(flat, 1 + pick(a.size - 1))
        if not np.array_equal(r.view(np.uint8), flat.view(np.uint8)):
            return r.reshape(a.shape)
    return None


def rolled(req: Request, pick: Callable[[int], int] = secrets.randbelow) -> Optional[Request]:
    """`req` with each of its inputs rolled by an offset of its own (None stays None, an input no
    roll changes stays as it is); None where no input changes (the decoy would be the call)."""
    inputs = {n: None if a is None else _roll(a, pick) for n, a in req["inputs"].items()}
    if all(r is None for r in inputs.values()):
        return None
    return {**req, "inputs": {n: req["inputs"][n] if r is None else r for n, r in inputs.items()}}


def input_bytes(req: Request) -> int:
    return sum(int(a.nbytes) for a in req["inputs"].values() if a is not None)


class Decoys:
    """The decoys of one host (the second process): made once per start of its process."""

    def __init__(self, most: int = MOST, limit: int = LIMIT,
                 pick: Callable[[int], int] = secrets.randbelow) -> None:
        self.most, self.limit, self.pick = most, limit, pick
        self.done_for: Optional[int] = None    # the start (Hosted.starts) whose decoys were made
        self.made = 0                          # decoy calls, all told

    def before(self, start: int, req: Request, call: Callable[[Request], Any]) -> None:
        """Before `req`'s call in the process of start number `start`: its decoys, once per start,
        each made by `call` and its outcome discarded. A fault (an exception with a `kind`, as
        suite.run.host.Fault) is raised again, its message saying it came in a decoy call."""
        if start == self.done_for or input_bytes(req) > self.limit:
            return
        for _ in range(1 + self.pick(self.most)):
            decoy = rolled(req, self.pick)
            if decoy is None:           # a decoy would be this very call: they wait for another
                return
            self.done_for = start
            self.made += 1
            try:
                call(decoy)
            except Exception as e:
                kind = getattr(e, "kind", None)
                if kind is None:
                    raise
                raise type(e)(f"in a decoy call (the case's call on its inputs rolled, made before the "
                              f"second process's first call: suite/run/decoys.py): {e}", kind) from None
