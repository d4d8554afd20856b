"""A backend's own traceback: the frames of an exception its `run` raised, from its `run` down to
where it was raised. The suite's frames above (the call that caught it) are the suite's, not the
backend author's to read, and are left out. Bounded (a deep recursion keeps its first and last
frames), plain text, so it crosses the wire from the backend's process as any other text
(suite/run/protocol.py) and becomes the failure's lines (suite/run/runner.py)."""
from __future__ import annotations

import traceback
from typing import List, Optional

HEAD, TAIL = 4, 12               # frames kept of a longer traceback: the first HEAD and the last TAIL
MAX_LINE = 300                   # characters kept of one line (a file name, a source line)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LINE else text[:MAX_LINE] + "..."


def backend_frames(e: BaseException, skip: int = 1) -> Optional[str]:
    """The frames of `e`'s traceback below the first `skip` (the suite's own: the frame that caught
    it), one "File ..., line N, in name" line and its source line each; None when none are left."""
    tb = e.__traceback__
    for _ in range(skip):
        tb = tb.tb_next if tb is not None else None
    try:
        frames = traceback.extract_tb(tb)
    except Exception:                 # a backend's loader that breaks linecache costs the frames only
        return None
    if not frames:
        return None
    kept = list(frames)
    dropped = len(kept) - HEAD - TAIL
    lines: List[str] = []
    for i, f in enumerate(kept):
        if dropped > 0 and HEAD <= i < HEAD + dropped:
            if i == HEAD:
                lines.append(f"... {dropped} frames left out ...")
            continue
        lines.append(_cut(f'File "{f.filename}", line {f.lineno}, in {f.name}'))
        if f.line:
            lines.append("  " + _cut(f.line.strip()))
    return "\n".join(lines)


def trace_lines(trace: Optional[str]) -> List[str]:
    """The failure's lines of a backend's traceback (none without one)."""
    if not trace:
        return []
    return ["  the backend's traceback (most recent call last):", *("    " + t for t in trace.splitlines())]
