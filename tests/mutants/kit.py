"""What an operator's test kit declares (tests/mutants/<the operator's module>.py): its planted
defects (Mutant) and its correct variants (Variant). The kits live in tests/, not in the operator
modules, because they are the suite's own tests of itself, not the operator's contract: the suite
never imports them; tests/mutants/registry.py finds each operator's kit by the operator's module."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, FrozenSet

from suite.ops.base import Operator


@dataclass(frozen=True)
class Mutant:
    """A planted defect of one operator's kernel, which the suite must catch: `kernel` is the
    operator with exactly that defect (an instance of a subclass overriding one method). The suite
    must fail it on checks of the kinds in `fails` ("numbers", "rejection", "determinism"), and
    only on cases (suite.cases.Case) where `where` holds: a failure elsewhere is the suite's."""

    name: str
    description: str
    kernel: Operator
    where: Callable[[Any], bool]
    fails: FrozenSet[str] = frozenset({"numbers"})


@dataclass(frozen=True)
class Variant:
    """A correct kernel that computes otherwise than the reference in a way the contract allows
    (another operation order, another rounding of a constant): the suite must pass it everywhere."""

    name: str
    description: str
    kernel: Operator
