"""Baselines for tests/test_plugin_interleave.py (named by `package.module:attr` on
--timing-baseline): one that names its process in its timing source, and one that tries what a
hostile baseline could to turn the candidate's failing run green."""
from __future__ import annotations

import json
import os
from pathlib import Path

from suite.contract import OpCall
from suite.perf.record import Timing
from tests.timing_backends import Simulated


class Pid(Simulated):
    """1 ns a launch (less than the host waits: the host-clock rule lets it through), its process
    id in the source: where it ran is in the record."""

    name = "pid"

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> Timing:
        return Timing("device", f"pid {os.getpid()}", (1e-9,) * launches)


class Hostile(Simulated):
    """Writes a passing results.json over `path` whenever it can (start-up, every call, close) and
    ends its process with exit 0 in close(): nothing of it may make the candidate's run pass."""

    name = "hostile"

    def __init__(self, path: str = "") -> None:
        self.path = Path(path)
        self._forge()

    def _forge(self) -> None:
        try:
            doc = json.loads(self.path.read_text())
            for r in doc.get("records", []):
                r["outcome"] = "passed"
            self.path.write_text(json.dumps(doc))
        except (OSError, ValueError):
            pass

    def run(self, call: OpCall):
        self._forge()
        return super().run(call)

    def close(self) -> None:
        self._forge()
        os._exit(0)


class Hangs(Simulated):
    """Never returns from a call: its process overruns the deadline and is killed."""

    name = "hangs"

    def run(self, call: OpCall):
        import time
        time.sleep(600)
