"""The sha256 of the files a run judges by (the tolerance table; the golden manifest's is
GoldenStore.manifest_hash), read before the backend's process starts and written to results.json,
so that `report diff` can refuse a run whose goldens or tolerances are not the baseline's: the
backend may rewrite any file, but not a baseline results.json kept elsewhere (docs/ci-gate.md)."""
from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    """Hex sha256 of the file's bytes; '' when it cannot be read (its loader reports why)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""
