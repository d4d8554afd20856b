"""Tables over a run's records: per operator x dtype x product counts and worst ulp error (each
output's, for a call with several), shape classes for the coverage grid, and the terminal's
rendering (summary.md is suite/report/summarymd.py's)."""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from suite import ops
from suite.report.results import number

LARGE = 4096                       # output elements from which a case counts as "large"


def dtype_label(r: Mapping) -> str:
    ins = [d for d in r["dtypes"].values() if d is not None]
    head = "/".join(dict.fromkeys(ins)) or "-"
    out = r.get("out_dtype")
    return head if out is None or [out] == list(dict.fromkeys(ins)) else f"{head}->{out}"


def shape_class(r: Mapping) -> str:
    """empty, large, broadcast, or rank N, the first that applies, read off the record's operator's
    own declaration where the suite knows it (its `b_shape`, the shape its terms live on, and its
    `operands`): large from LARGE elements in an input, the terms or the output (a large mean or
    sum is large); broadcast where an input of another shape than the terms reaches them broadcast
    (an operator that shapes its inputs itself, a class index beside scores, broadcasts none);
    else the largest rank of its inputs, terms and output. An operator the suite does not know: by the
    shapes alone, inputs of different shapes broadcast, else the output's rank."""
    shapes = [tuple(s) for s in r["shapes"].values() if s is not None]
    out = r.get("out_shape")
    every = shapes + ([tuple(out)] if out is not None else [])
    if any(0 in s for s in every):
        return "empty"
    op = ops.OPERATORS.get(r.get("op") or "")
    terms = _terms(op, r["shapes"])
    if max((math.prod(s) for s in every + ([terms] if terms is not None else [])), default=0) >= LARGE:
        return "large"
    if op is None:
        if len(set(shapes)) > 1:
            return "broadcast"
        return f"rank {len(out if out is not None else (shapes[0] if shapes else []))}"
    if _broadcasts(op) and (any(s != terms for s in shapes) if terms is not None else len(set(shapes)) > 1):
        return "broadcast"
    return f"rank {max(len(s) for s in every + ([terms] if terms is not None else [()]))}"


def _terms(op: Optional[ops.Operator], shapes: Mapping[str, Any]) -> Optional[Tuple[int, ...]]:
    """The shape the operator's terms live on for these input shapes (None: unknown operator,
    or shapes it cannot take, as a rejection case's)."""
    if op is None:
        return None
    try:
        t = op.b_shape({n: None if s is None else tuple(s) for n, s in shapes.items()})
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return None if t is None else tuple(t)


def _broadcasts(op: ops.Operator) -> bool:
    """Whether the operator's inputs reach its terms as given, broadcast (Operator.operands's
    default), not shaped by the operator itself (a class index, a gather: suite/ops/operands.py)."""
    return type(op).operands is ops.Operator.operands


def shape_classes() -> List[str]:
    return [f"rank {i}" for i in range(9)] + ["broadcast", "empty", "large"]


def output_worsts(r: Mapping) -> Dict[Optional[str], float]:
    """A record's worst ulp error per output: {None: its metrics'} for one output, {name: ...} for
    each judged output of a call with several (its `outputs`); empty where nothing was judged."""
    outs = r.get("outputs")
    if isinstance(outs, Mapping) and outs:
        found = {n: number(m.get("max_ulp")) for n, m in outs.items() if isinstance(m, Mapping)}
    else:
        found = {None: number((r.get("metrics") or {}).get("max_ulp"))}
    return {n: u for n, u in found.items() if u is not None}


def record_worst(r: Mapping) -> Optional[float]:
    """The record's worst ulp error over all its outputs (None: nothing judged)."""
    return _worse(None, list(output_worsts(r).values()))


def _worse(u: Optional[float], more: Iterable[float]) -> Optional[float]:
    for v in more:
        if u is None or v > u or math.isnan(v):
            u = v
    return u


class Group:
    __slots__ = ("passed", "failed", "skipped", "xfailed", "xpassed", "worsts", "failing")

    def __init__(self) -> None:
        self.passed = self.failed = self.skipped = self.xfailed = self.xpassed = 0
        self.worsts: Dict[Optional[str], float] = {}     # output (None: the only one) -> worst ulp error
        self.failing: Dict[str, None] = {}                # outputs of several that failed in a record

    def add(self, r: Mapping) -> None:
        setattr(self, r["outcome"], getattr(self, r["outcome"]) + 1)
        for n, u in output_worsts(r).items():
            self.worsts[n] = _worse(self.worsts.get(n), [u])
        if r["outcome"] == "failed":
            self.failing.update((n, None) for n in r.get("failed_outputs") or ())

    @property
    def worst(self) -> Optional[float]:
        """The worst ulp error over every output."""
        return _worse(None, list(self.worsts.values()))

    def worst_text(self, unit: str = " ulp") -> str:
        """The worst error as a table cell: `0.41 ulp` for one output; each output's of a call with
        several, a failing one marked (`out 0.5 ulp, totalWeightOut 4.4e+06 ulp (failed)`)."""
        if set(self.worsts) <= {None}:
            return "-" if not self.worsts else f"{self.worsts[None]:.3g}{unit}"
        return ", ".join(f"{n or 'out'} {u:.3g}{unit}" + (" (failed)" if n in self.failing else "")
                         for n, u in self.worsts.items())

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped + self.xfailed + self.xpassed


def by(records: Iterable[Mapping], key) -> "OrderedDict[Any, Group]":
    groups: Dict[Any, Group] = {}
    for r in records:
        groups.setdefault(key(r), Group()).add(r)
    return OrderedDict(sorted(groups.items(), key=lambda kv: tuple(str(x) for x in kv[0])))


def op_dtype_product(r: Mapping) -> Tuple[str, str, str]:
    return r["op"], dtype_label(r), r["product"]


def terminal_lines(records: List[Mapping], key=op_dtype_product) -> List[str]:
    """One line per group of `key` (default operator x dtype x product), columns aligned."""
    rows = []
    for k, g in by(records, key).items():
        extra = "".join(f" {n} {name}" for name, n in (("xfailed", g.xfailed), ("xpassed", g.xpassed)) if n)
        rows.append((*k, f"{g.passed} passed {g.failed} failed {g.skipped} skipped{extra}",
                     f"worst {g.worst_text()}"))
    if not rows:
        return []
    n = len(rows[0]) - 1
    widths = [max(len(r[i]) for r in rows) for i in range(n)]
    return ["  ".join(r[i].ljust(widths[i]) for i in range(n)) + "  " + r[n] for r in rows]


def within_standard(records: Iterable[Mapping]) -> List[str]:
    """The passed determinism records whose operator is not deterministic on their product by its
    contract (judged within standard, not bit for bit): one line per operator and product, so a
    reader never takes them for bit-identical runs."""
    groups: Dict[Tuple[str, str], int] = {}
    for r in records:
        if r.get("kind") == "determinism" and r["outcome"] == "passed" and \
                str(r.get("reason") or "").startswith("not deterministic on "):
            groups[(r["op"], r["product"])] = groups.get((r["op"], r["product"]), 0) + 1
    return [f"{op} on {prod}: {n} determinism test{'s' if n != 1 else ''} judged within standard, not bit "
            f"for bit (not deterministic on {prod} by its contract)" for (op, prod), n in sorted(groups.items())]
