"""Backends that are not hostile, only careless: slow, or unfinished."""
from __future__ import annotations

import time

from suite.backends.reference import ReferenceBackend


class Slow(ReferenceBackend):
    """Correct, and takes its time (a run long enough to be interrupted at a chosen moment)."""

    def run(self, call):
        time.sleep(0.05)
        return super().run(call)


class Unfinished(ReferenceBackend):
    """Raises NotImplementedError on every call: a backend that computes nothing."""

    def run(self, call):
        raise NotImplementedError("not written yet")
