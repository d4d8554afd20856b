"""A run's failures grouped by what they share: operator, kind of test, dtypes, product, the
attributes the operator declares (reduction by its name, as case ids spell it) and the shape
class. A backend's bug shows as one large group, not as hundreds of lines; each group keeps its
worst element (the largest error among its records' `worst` elements) and one reproducer, so the
reader starts where the damage is largest (report.html, docs/results-schema.md)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from suite import ops
from suite.report import summary
from suite.report.results import number

LABELS = ("operator", "test", "dtype", "product", "attributes", "shape")


def _value(v: Any) -> str:
    """An attribute's value as a reader writes it: true/false, not Python's True/False."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def attrs_label(r: Mapping) -> str:
    """The record's attributes as key=value, in the operator's declared order (reduction first,
    by its name where the operator names its codes); a record of an operator this suite does not
    know keeps its codes. '-' for a call without attributes."""
    attrs = dict(r.get("attrs") or {})
    if not attrs and r.get("reduction") is not None:            # a version-1 record
        attrs = {"reduction": r["reduction"]}
    op = ops.OPERATORS.get(r.get("op") or "")
    declared = ["reduction"] + ([a.name for a in op.attributes] if op is not None else [])
    names = [n for n in declared if n in attrs] + sorted(n for n in attrs if n not in declared)
    parts = []
    for n in names:
        v = attrs[n]
        if n == "reduction" and op is not None and op.reductions and isinstance(v, int):
            v = op.reduction_name(v)
        parts.append(f"{n}={_value(v)}")
    return ", ".join(parts) or "-"


def shape_label(r: Mapping) -> str:
    """The report grid's shape class (summary.shape_class), with the layout when it is not
    contiguous: a strides bug fails the transposed cases of every rank at once."""
    sc = summary.shape_class(r)
    layout = r.get("layout")
    return sc if layout in (None, "contiguous") else f"{sc}, {layout}"


def key_of(r: Mapping) -> Tuple[str, ...]:
    """What a failure shares with the others of its group, in LABELS' order."""
    return (r["op"], r["kind"], summary.dtype_label(r), r["product"], attrs_label(r), shape_label(r))


def _error(e: Mapping) -> float:
    u = number(e.get("error"))
    return -1.0 if u is None else (math.inf if math.isnan(u) else u)


@dataclass
class FailureGroup:
    key: Tuple[str, ...]
    records: List[Mapping] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.records)

    @property
    def labels(self) -> Dict[str, str]:
        return dict(zip(LABELS, self.key))

    def worst(self) -> Optional[Tuple[Mapping, Mapping, Optional[str]]]:
        """(element, its record, its output): the largest error among the group's worst elements,
        each failing output's of a call with several (the output named; None for one output's);
        None when no record has any (a wrong status, a crash)."""
        best: Optional[Tuple[Mapping, Mapping, Optional[str]]] = None
        for r in self.records:
            for name, e in elements(r):
                if best is None or _error(e) > _error(best[0]):
                    best = (e, r, name)
        return best

    def failing_outputs(self) -> Dict[str, Optional[float]]:
        """Each output of a call with several that failed in one of the group's records, in
        signature order, with its worst ulp error over those records (None: not measured)."""
        found: Dict[str, Optional[float]] = {}
        for r in self.records:
            for n in r.get("failed_outputs") or {}:
                u = number(((r.get("outputs") or {}).get(n) or {}).get("max_ulp"))
                if n not in found or (u is not None and (found[n] is None or u > found[n] or math.isnan(u))):
                    found[n] = u
        return found

    def example(self) -> Mapping:
        """The record the group shows: the one holding the worst element, else the first with a
        reproducer, else the first."""
        w = self.worst()
        if w is not None and w[1].get("reproduce"):
            return w[1]
        return next((r for r in self.records if r.get("reproduce")), self.records[0])

    def came_back(self) -> str:
        """What the example call came back with when no element was judged: its process's fault, a
        status (and the one that was due), or that the call never ran."""
        r = self.example()
        if r.get("fault"):
            return f"the backend's process: {r['fault']}"
        if r.get("status") is None:
            return "the call never ran"
        return f"status {r['status']}" + (f" where {r['expect']} was due" if r.get("expect") is not None else "")


def elements(r: Mapping) -> List[Tuple[Optional[str], Mapping]]:
    """A failed record's worst elements as (output, element): each failing output's of a call with
    several (`failed_outputs`), else its `worst` (output None)."""
    failed = r.get("failed_outputs")
    if isinstance(failed, Mapping) and failed:
        return [(n, e) for n, es in failed.items() for e in es or []]
    return [(None, e) for e in r.get("worst") or []]


def failures(records) -> List[Mapping]:
    """The records that fail the run: outcome `failed` (wrong numbers, a wrong status, a crash of
    the backend's process, a strict known failure that passed)."""
    return [r for r in records if r["outcome"] == "failed"]


def group_failures(records) -> List[FailureGroup]:
    """The failed records' groups, largest first (ties: by what they share, alphabetically)."""
    groups: Dict[Tuple[str, ...], FailureGroup] = {}
    for r in failures(records):
        k = key_of(r)
        groups.setdefault(k, FailureGroup(k)).records.append(r)
    return sorted(groups.values(), key=lambda g: (-g.count, g.key))


def in_group_order(records) -> List[Mapping]:
    """Every failed record, its group's largest first (the reports' full lists of failures)."""
    return [r for g in group_failures(records) for r in g.records]


def message(r: Mapping) -> str:
    """The record's reason without its leading case id: the report names the case beside it."""
    reason = str(r.get("reason") or "")
    head = f"{r.get('case')}: "
    return reason[len(head):] if reason.startswith(head) else reason


def reduction_label(r: Mapping) -> str:
    """The record's reduction as the grid's column names it: `reduction=mean` (by the operator's
    name for the code, its code where the suite does not know the operator); '-' for none."""
    red = r.get("reduction")
    if red is None:
        return "-"
    op = ops.OPERATORS.get(r.get("op") or "")
    return f"reduction={op.reduction_name(red) if op is not None and op.reductions else red}"
