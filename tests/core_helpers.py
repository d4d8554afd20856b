"""Helpers shared by the core-suite tests: small case files written into tmp dirs, and the line a
YAML text marks as the one an error must name."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

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
