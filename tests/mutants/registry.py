"""Every mutant and correct variant the self-test runs, as backends: the generic ones
(`gallery.GENERIC`, `correct.CORRECT`, `scale.GENERIC`) and each registered operator's own
(`Operator.mutants()` and `Operator.variants()`, read from `suite.ops.OPERATORS`), so a new
operator's module brings its mutants with it and nothing here names one.

An operator's mutant is judged where its `where` says its defect shows. One whose `where` holds
on no small case (the cases with committed goldens) shows only at scale: it joins the scale
mutants (`tests/test_scale.py`: it passes every small case, and the default run kills it); the
others join the gallery's (`tests/test_mutants.py`, over the pairwise subset).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Dict, List, Mapping, Optional, Tuple, Type

from suite import ops
from suite.ops.base import Operator
from tests.mutants.kernel import Float32Kernel, operator_kernel

Kernel = Type[Float32Kernel]


def _operators(operators: Optional[Mapping[str, Operator]]) -> List[Operator]:
    return [op for _, op in sorted((operators if operators is not None else ops.OPERATORS).items())]


def _checked(op: Operator, kind: str, name: str, kernel: Operator) -> None:
    if not isinstance(kernel, Operator) or kernel.name != op.name:
        raise TypeError(f"{op.name}.{kind}(): {name}'s kernel must be an instance of a subclass of "
                        f"{type(op).__name__} (got {type(kernel).__name__} named {getattr(kernel, 'name', None)!r})")


@lru_cache(maxsize=None)
def mutants_of(op: Operator) -> Tuple[Kernel, ...]:
    """The operator's own mutants (`op.mutants()`), each the control with its kernel in place."""
    out = []
    for m in op.mutants():
        _checked(op, "mutants", m.name, m.kernel)
        out.append(operator_kernel(m.name, m.description, m.kernel, m.where, m.fails))
    return tuple(out)


@lru_cache(maxsize=None)
def variants_of(op: Operator) -> Tuple[Kernel, ...]:
    """The operator's own correct variants (`op.variants()`)."""
    out = []
    for v in op.variants():
        _checked(op, "variants", v.name, v.kernel)
        out.append(operator_kernel(v.name, v.description, v.kernel))
    return tuple(out)


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
