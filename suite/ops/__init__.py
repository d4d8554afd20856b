"""Operator registry: every module of this package but the shared ones (SHARED) exports OP (an
Operator), found by scanning the package, so a new operator is one new module and no list to edit."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Dict

from suite.ops.base import Operator

# The modules every operator builds on (the base class, its records, shapes and flushing, a family's
# base): they declare no operator. A module missing from here that exports no OP is an error, so a
# new operator module that forgot its OP is never skipped silently.
SHARED = frozenset({"base", "checks", "class_index", "flush", "loss", "operands", "outputs", "promotion",
                    "records", "shapes", "walk"})


def _discover() -> Dict[str, Operator]:
    found: Dict[str, Operator] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in SHARED:
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
