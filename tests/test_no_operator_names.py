"""An operator's knowledge lives in its own files: no other file of the suite's machinery names an
operator, its module, or (as an identifier or a quoted string) one of its inputs or attributes.

What is scanned: every tracked file but the ones listed in OWN (an operator's own files) and
EXEMPT (with the reason each may name operators). The names come from the registry, so a new
operator is checked the moment its module exists.
"""
from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from suite import ops

ROOT = Path(__file__).resolve().parents[1]

# Each operator's own files, by its module's stem (snake) and its name (Camel).
OWN = ("suite/ops/{snake}.py", "cases/{snake}.yaml", "golden/{name}/*", "docs/operators/{name}.md",
       "tests/emulator/src/ops/{snake}.c", "tests/mutants/{snake}.py")

# Files that may name operators, and why.
EXEMPT: Dict[str, str] = {
    "suite/ops/*": "the operator modules and their shared bases (base.py, loss.py and the rest name no operator)",
    "golden/manifest.json": "the goldens' index: one entry per case, each case id names its operator",
    "README.md": "user documentation: it lists the operators and uses their cases as examples",
    "docs/*": "user documentation: worked examples and figures on named operators' cases",
    "benchmarks/*": "figures are measured on named operators' cases",
    "tests/test_*.py": ("tests of the core that take a real operator's cases as their fixture "
                        "(GENERIC below lists the test modules that must stay operator-free)"),
    "tests/plugin_backends.py": "a fixture backend for the plugin tests",
    "tests/core_helpers.py": "small case files of the real operators, for the core tests",
    "tests/aclnn_checks.py": "direct ctypes calls into the emulator of named entry points",
    "tests/aclnn_fault_driver.py": "drives the emulator's fault builds through named entry points",
}

# Test modules that read the operators' declarations and so must name none.
GENERIC = ("tests/test_ops_checks.py", "tests/test_mutants.py", "tests/test_no_operator_names.py",
           "tests/test_backends_aclnn_suite.py")

# A line may name one where a fixed format of the past does (results schema v1): it says so with
# this mark and its reason, visible where it stands.
PRAGMA = "names-ok:"


def _tracked() -> List[str]:
    """The project's files: tracked, and new ones git does not ignore."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p]


def _stem(op) -> str:
    return type(op).__module__.rsplit(".", 1)[-1]


def _patterns() -> Dict[str, re.Pattern]:
    """name -> the pattern that finds it: operators and modules as words; inputs and attributes
    as identifiers when they are camelCase, and as quoted strings always."""
    pats: Dict[str, re.Pattern] = {}
    for op in ops.OPERATORS.values():
        for word in (op.name, _stem(op)):
            pats[word] = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])")
        for field in (*op.inputs, *(a.name for a in op.attributes)):
            quoted = rf"[\"']{re.escape(field)}[\"']"
            pats[field] = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(field)}(?![A-Za-z0-9_])|{quoted}"
                                     if any(ch.isupper() for ch in field) else quoted)
    return pats


def _matches(path: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(path, pattern)


def _scanned() -> List[str]:
    own = [p.format(snake=_stem(op), name=op.name) for op in ops.OPERATORS.values() for p in OWN]
    out = []
    for path in _tracked():
        if any(_matches(path, p) for p in own):
            continue
        if path in GENERIC or not any(_matches(path, p) for p in EXEMPT):
            out.append(path)
    return out


def _findings(paths: List[str]) -> List[str]:
    pats = _patterns()
    found = []
    for path in paths:
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        lines = text.splitlines()
        for name, pat in pats.items():
            for m in pat.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                if PRAGMA not in lines[line - 1]:
                    found.append(f"{path}:{line}: names {name!r}")
    return found


def test_no_file_outside_an_operators_own_names_it() -> None:
    scanned = _scanned()
    assert "suite/plugin/__init__.py" in scanned and "suite/cases/model.py" in scanned and "conftest.py" in scanned
    assert all(p in scanned for p in GENERIC if (ROOT / p).exists())
    found = _findings(scanned)
    assert not found, "operator knowledge outside the operator's files:\n" + "\n".join(found)


def test_the_scan_finds_a_name(tmp_path, monkeypatch) -> None:
    """The scan is not vacuous: a planted operator name, a quoted input and a camelCase
    attribute in a scanned file are each found, and a look-alike word is not."""
    op = next(iter(ops.OPERATORS.values()))
    camel = next((f for f in (*op.inputs, *(a.name for a in op.attributes)) if any(c.isupper() for c in f)), None)
    text = (f"x = ops.get('{op.name}')\ny = inputs['{op.inputs[-1]}']\nz = 1  # {op.name}Extra\n"
            f"v = '{op.name}'  # {PRAGMA} a reason\n")
    if camel:
        text += f"w = {camel}\n"
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "leak.py").write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = _findings(["suite/leak.py"])
    assert f"suite/leak.py:1: names {op.name!r}" in found
    assert f"suite/leak.py:2: names {op.inputs[-1]!r}" in found
    assert not any(":3:" in f or ":4:" in f for f in found), found
    if camel:
        assert f"suite/leak.py:5: names {camel!r}" in found


@pytest.mark.parametrize("pattern", sorted(EXEMPT))
def test_every_exemption_still_applies(pattern: str) -> None:
    """An exemption that matches no file is dead weight (or a typo hiding a leak)."""
    assert any(_matches(p, pattern) for p in _tracked()), pattern
