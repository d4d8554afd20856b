"""Helpers shared by the core-suite tests: small case files written into tmp dirs, and the line a
YAML text marks as the one an error must name."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional

import numpy as np
import pytest

MARK = "#<"          # put at the end of the line an error must point at


def approx_metrics(want: Mapping[str, Any], **tol: float) -> Dict[str, Any]:
    """`want` for comparing a metrics dict: numbers approximately (pytest.approx with `tol`), text
    exactly (pytest 9.2's approx refuses a mapping that holds text, such as the standard's name)."""
    return {k: v if isinstance(v, str) else pytest.approx(v, **tol) for k, v in want.items()}


def write(folder: Path, name: str, text: str) -> Path:
    """Write dedented `text` to folder/name and return the path."""
    path = Path(folder) / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def marked_line(text: str) -> Optional[int]:
    """1-based number of the line carrying MARK in dedented `text` (None if unmarked)."""
    for i, line in enumerate(textwrap.dedent(text).lstrip("\n").splitlines(), 1):
        if MARK in line:
            return i
    return None


MSE_TINY = """
op: MseLossBackward
matrices:
  - products: [atlas-a2]
    dtypes: [float32, float16]
    reductions: [none, mean]
    shapes:
      - [2x3, 2x3, 2x3]
      - [scalar, 4, 4]
"""

KL_TINY = """
op: KlDivBackward
matrices:
  - products: [atlas-a3]
    dtypes: [float32, bfloat16]
    reductions: [sum, batchmean]
    logTarget: [true]
    shapes:
      - [2x3, 3, 2x3]
"""


def suite_folder(pytester, monkeypatch, root: Path, case_files: dict):
    """A pytester folder with the conformance modules, the given case files, the tolerance table
    and the goldens they need."""
    from suite.golden import build as golden
    from suite.cases.load import load_cases
    monkeypatch.setenv("PYTHONPATH", str(root))
    for mod in ("test_numerics", "test_status", "test_determinism"):
        pytester.makepyfile(**{mod: (root / "suite" / "conformance" / f"{mod}.py").read_text()})
    cases = pytester.path / "cases"
    cases.mkdir()
    for name, text in case_files.items():
        write(cases, name, text)
    (cases / "tolerances.yaml").write_text((root / "cases" / "tolerances.yaml").read_text())
    golden.generate(load_cases([cases])[0], pytester.path / "golden")
    return pytester


def generated(tmp_path: Path, text: str, name: str = "large.yaml"):
    """The cases of a case file written into tmp_path, and the golden folder generated from them."""
    from suite.golden import build as golden
    from suite.cases.load import load_cases
    cases = load_cases([write(tmp_path, name, text)])[0]
    root = tmp_path / "golden"
    golden.generate(cases, root)
    return cases, root


def rewrite_bundle(root: Path, case: Any, edit: Callable[[Dict[str, np.ndarray]], None]) -> None:
    """What a backend could do to golden/: rewrite a case's arrays in its bundle and the manifest
    so that every sha256 agrees again."""
    from suite.golden import bundle as golden_bundle
    m = json.loads((root / "manifest.json").read_text())
    rel = m["cases"][case.datakey]["file"]
    index, data = golden_bundle._read_bundle((root / rel).read_bytes())
    members = {k: {n: np.array(a) for n, a in golden_bundle._unpack(index, data, k).items()} for k in index}
    edit(members[case.datakey])
    blob = golden_bundle._bundle_bytes(members)
    sha = golden_bundle._sha256(blob)
    new_rel = rel.rsplit("-", 1)[0] + f"-{sha[:12]}.npz"
    (root / rel).unlink()
    (root / new_rel).write_bytes(blob)
    del m["files"][rel]
    m["files"][new_rel] = sha
    for e in m["cases"].values():
        if e.get("file") == rel:
            e["file"] = new_rel
    (root / "manifest.json").write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")


def ulps(a: np.ndarray, k: float) -> np.ndarray:
    """`a` moved by k float64 ulps of itself, at its first element."""
    a = np.array(a, dtype=np.float64)
    a.reshape(-1)[0] += k * np.spacing(np.abs(a.reshape(-1)[0]))
    return a
