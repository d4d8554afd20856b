"""Writing a generated file atomically (a temporary file beside it, then a rename), so an interrupted
run leaves the previous file whole; golden bundles, results.json and the journal all write this way."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path




def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())          # mkstemp's 0600 would hide reports from others
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
