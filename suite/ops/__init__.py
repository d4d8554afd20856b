"""Operator registry: every module of this package but `base` exports OP (an Operator), found by
scanning the package, so a new operator is one new module and no list to edit."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Dict

from suite.ops.base import Operator


def _discover() -> Dict[str, Operator]:
    found: Dict[str, Operator] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "base":
            continue
        op = getattr(importlib.import_module(f"{__name__}.{info.name}"), "OP", None)
        if not isinstance(op, Operator):
            raise ImportError(f"suite/ops/{info.name}.py exports no OP (an Operator instance)")
        if op.name in found:
            raise ImportError(f"suite/ops/{info.name}.py: operator {op.name} is declared twice")
        found[op.name] = op
    return found


OPERATORS: Dict[str, Operator] = _discover()


def get(name: str) -> Operator:
    return OPERATORS[name]
