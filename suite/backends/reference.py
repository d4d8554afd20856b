"""The built-in reference backend: validates as the rejection tables of docs/operators/*.md say and
computes in float32 as their "How the vendor kernel computes" sections describe, with one round to
nearest even into out's dtype (each page lists where that differs from the vendor's kernel)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import numpy as np

from suite import ops
from suite.contract import PRODUCTS, AclnnError, OpCall, Unsupported
from suite.ops.base import Signature

LLC_FALLBACK = 32 << 20          # bytes of last-level cache assumed where sysfs does not say


def last_level_cache(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    """The largest cache of CPU 0 in bytes, from Linux's sysfs (LLC_FALLBACK elsewhere)."""
    sizes = []
    for f in root.glob("index*/size"):
        try:
            text = f.read_text().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            sizes.append(int(text.rstrip("KMG")) * scale)
        except ValueError:
            continue
    return max(sizes) if sizes else LLC_FALLBACK


class ReferenceBackend:
    name = "reference"
    capabilities = {"status"}
    products = PRODUCTS
    working_memory = 0.0        # computes block by block: nothing the size of a tensor beyond out

    def run(self, call: OpCall) -> np.ndarray:
        op = ops.get(call.op)
        if not op.serves(call.product):          # no status to give: skipped with the reason
            raise Unsupported(op.not_served(call.product))
        status, why = op.check(Signature.of_call(call))
        if status:
            raise AclnnError(status, why)
        return op.reference(call)

    _scratch: Optional[np.ndarray] = None

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> "Timing":
        """Each launch (a whole run(): the reference computes on the host) between two readings
        of time.perf_counter_ns: the host clock, labelled "host" (docs/timing.md). With `flush`,
        a buffer of twice the CPU's last-level cache is written before each launch, outside the
        timed region."""
        from suite.perf.record import Timing       # (suite.perf's simulated backend imports this module)
        if flush and self._scratch is None:
            self._scratch = np.empty(2 * last_level_cache(), dtype=np.uint8)
        seconds = []
        for i in range(launches):
            if flush:
                self._scratch.fill(i & 0x7F)
            start = time.perf_counter_ns()
            self.run(call)
            seconds.append((time.perf_counter_ns() - start) / 1e9)
        return Timing("host", "perf_counter_ns", tuple(seconds))
