"""The run's interrupt held back for a few lines that must not be cut in two.

Why: the run's first SIGINT or SIGTERM raises KeyboardInterrupt wherever the run is
(suite/run/interrupts.py). Raised inside `zipfile.ZipFile(...)` (np.load of a golden bundle), it
leaves a half-made ZipFile whose `__del__` fails when it is collected, and the run's last lines are
an "Exception ignored ... AttributeError: 'ZipFile' object has no attribute '_writing'" traceback
(seen in a fresh-clone CI run of tests/test_interrupts.py). Inside `held()` the handler hands its
KeyboardInterrupt to `later` instead, and it is raised as the block ends: not lost, not inside.
(A signal mask would not do: Python runs its handlers in the main thread whichever thread the
kernel picked, and the suite's processes have several threads.)"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

_here = threading.local()                 # the main thread's, where Python runs signal handlers


@contextmanager
def held() -> Iterator[None]:
    """An interrupt that comes inside the block (see `later`) is raised as it ends."""
    depth = getattr(_here, "depth", 0)
    _here.depth = depth + 1
    try:
        yield
    finally:
        _here.depth = depth
        if depth == 0:
            e, _here.late = getattr(_here, "late", None), None
            if e is not None:
                raise e


def holding() -> bool:
    """Whether this thread is inside `held()`."""
    return getattr(_here, "depth", 0) > 0


def later(e: BaseException) -> None:
    """Raise `e` as the outermost `held()` block ends (the first one handed over is kept)."""
    if getattr(_here, "late", None) is None:
        _here.late = e
