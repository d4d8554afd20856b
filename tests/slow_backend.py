"""A correct backend that takes its time (a run long enough to be interrupted at a chosen moment)."""
from __future__ import annotations

import time

from suite.backends.reference import ReferenceBackend


class Slow(ReferenceBackend):
    def run(self, call):
        time.sleep(0.05)
        return super().run(call)
