"""Every mutant and correct variant the self-test runs, as backends: the generic ones
(`gallery.GENERIC`, `correct.CORRECT`, `scale.GENERIC`) and each registered operator's own, from
its test kit: `tests/mutants/<stem>.py`, where <stem> is the name of the operator's module in
suite/ops/ (its MUTANTS and VARIANTS, tests/mutants/kit.py). The operators are read from
`suite.ops.OPERATORS` and each kit is found by its operator's module, so a new operator brings
its mutants with one file here and nothing in this module names one. A kit's `FAMILY` (a
`family.Member`) adds the loss family's mutants, written once in tests/mutants/family.py, to its
own.

An operator's mutant is judged where its `where` says its defect shows. One whose `where` holds
on no small case (the cases with committed goldens) shows only at scale: it joins the scale
mutants (`tests/test_scale.py`: it passes every small case, and the default run kills it); the
others join the gallery's (`tests/test_mutants.py`, over the pairwise subset).
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from types import ModuleType
from typing import Dict, List, Mapping, Optional, Tuple, Type

from suite import ops
from suite.ops.base import Operator
from tests.mutants import family
from tests.mutants.kernel import Float32Kernel, operator_kernel
from tests.mutants.kit import Mutant, Variant

Kernel = Type[Float32Kernel]


def _operators(operators: Optional[Mapping[str, Operator]]) -> List[Operator]:
    return [op for _, op in sorted((operators if operators is not None else ops.OPERATORS).items())]


def kit_name(op: Operator) -> str:
    """The module of the operator's test kit: tests.mutants.<the stem of its module in suite/ops/>."""
    return f"{__package__}.{type(op).__module__.rsplit('.', 1)[-1]}"


def kit(op: Operator) -> Optional[ModuleType]:
    """The operator's test kit, or None when it has none (its module is missing, not broken: an
    error inside a kit is raised)."""
    name = kit_name(op)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:
            raise
        return None


def declared(op: Operator) -> Tuple[Tuple[Mutant, ...], Tuple[Variant, ...]]:
    """The operator's kit's (MUTANTS, VARIANTS), each kernel checked to be this operator's: its
    own mutants, then the family mutants its kit's FAMILY takes (tests/mutants/family.py)."""
    module = kit(op)
    mutants = tuple(getattr(module, "MUTANTS", ())) + family.instances(op, getattr(module, "FAMILY", None))
    variants = tuple(getattr(module, "VARIANTS", ()))
    for kind, entries in (("MUTANTS", mutants), ("VARIANTS", variants)):
        for d in entries:
            if not isinstance(d.kernel, Operator) or d.kernel.name != op.name:
                raise TypeError(f"{kit_name(op)}.{kind}: {d.name}'s kernel must be an instance of a subclass "
                                f"of {type(op).__name__} (got {type(d.kernel).__name__} named "
                                f"{getattr(d.kernel, 'name', None)!r})")
    return mutants, variants


@lru_cache(maxsize=None)
def mutants_of(op: Operator) -> Tuple[Kernel, ...]:
    """The operator's own mutants (its kit's MUTANTS), each the control with its kernel in place."""
    return tuple(operator_kernel(m.name, m.description, m.kernel, m.where, m.fails) for m in declared(op)[0])


@lru_cache(maxsize=None)
def variants_of(op: Operator) -> Tuple[Kernel, ...]:
    """The operator's own correct variants (its kit's VARIANTS)."""
    return tuple(operator_kernel(v.name, v.description, v.kernel) for v in declared(op)[1])


def _unique(kernels: List[Kernel]) -> List[Kernel]:
    seen: Dict[str, Kernel] = {}
    for k in kernels:
        if k.__name__ in seen:
            raise ValueError(f"two mutants or variants are named {k.__name__}: names are ids")
        seen[k.__name__] = k
    return kernels


def operator_mutants(operators: Optional[Mapping[str, Operator]] = None) -> List[Kernel]:
    return [m for op in _operators(operators) for m in mutants_of(op)]


def all_mutants(operators: Optional[Mapping[str, Operator]] = None) -> List[Kernel]:
    """The gallery's generic mutants, then every operator's own (by operator name)."""
    from tests.mutants.gallery import GENERIC
    return _unique(list(GENERIC) + operator_mutants(operators))


@lru_cache(maxsize=None)
def shows_only_at_scale(m: Kernel) -> bool:
    """An operator's mutant whose defect shows on no small case (its `where` holds on none)."""
    from tests.mutants import harness
    return m.operators is not None and not any(m.where(c) for c in harness.small_cases())


def gallery_mutants(operators: Optional[Mapping[str, Operator]] = None) -> List[Kernel]:
    """The mutants judged on the pairwise subset of the small cases."""
    return [m for m in all_mutants(operators) if not shows_only_at_scale(m)]


def scale_operator_mutants(operators: Optional[Mapping[str, Operator]] = None) -> List[Kernel]:
    """Operators' mutants that show only at scale (tests/mutants/scale.py lists them)."""
    return [m for m in operator_mutants(operators) if shows_only_at_scale(m)]


def variants(operators: Optional[Mapping[str, Operator]] = None) -> List[Kernel]:
    """The generic correct kernels, then every operator's own."""
    from tests.mutants.correct import CORRECT
    return _unique(list(CORRECT) + [v for op in _operators(operators) for v in variants_of(op)])


def issue2() -> List[Kernel]:
    """The five defects issue 2 lists (their descriptions end in "(issue 2)")."""
    return [m for m in all_mutants() if m.description.endswith("(issue 2)")]


def by_name(name: str) -> Kernel:
    """Any mutant (gallery, operator or scale) or correct variant, by name."""
    from tests.mutants import scale
    for k in [*all_mutants(), *scale.GENERIC, *variants()]:
        if k.__name__ == name:
            return k
    raise KeyError(name)
