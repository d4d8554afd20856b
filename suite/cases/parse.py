"""The field parsers of a case file: shapes, dtypes, products, reductions, attributes, each failing
with the file, line and field of the bad value."""
from __future__ import annotations

import copy
import math

from pathlib import Path
from typing import Any, Collection, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from suite.common import dtypes
from suite.contract import PRODUCTS, SOC_ALIASES
from suite.ops.base import Operator, Shape
from suite.common.yamlfile import FileError, LineDict, LineList
from suite.cases.ids import shape_token
from suite.cases.model import ARRAY_LIMITS, MAX_PARSED_RANK, TIERS


# -- field parsers -----------------------------------------------------------------------------
class _Ctx:
    """Where we are in a file, to name it in errors."""

    def __init__(self, path: Path, standards: Optional[Tuple[str, Collection[str]]] = None) -> None:
        self.path = path
        self.limits = dict(ARRAY_LIMITS)
        # (the tolerance table's file, its standards' names) that a `standard:` is checked against;
        # None: not checked (a caller that judges nothing)
        self.standards = standards

    def fail(self, node: Any, key: Any, message: str) -> FileError:
        """An error at `key` of `node` (a mapping read from the file, or a list the loader has
        named: its item i is "name[i]"), in the file it was read from (a family's, suite/cases/family.py)."""
        field = f"{node.name}[{key}]" if isinstance(node, list) else str(key)
        return FileError(path_of(node, key) or self.path, node.line_of(key), field, message)

    def at(self, path: Optional[Path]) -> "_Ctx":
        """The same context naming another file (a family's) in its errors; itself for None."""
        if path is None or path == self.path:
            return self
        other = copy.copy(self)
        other.path = path
        return other


def path_of(node: Any, key: Any = None) -> Optional[Path]:
    """The file `node` (or its `key`, in a matrix a case file took from its family) was read from,
    where not the case file's own; None for the case file's."""
    paths = getattr(node, "paths", None)
    if paths and key in paths:
        return paths[key]
    return getattr(node, "path", None)


def parse_shape(ctx: _Ctx, field: str, line: int, value: Any, allow_null: bool) -> Optional[Shape]:
    def fail(msg: str) -> FileError:
        return FileError(ctx.path, line, field, msg)
    if value is None:
        if allow_null:
            return None
        raise fail("a shape may be null (a NULL tensor) only in single cases")
    if isinstance(value, bool):
        raise fail(f"malformed shape {value!r}")
    if isinstance(value, int):
        dims: Sequence[Any] = [value]
    elif isinstance(value, str):
        text = value.strip()
        if text in ("scalar", "()", ""):
            dims = []
        else:
            try:
                dims = [int(p) for p in text.split("x")]
            except ValueError:
                raise fail(f"malformed shape {value!r} (write e.g. 2x3, 5, scalar)") from None
    elif isinstance(value, list):
        dims = value
    else:
        raise fail(f"malformed shape {value!r}")
    if any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in dims):
        raise fail(f"malformed shape {value!r}: dimensions are non-negative integers")
    if len(dims) > MAX_PARSED_RANK:
        raise fail(f"shape {value!r} has more than {MAX_PARSED_RANK} dimensions")
    return tuple(dims)


def arrays_of(op: Operator, shapes: Mapping[str, Optional[Shape]]) -> List[Tuple[str, Shape]]:
    """The arrays a shape combination makes, by the field that names them: each input given
    (shapes.self) and, when only optional inputs are NULL, the broadcast shape (shapes), if any.
    (An out of the contract's shape is never larger than the broadcast shape.)"""
    live = {n: s for n, s in shapes.items() if s is not None}
    arrays = [(f"shapes.{n}", s) for n, s in live.items()]
    b = op.b_shape(live) if live and all(n in live or n in op.optional for n in shapes) else None
    return arrays + ([("shapes", b)] if b is not None else [])


def check_size(ctx: _Ctx, arrays: Sequence[Tuple[str, Shape]], tier: str, line: int,
               field: Optional[str] = None, where: str = "") -> None:
    """Refuse an array past the tier's limit (ARRAY_LIMITS), naming it: an input (shapes.self), the
    broadcast shape (shapes) or out (out_shape); `field` names them all instead (a generated set)."""
    limit = ctx.limits[tier]
    for name, s in arrays:
        n = math.prod(s)
        if n > limit:
            what = "the broadcast shape " if name == "shapes" else ""
            raise FileError(ctx.path, line, field or name,
                            f"{what}{shape_token(s)}{where} is {n} elements, past the {tier} tier's limit "
                            f"of {limit} per array (`tier: huge` on a matrix, or a top-level `limits:`, "
                            f"raises it)")


def _limits(ctx: _Ctx, doc: LineDict) -> None:
    """A file's own per-tier limits: `limits: {default: N, huge: N}`, elements per array."""
    node = doc.get("limits", {})
    if not isinstance(node, dict):
        raise ctx.fail(doc, "limits", f"a mapping of tier ({', '.join(TIERS)}) to elements per array")
    for tier, n in node.items():
        if tier not in TIERS:
            raise FileError(ctx.path, node.line_of(tier), f"limits.{tier}", f"unknown tier (known: {', '.join(TIERS)})")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise FileError(ctx.path, node.line_of(tier), f"limits.{tier}", f"a positive number of elements, not {n!r}")
        ctx.limits[tier] = n


def _dtype_name(ctx: _Ctx, node: Any, key: Any, value: Any) -> str:
    try:
        return dtypes.canonical(str(value))
    except KeyError:
        raise ctx.fail(node, key, f"unknown dtype {value!r} (known: {', '.join(dtypes.DTYPES)})") from None


def parse_dtypes(ctx: _Ctx, op: Operator, node: Any, key: Any, value: Any) -> Tuple[Dict[str, str], str]:
    """A dtype spec: one name for every tensor, or a mapping of input names, `inputs` and `out`."""
    if isinstance(value, (str,)):
        name = _dtype_name(ctx, node, key, value)
        return {n: name for n in op.inputs}, name
    if not isinstance(value, dict):
        raise ctx.fail(node, key, f"a dtype is a name or a mapping, not {value!r}")
    allowed = {*op.inputs, "inputs", "out"}
    for k in value:
        if k not in allowed:
            raise ctx.fail(value, k, f"unknown key (allowed: {', '.join(sorted(allowed))})")
    base = value.get("inputs", value.get(op.primary))
    if base is None:
        raise ctx.fail(node, key, f"give 'inputs' or '{op.primary}'")
    base = _dtype_name(ctx, value, "inputs" if "inputs" in value else op.primary, base)
    ins = {n: _dtype_name(ctx, value, n, value[n]) if n in value else base for n in op.inputs}
    out = _dtype_name(ctx, value, "out", value["out"]) if "out" in value else ins[op.primary]
    return ins, out


def _as_list(ctx: _Ctx, node: LineDict, key: str, default: Any = None) -> list:
    v = node.get(key, default)
    if v is None:
        raise ctx.fail(node, key, "is required")
    if not isinstance(v, LineList):            # a scalar, or a default given in code
        v = LineList(v if isinstance(v, list) else [v])
        line = node.line_of(key)
        v.line, v.lines = line, [line] * len(v)
        if path_of(node, key) is not None:
            v.path = path_of(node, key)
    if not v:
        raise ctx.fail(node, key, "is empty")
    v.name = key
    return v


def product(ctx: _Ctx, node: Any, key: Any, p: Any) -> str:
    """A product family, given by its name or by a vendor SoC name (SOC_ALIASES, any case)."""
    family = SOC_ALIASES.get(p.lower(), p) if isinstance(p, str) else p
    if family not in PRODUCTS:
        via = f", the SoC name of {family}, a family this suite does not have" if family != p else ""
        raise ctx.fail(node, key, f"unknown product {p!r}{via} (known: {', '.join(PRODUCTS)})")
    return family


def _products(ctx: _Ctx, node: LineDict, key: str) -> List[str]:
    v = node.get(key, "all")
    if v == "all":
        return list(PRODUCTS)
    items = _as_list(ctx, node, key)
    return [product(ctx, items, i, p) for i, p in enumerate(items)]


def standard(ctx: _Ctx, node: LineDict) -> Optional[str]:
    """A case's or matrix's `standard:` (None when absent): a name of the tolerance table in use,
    where the loader was given one."""
    if "standard" not in node:
        return None
    name = node["standard"]
    if not isinstance(name, str) or not name:
        raise ctx.fail(node, "standard", f"a tolerance standard's name, not {name!r}")
    if ctx.standards is not None and name not in ctx.standards[1]:
        table, names = ctx.standards
        raise ctx.fail(node, "standard", f"unknown standard {name!r} (known in {table}: {', '.join(names)})")
    return name


def seed(ctx: _Ctx, node: LineDict) -> Optional[int]:
    """`seed: N` (an integer >= 0): the same case with data of its own (None when absent)."""
    if "seed" not in node:
        return None
    n = node["seed"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ctx.fail(node, "seed", f"a seed is an integer >= 0, not {n!r}")
    return n


def _reduction(ctx: _Ctx, op: Operator, node: Any, key: Any, v: Any, single: bool = False) -> int:
    if isinstance(v, str) and v in op.reductions:
        return op.reductions[v]
    if single and isinstance(v, int) and not isinstance(v, bool):
        return v                      # raw values, for rejection cases (e.g. MSE's 3 and -1)
    raise ctx.fail(node, key, f"unknown reduction {v!r} (known: {', '.join(op.reductions)}"
                   + ("; single cases may give an integer)" if not single else ")"))


def _choice(ctx: _Ctx, node: Any, key: Any, v: Any, known: Iterable[str], what: str) -> str:
    known = list(known)
    if v not in known:
        raise ctx.fail(node, key, f"unknown {what} {v!r} (known: {', '.join(known)})")
    return v


def _bool(ctx: _Ctx, node: Any, key: Any, v: Any) -> bool:
    if not isinstance(v, bool):
        raise ctx.fail(node, key, f"expected true or false, not {v!r}")
    return v


def _attr_value(ctx: _Ctx, attr: Any, node: Any, key: Any, v: Any) -> Any:
    """A value of an operator's attribute, of its declared type."""
    if attr.kind is bool:
        return _bool(ctx, node, key, v)
    if attr.kind is int and isinstance(v, int) and not isinstance(v, bool):
        return v
    if attr.kind is float and isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise ctx.fail(node, key, f"expected {attr.kind.__name__}, not {v!r}")
