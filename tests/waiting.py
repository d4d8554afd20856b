"""How the project's tests wait (issue 42 item 16): never on the machine's speed.

A test on a loaded machine (two cores, four busy processes beside it) runs several times slower
than alone, and must still pass: a limit that only guards against a hang is HANG_S, long enough
that no slow-but-correct run reaches it, and a test that waits for something to happen (a timer of
the backend's, a process ending) waits for it to happen, with `until`, never for a fixed time."""
from __future__ import annotations

import time
from typing import Callable

HANG_S = 1800                     # seconds: only a hang gets there (a whole loaded CI run took 57 min)


def until(happened: Callable[[], bool], what: str, limit: float = HANG_S) -> None:
    """Return as soon as `happened()` is true; AssertionError naming `what` after `limit` seconds."""
    end = time.monotonic() + limit
    while not happened():
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {limit:g} s")
        time.sleep(0.01)
