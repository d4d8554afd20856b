"""Reading and checking golden/manifest.json: its format, each entry's fields, the bundle names."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Optional


from suite.common import jsonfile
from suite.golden.source import FORMAT, GoldenError, MANIFEST


def read_manifest(root: Path, data: Optional[bytes] = None, command: str = "aclnn-conform golden generate") -> dict:
    """The manifest (or `data`, the bytes already read from it), checked entry by entry (so no
    later use of an entry meets a wrong type); any problem is one GoldenError that starts with the
    manifest's path (and `command`, the `golden generate` that remakes this folder: where.command)."""
    path = Path(root) / MANIFEST
    if data is not None:
        m = jsonfile.loads(path, data, GoldenError)
    elif not path.exists():
        raise GoldenError(f"{path}: no golden manifest; run `{command}`")
    else:
        m = jsonfile.load(path, GoldenError)
    problem = _manifest_problem(m)
    if problem:
        raise GoldenError(f"{path}: not a golden manifest of format {FORMAT}: {problem}; "
                          f"restore it from git or run `{command}`")
    return m


_BUNDLE_NAME = re.compile(r"[A-Za-z0-9_]+/[0-9]+-[0-9a-f]{12}\.npz")     # <op>/<bucket>-<sha12>.npz
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _hexfloat(v: object) -> bool:
    try:
        float.fromhex(v)                # type: ignore[arg-type]
        return True
    except (TypeError, ValueError, OverflowError):
        return False


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _entry_problem(e: object, files: Mapping) -> Optional[str]:
    """What is wrong with one case's entry: a small case's {file, spec}, or a large case's
    fingerprint (see `fingerprint`); None when it is well formed."""
    if not isinstance(e, dict):
        return "not an object"
    if not isinstance(e.get("spec"), str):
        return "field 'spec' is missing or not a string"
    if "file" in e:
        return None if isinstance(e["file"], str) and e["file"] in files else "field 'file' names no bundle of 'files'"
    for k in ("sum", "abs_sum"):
        if not _hexfloat(e.get(k)):
            return f"field '{k}' is missing or not a hexadecimal float"
    for k in ("scale_sum", "path_sum"):            # absent in an older generator's (then stale)
        if k in e and not _hexfloat(e[k]):
            return f"field '{k}' is not a hexadecimal float"
    if not isinstance(e.get("nonfinite"), str) or not _int(e.get("nterms")):
        return "fields 'nonfinite' (a string) and 'nterms' (an integer) are required"
    samples = e.get("samples")
    if not isinstance(samples, list) or not all(
            isinstance(x, list) and len(x) in (3, 4) and _int(x[0]) and all(_hexfloat(v) for v in x[1:])
            for x in samples):
        return "field 'samples' is not a list of [position, out, scale, path] (hex floats)"
    ins = e.get("inputs", {})
    if not isinstance(ins, dict) or not all(isinstance(v, str) for v in ins.values()):
        return "field 'inputs' is not an object of input name to sha256"
    return None


def _manifest_problem(m: object) -> Optional[str]:
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        return "unknown format"
    files, cases = m.get("files"), m.get("cases")
    if not isinstance(files, dict) or not isinstance(cases, dict):
        return "'files' and 'cases' are objects"
    for rel, sha in files.items():
        if not _BUNDLE_NAME.fullmatch(rel) or not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            return f"files: {jsonfile.short(rel)}: not <op>/<bucket>-<sha>.npz with a sha256"
    for key, e in cases.items():
        problem = _entry_problem(e, files)
        if problem:
            return f"cases: {jsonfile.short(key)}: {problem}"
    return None
