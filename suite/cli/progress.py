"""`golden generate`'s progress on stderr: one line per case, throttled where it is not a terminal."""
from __future__ import annotations

import sys
import time
from typing import Optional


class Progress:
    """`golden generate`'s line per case (with the time left) on stderr: in a terminal, each case
    rewrites one line; in a log, a line at most once a second (and the first)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last: Optional[float] = None

    def __call__(self, text: str) -> None:
        if self.tty:
            sys.stderr.write(f"\r\033[K  {text}")
            sys.stderr.flush()
            self.last = 0.0
            return
        now = time.monotonic()
        if self.last is None or now - self.last >= 1.0:
            print(f"  {text}", file=sys.stderr, flush=True)
            self.last = now

    def end(self) -> None:
        if self.tty and self.last is not None:
            sys.stderr.write("\n")
