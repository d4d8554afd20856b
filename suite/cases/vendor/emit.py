"""One vendor case as a single case of the case-file format (docs/cases.md): the YAML mapping the
importer writes, in a fixed key order, with its tier (docs/scale.md) and a name pointing back at
the vendor's file and case. Nothing is drawn here: sizes are counted from the shapes alone."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import yaml

from suite.cases.ids import shape_token
from suite.cases.model import ARRAY_LIMITS
from suite.cases.parse import arrays_of
from suite.cases.vendor.spec import Refused, canonical_specs
from suite.ops.base import Operator


@dataclass
class Call:
    """What a vendor case says, in the operator's own names: each input's dtype (None: NULL) and
    shape, out's dtype (None: the contract's default), the reduction and attributes (a value, a
    list or a range), the value spec of each input given one, the tolerance standard."""

    product: str
    dtypes: Dict[str, Optional[str]]
    shapes: Dict[str, Optional[Tuple[int, ...]]]
    out_dtype: Optional[str] = None
    reduction: Any = None
    attrs: Dict[str, Any] = field(default_factory=dict)
    values: Dict[str, Any] = field(default_factory=dict)
    standard: Optional[str] = None


def tier_of(op: Operator, shapes: Dict[str, Optional[Tuple[int, ...]]], limits=ARRAY_LIMITS,
            huge_from: Optional[int] = None) -> str:
    """`default`, or `huge` for a case with an array past `huge_from` elements (default: the default
    tier's limit); past the huge tier's limit the case is refused (each input and the broadcast
    shape are counted)."""
    try:
        arrays = arrays_of(op, shapes)
    except (ValueError, TypeError):           # shapes that do not broadcast: the contract's to judge
        arrays = [(f"shapes.{n}", s) for n, s in shapes.items() if s is not None]
    name, big = max(((n, s) for n, s in arrays), key=lambda a: math.prod(a[1]), default=("", ()))
    n = math.prod(big) if arrays else 0
    if n > limits["huge"]:
        what = "the broadcast shape " if name == "shapes" else f"{name.split('.', 1)[-1]} "
        raise Refused(f"too large: {what}{shape_token(big)} is {n} elements, past the huge tier's limit of "
                      f"{limits['huge']} per array")
    return "huge" if n > (limits["default"] if huge_from is None else min(huge_from, limits["default"])) else "default"


def _reduction(op: Operator, v: Any) -> Any:
    names = {i: k for k, i in op.reductions.items()}
    if isinstance(v, list):
        return [names.get(x, x) for x in v]
    if isinstance(v, dict):
        return v
    return names.get(v, v)


def _dtypes(op: Operator, call: Call) -> Any:
    """One name where every input passed and out share it, else a mapping (out named only where it
    is given and differs from the primary input's)."""
    live = {n: d for n, d in call.dtypes.items() if d is not None}
    first = live.get(op.primary) or next(iter(live.values()), "float32")
    out = call.out_dtype or first
    if len(set(live.values())) <= 1 and out == first:
        return first
    spec: Dict[str, str] = {"inputs": first}
    spec.update({n: d for n, d in live.items() if d != first})
    if out != first:
        spec["out"] = out
    return spec


def entry(op: Operator, call: Call, name: str, seed: Optional[int] = None,
          huge_from: Optional[int] = None) -> Dict[str, Any]:
    """The case-file mapping of one vendor case (keys in the order a reader expects); `huge_from`:
    the elements per array past which it goes to the huge tier (tier_of)."""
    e: Dict[str, Any] = {"name": name, "product": call.product, "dtypes": _dtypes(op, call)}
    if op.reductions:
        e["reduction"] = _reduction(op, call.reduction)
    for a in op.attributes:
        if a.name in call.attrs:
            e[a.name] = call.attrs[a.name]
    e["shapes"] = [None if call.shapes.get(n) is None else list(call.shapes[n]) for n in op.inputs]
    specs = canonical_specs(call.values)
    if specs:
        e["values"] = specs
    if call.standard:
        e["standard"] = call.standard
    if tier_of(op, call.shapes, huge_from=huge_from) != "default":
        e["tier"] = "huge"
    if seed:
        e["seed"] = seed
    return e


def case_line(e: Dict[str, Any]) -> str:
    """One case as one flow-style YAML line (so the loader's line numbers name it)."""
    return yaml.safe_dump(e, default_flow_style=True, sort_keys=False, width=1 << 30,
                          allow_unicode=True).strip()


def case_file(op: Operator, entries: List[Dict[str, Any]], header: List[str]) -> str:
    """A case file of single cases (header: comment lines, without the '#')."""
    lines = [f"# {h}" for h in header] + [f"op: {op.name}", "cases:"]
    lines += [f"  - {case_line(e)}" for e in entries]
    return "\n".join(lines) + "\n"
