"""The loss family's mutants, written once (issue 46, step 2): defects that fit every member of the
family (suite/ops/loss.py's LossBackward and the forwards that derive from it), each built for
one operator by subclassing that operator's class with one step overridden, and judged where its
`where` says, read off the operator's declarations (`b_shape`, `empty_fill`, `term_dtype`,
`result_dtype`) and the member's data, never its name.

An operator takes part through its kit's `FAMILY`, a `Member`: the prefix of its mutants' names,
what its mean divides by, the inputs a dropped broadcast reads, and each family mutant it opts out
of, with the reason (data, so the list of what an operator does not get is read, not inferred).
tests/mutants/registry.py adds the instances to the kit's own `MUTANTS`; an operator's kit holds
only the defects that are its own.

    FAMILY = Member(prefix="Abc", mean_over="B", opt_out={"BroadcastDropped": "why, in a line"})
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Type

import numpy as np

from suite import ops
from suite.cases.model import NUMBERS, Case
from suite.ops.base import Operator, Shape, numel
from tests.mutants.kit import Mutant


@dataclass(frozen=True)
class Member:
    """How an operator takes part in the family mutants (its kit's `FAMILY`).

    `prefix` starts each instance's name ("Abc" -> "AbcSumAsMean"); `names` renames one (a name
    older than the family, kept stable: {"BroadcastDropped": "AbcOlderName"}), `says`
    replaces one's description (one the docs quote, or that marks a defect issue 2 lists).
    `mean_over`: what the contract's mean divides by, the numel of "B" (the broadcast shape
    `b_shape`) or of the input it names; the wrong count is the other one (numel(B) for an
    input, numel of the operator's `primary` input for B). `dropped`: the inputs a dropped
    broadcast reads as if they had B's shape (default: every input but the primary).
    `opt_out`: family mutant -> why it does not apply."""

    prefix: str
    mean_over: str = "B"
    dropped: Optional[Tuple[str, ...]] = None
    names: Mapping[str, str] = field(default_factory=dict)
    says: Mapping[str, str] = field(default_factory=dict)
    opt_out: Mapping[str, str] = field(default_factory=dict)


# -- what a case declares, through its operator ------------------------------------------------------
def _live(c: Case) -> Dict[str, Shape]:
    return {n: tuple(s) for n, s in dict(c.shapes).items() if s is not None}


def _b(c: Case) -> Optional[Shape]:
    return ops.get(c.op).b_shape(_live(c))


def _numeric(c: Case) -> bool:
    """A valid call whose broadcast shape holds some element."""
    b = _b(c) if c.expect == NUMBERS else None
    return b is not None and numel(b) > 0


def _count(member: Member, c: Case) -> int:
    """What the contract's mean divides by in this case."""
    return numel(_b(c)) if member.mean_over == "B" else numel(c.shapes[member.mean_over])


def _other_count(member: Member, c: Case) -> int:
    """What the defect's mean divides by: numel of the primary input for B, else numel(B)."""
    return numel(c.shapes[ops.get(c.op).primary]) if member.mean_over == "B" else numel(_b(c))


def _red(c: Case) -> Any:
    return dict(c.attrs).get("reduction")


def _resize_is_broadcast(shape: Shape, to: Shape) -> bool:
    """Whether reading a tensor of `shape` as if it had shape `to` (its buffer repeated in flat
    order, np.resize) gives its broadcast: one element, or (leading 1s dropped) a suffix of `to`."""
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    return numel(shape) == 1 or tuple(to[len(to) - len(shape):]) == shape


# -- the defects: each a mixin overriding one step of the operator it is put before ------------------
class _MeanDivisor:
    """mean divides by the other count: numel(B) where the contract says an input's numel, the
    primary input's where it says numel(B) (the reference_terms of a mean see the shapes so)."""

    member: Member

    def reference_terms(self, x, attrs, shapes):
        if attrs["reduction"] == 1:
            if self.member.mean_over == "B":
                shapes = {n: shapes[self.primary] for n in shapes}
            else:
                shapes = {**shapes, self.member.mean_over: self.b_shape(shapes)}
        return super().reference_terms(x, attrs, shapes)


class _SumAsMean:
    """sum computed as mean (divided by the mean's count)."""

    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms(x, {**attrs, "reduction": 1 if attrs["reduction"] == 2 else
                                           attrs["reduction"]}, shapes)


class _MeanAsSum:
    """mean computed as sum (no division)."""

    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms(x, {**attrs, "reduction": 2 if attrs["reduction"] == 1 else
                                           attrs["reduction"]}, shapes)


class _EmptyMeanZero:
    """The mean of nothing is 0, the sum of nothing, not the op API's NaN fill."""

    def empty_fill(self, attrs):
        return None

    def empty_fill_of(self, attrs, shapes):
        return None if attrs["reduction"] == 1 else super().empty_fill_of(attrs, shapes)


class _AccumulateInPrecision:
    """Each term rounded to the 16-bit result dtype before the float32 sum (no FLOAT staging)."""

    def term_dtype(self, dts):
        return self.result_dtype(dts, "float32")


class _ResultInPrimaryDtype:
    """The result rounded through the primary input's dtype, not the operator's result dtype (the
    promoted dtype, or FLOAT): a wrong promotion."""

    def result_dtype(self, dts, out_dtype):
        return dts.get(self.primary) or super().result_dtype(dts, out_dtype)


class _BroadcastDropped:
    """The `dropped` inputs read as if they had B's shape: their buffers repeated in flat order
    (np.resize), not broadcast."""

    member: Member

    def reference(self, call, *args, **kw):
        x = {n: a for n, a in call.inputs.items() if a is not None}
        b = self.b_shape({n: tuple(a.shape) for n, a in x.items()})
        ins = dict(call.inputs)
        for n in _dropped(self.member, self):      # (one whose resize is its broadcast stays as it is)
            a = ins.get(n)
            if a is not None and b is not None and numel(b) and not _resize_is_broadcast(a.shape, b):
                ins[n] = np.resize(np.ascontiguousarray(a), b)
        return super().reference(dataclasses.replace(call, inputs=ins), *args, **kw)


def _dropped(member: Member, op: Operator) -> Tuple[str, ...]:
    return member.dropped if member.dropped is not None else tuple(n for n in op.inputs if n != op.primary)


# -- where each shows ---------------------------------------------------------------------------------
def _where_mean_divisor(member: Member) -> Callable[[Case], bool]:
    return lambda c: _numeric(c) and _red(c) == 1 and _count(member, c) != _other_count(member, c)


def _where_sum_as_mean(member: Member) -> Callable[[Case], bool]:
    return lambda c: _numeric(c) and _red(c) == 2 and _count(member, c) > 1


def _where_mean_as_sum(member: Member) -> Callable[[Case], bool]:
    return lambda c: _numeric(c) and _red(c) == 1 and _count(member, c) > 1


def _where_empty_mean(member: Member) -> Callable[[Case], bool]:
    def where(c: Case) -> bool:
        if c.expect != NUMBERS or _red(c) != 1:
            return False
        b = _b(c)
        fill = ops.get(c.op).empty_fill_of(dict(c.attrs), _live(c))
        return b is not None and numel(b) == 0 and fill is not None and math.isnan(fill)
    return where


def _where_accumulate(member: Member) -> Callable[[Case], bool]:
    """A sum over B's axes that out lacks, of terms the contract keeps in float32 and the defect
    rounds to a 16-bit result dtype."""
    def where(c: Case) -> bool:
        if not _numeric(c):
            return False
        op = ops.get(c.op)
        live = {n: d for n, d in dict(c.dtypes).items() if dict(c.shapes).get(n) is not None}
        out = op.out_shape(_live(c), dict(c.attrs))
        return (out is not None and numel(_b(c)) > numel(out) and op.term_dtype(live) == "float32"
                and op.result_dtype(live, "float32") != "float32")
    return where


def _where_result_dtype(member: Member) -> Callable[[Case], bool]:
    """The operator's result dtype for the case is not its primary input's."""
    def where(c: Case) -> bool:
        if not _numeric(c):
            return False
        op = ops.get(c.op)
        live = {n: d for n, d in dict(c.dtypes).items() if dict(c.shapes).get(n) is not None}
        return op.result_dtype(live, c.out_dtype) != live[op.primary]
    return where


def _where_broadcast_dropped(member: Member) -> Callable[[Case], bool]:
    def where(c: Case) -> bool:
        if not _numeric(c):
            return False
        b, live = _b(c), _live(c)
        return any(n in live and not _resize_is_broadcast(live[n], b) for n in _dropped(member, ops.get(c.op)))
    return where


@dataclass(frozen=True)
class FamilyMutant:
    """One defect of the family: `key` names it (and, after the member's prefix, its instances,
    unless `suffix` reads the member), `says` its description with {op} for the operator's name."""

    key: str
    says: str
    mixin: type
    where: Callable[[Member], Callable[[Case], bool]]
    suffix: Optional[Callable[[Operator, Member], str]] = None
    fails: frozenset = frozenset({"numbers"})

    def name(self, op: Operator, member: Member) -> str:
        return member.names.get(self.key) or member.prefix + (self.suffix(op, member) if self.suffix else self.key)

    def build(self, op: Operator, member: Member) -> Mutant:
        """This defect in `op`'s kernel: a subclass of the operator's class with the mixin first."""
        cls: Type[Operator] = type(f"_{self.key}", (self.mixin, type(op)), {"member": member})
        other = f"numel({op.primary})" if member.mean_over == "B" else "numel(B)"
        says = member.says.get(self.key) or self.says.format(
            op=op.name, count=f"numel({member.mean_over})", other=other, dropped=", ".join(_dropped(member, op)),
            primary=op.primary)
        return Mutant(self.name(op, member), says, cls(), where=self.where(member), fails=self.fails)


FAMILY: Tuple[FamilyMutant, ...] = (
    FamilyMutant("MeanDivisor", "{op}: mean divides by {other} instead of {count}", _MeanDivisor,
                 _where_mean_divisor,
                 suffix=lambda op, m: "MeanDivisorNumel" + ("B" if m.mean_over != "B" else op.primary.capitalize())),
    FamilyMutant("SumAsMean", "{op}: reduction sum treated as mean (divides by {count})", _SumAsMean,
                 _where_sum_as_mean),
    FamilyMutant("MeanAsSum", "{op}: mean is computed as sum (no division by {count})", _MeanAsSum,
                 _where_mean_as_sum),
    FamilyMutant("EmptyMeanZero", "{op}: mean of empty inputs is 0 instead of NaN", _EmptyMeanZero,
                 _where_empty_mean),
    FamilyMutant("AccumulateInPrecision", "{op}: rounds each term to the 16-bit result dtype before "
                 "the sum (no FLOAT staging)", _AccumulateInPrecision, _where_accumulate),
    FamilyMutant("BroadcastDropped", "{op}: {dropped} read with the broadcast shape (each buffer "
                 "repeated in flat order), not broadcast", _BroadcastDropped, _where_broadcast_dropped),
    FamilyMutant("ResultInPrimaryDtype", "{op}: the result rounded through {primary}'s dtype instead of "
                 "the operator's result dtype (a wrong promotion)", _ResultInPrimaryDtype, _where_result_dtype),
)

BY_KEY = {f.key: f for f in FAMILY}


def instances(op: Operator, member: Optional[Member]) -> Tuple[Mutant, ...]:
    """The family mutants `op` takes (none without a `Member`), in FAMILY's order."""
    if member is None:
        return ()
    unknown = set(member.opt_out) - set(BY_KEY)
    if unknown:
        raise ValueError(f"{op.name}'s FAMILY opts out of unknown family mutants {sorted(unknown)} "
                         f"(known: {sorted(BY_KEY)})")
    if member.mean_over != "B" and member.mean_over not in op.inputs:
        raise ValueError(f"{op.name}'s FAMILY: mean_over {member.mean_over!r} is neither B nor an input")
    if not all(member.opt_out.values()):
        raise ValueError(f"{op.name}'s FAMILY: an opt-out without its reason")
    return tuple(f.build(op, member) for f in FAMILY if f.key not in member.opt_out)
