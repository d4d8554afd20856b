"""What the doctor reports about this machine: the report and its problems, the Python packages, the
environment, the product families and their dtypes, the case counts."""
from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from suite.run import confine
from suite import ops
from suite.cases.model import Case
from suite.contract import PRODUCTS
from suite.common.home import data_source


# -- what is looked at -------------------------------------------------------------------------
# Distributions whose versions are reported (importlib.metadata: nothing is imported for a version).
PACKAGES = ("numpy", "ml_dtypes", "pyyaml", "pytest", "pytest-xdist", "torch", "torch_npu", "hypothesis")
# What each missing package costs, and the command that installs it.
PACKAGE_FIXES = {
    "numpy": ("the suite cannot run", "pip install -e ."),
    "ml_dtypes": ("the suite cannot run", "pip install -e ."),
    "pyyaml": ("the suite cannot read its case files", "pip install -e ."),
    "pytest": ("the suite cannot run", "pip install -e ."),
    "pytest-xdist": ("`pytest -n N` is unavailable", "pip install -e ."),
    "torch": ("the torch backend cannot run", "pip install torch   (or: pip install -e '.[torch]')"),
    "hypothesis": ("the project's own tests (tests/test_fuzz.py) cannot run", "pip install -e '.[test]'"),
}

# -- the report --------------------------------------------------------------------------------
@dataclass
class Problem:
    """One thing wrong: what, where it was looked for (in `what`), the command that fixes it, and
    the backends it stops (empty: a warning, the selected backend can still run)."""
    what: str
    fix: str
    stops: Tuple[str, ...] = ()

    def as_dict(self) -> Dict[str, Any]:
        return {"what": self.what, "fix": self.fix, "stops": list(self.stops)}


@dataclass
class Report:
    """Everything the doctor found, as plain values (the --json document is `as_dict()`)."""
    backend: str
    opts: Dict[str, str]
    environment: Dict[str, Any] = field(default_factory=dict)
    cann: Dict[str, Any] = field(default_factory=dict)
    families: Dict[str, Any] = field(default_factory=dict)
    smoke: List[Dict[str, Any]] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    verdict: str = ""
    exit_code: int = 1

    def as_dict(self) -> Dict[str, Any]:
        return {"backend": self.backend, "backend_opts": self.opts, "environment": self.environment,
                "cann": self.cann, "families": self.families, "smoke": self.smoke,
                "problems": [p.as_dict() for p in self.problems], "notes": self.notes,
                "verdict": self.verdict, "exit_code": self.exit_code}


# -- environment ---------------------------------------------------------------------------------
def package_versions() -> Dict[str, Optional[str]]:
    """Installed versions from the distributions' metadata: importing torch only to read its version
    would cost seconds and could fail for reasons that are not the doctor's to report."""
    out: Dict[str, Optional[str]] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def environment() -> Dict[str, Any]:
    """Python, where the suite and its data are, and the packages: the first lines of a bug report."""
    import suite
    return {"python": platform.python_version(), "executable": sys.executable,
            "platform": f"{platform.system()} {platform.machine()}",
            "suite": getattr(suite, "__version__", "?"), "suite_at": str(Path(suite.__file__).parent),
            "data": str(data_source()[0]), "data_from": data_source()[1],
            "packages": package_versions(), "protections": confine.in_force()}



# -- families and dtypes -------------------------------------------------------------------------
def dtypes_by_family() -> Dict[str, List[Dict[str, Any]]]:
    """family -> [{dtypes, operators}]: the operators grouped by the dtypes they take there."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for family in PRODUCTS:
        groups: Dict[Tuple[str, ...], List[str]] = {}
        for name, op in ops.OPERATORS.items():
            groups.setdefault(tuple(sorted(op.product_dtypes.get(family, ()))), []).append(name)
        out[family] = [{"dtypes": list(d), "operators": names} for d, names in groups.items()]
    return out


def case_counts(cases: Sequence[Case]) -> Dict[str, int]:
    """Cases per family in the default run (the huge tier left out)."""
    counts = {p: 0 for p in PRODUCTS}
    for c in cases:
        if c.tier != "huge" and c.product in counts:
            counts[c.product] += 1
    return counts
