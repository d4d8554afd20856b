"""A case file's single cases (`cases:`): one explicit call each, or one per value where an
attribute (or the reduction) is given as a list or as `{range: [lo, hi], count: n}`; with its own
values, standard, tier and seed (docs/cases.md)."""
from __future__ import annotations

import itertools
from typing import Any, Callable, Dict, List

from suite.common import dtypes, layout
from suite.common.yamlfile import FileError, LineDict, LineList
from suite.ops.base import Operator
from suite.cases import valuespec
from suite.cases.expand import (CASE_KEYS, Expansion, _drawable, _exact_out, _fill_outputs, _given_outputs,
                                _keys, _make_case, _triple)
from suite.cases.model import NUMBERS, TIERS
from suite.cases.parse import (_Ctx, _attr_value, _bool, _choice, _reduction, arrays_of, check_size,
                               parse_dtypes, parse_shape, product, seed, standard)


def spread(ctx: _Ctx, node: Any, key: Any, value: LineDict, integral: bool) -> List[Any]:
    """`{range: [lo, hi], count: n}`: n (>= 2) values evenly spaced from lo to hi, both included
    (lo + (hi - lo) * i / (n - 1) in float64, the last exactly hi); `integral`: each rounded to
    an integer, repeats dropped."""
    if set(value) != {"range", "count"}:
        raise ctx.fail(node, key, "a spread of values is {range: [lo, hi], count: n}")
    r, n = value["range"], value["count"]
    if not isinstance(r, list) or len(r) != 2 or any(
            isinstance(x, bool) or not isinstance(x, (int, float)) for x in r) or not r[0] < r[1]:
        raise ctx.fail(node, key, f"range is [lo, hi], two numbers with lo < hi, not {r!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ctx.fail(node, key, f"count is an integer >= 2, not {n!r}")
    lo, hi = r
    points = [lo + (hi - lo) * i / (n - 1) for i in range(n - 1)] + [hi]
    if integral:
        points = list(dict.fromkeys(round(p) for p in points))
    return points


def listed(ctx: _Ctx, node: LineDict, key: str, one: Callable[[Any, Any, Any], Any], integral: bool,
           numeric: bool) -> List[Any]:
    """A single case's attribute: one value, a list of them, or a spread (a number attribute)."""
    v = node[key]
    if isinstance(v, LineList):
        if not v:
            raise ctx.fail(node, key, "is empty")
        v.name = key
        return [one(v, i, x) for i, x in enumerate(v)]
    if isinstance(v, LineDict) and numeric:
        return [one(node, key, x) for x in spread(ctx, node, key, v, integral)]
    return [one(node, key, v)]


def _attr_lists(ctx: _Ctx, op: Operator, c: LineDict) -> List[Dict[str, Any]]:
    """Every combination of the case's attributes (the cross product of those given as lists)."""
    axes: List[List[tuple]] = []
    if op.reductions:
        axes.append([("reduction", r) for r in listed(
            ctx, c, "reduction", lambda n, k, v: _reduction(ctx, op, n, k, v, single=True), True, True)])
    for a in op.attributes:
        if a.name in c:
            values = listed(ctx, c, a.name, lambda n, k, v, a=a: _attr_value(ctx, a, n, k, v),
                            a.kind is int, a.kind in (int, float))
        else:
            values = [_attr_value(ctx, a, c, a.name, a.default)]
        axes.append([(a.name, v) for v in values])
    return [dict(combo) for combo in itertools.product(*axes)]


def single(ctx: _Ctx, op: Operator, c: LineDict, out: Expansion) -> None:
    allowed = _keys(CASE_KEYS, op)
    for k in c:
        if k not in allowed:
            raise ctx.fail(c, k, f"unknown key (allowed: {', '.join(sorted(allowed))})")
    for k in ("product", "dtypes", "shapes", *(("reduction",) if op.reductions else ())):
        if k not in c:
            raise FileError(ctx.path, c.line, k, "is required")
    prod = product(ctx, c, "product", c["product"])
    if not op.serves(prod):
        raise ctx.fail(c, "product", op.not_served(prod))
    ins, od = parse_dtypes(ctx, op, c, "dtypes", c["dtypes"])
    combos = _attr_lists(ctx, op, c)
    shapes = _triple(ctx, op, c, "shapes", c["shapes"], allow_null=True)
    tier = _choice(ctx, c, "tier", c.get("tier", "default"), TIERS, "tier")
    check_size(ctx, arrays_of(op, shapes), tier, c.line_of("shapes"))
    lay = _choice(ctx, c, "layout", c.get("layout", "contiguous"), layout.LAYOUTS, "layout")
    given_values = valuespec.parse(ctx, op, c, "values", c.get("values", "uniform"))
    spec = given_values if isinstance(given_values, valuespec.ValueSpec) else None
    if spec is not None:
        valuespec.check(ctx, spec, ins)
    vs = spec.token if spec is not None else given_values
    determinism = _bool(ctx, c, "determinism", c.get("determinism", False))
    std, case_seed = standard(ctx, c), seed(ctx, c)
    explicit_out = "out_shape" in c
    for attrs in combos:
        out_shape = parse_shape(ctx, "out_shape", c.line_of("out_shape"), c["out_shape"], allow_null=True) \
            if explicit_out else op.out_shape(shapes, attrs)
        if out_shape is None and not explicit_out:
            out_shape = shapes.get(op.primary) or ()
        if explicit_out and out_shape is not None:
            check_size(ctx, [("out_shape", out_shape)], tier, c.line_of("out_shape"))
        given = _fill_outputs(op, _given_outputs(ctx, op, c), shapes, ins, od, attrs)
        case, sig = _make_case(op, prod, ins, od, attrs=attrs, shapes=shapes, out_shape=out_shape,
                               layout_name=lay, values=vs, determinism=determinism,
                               source=f"{ctx.path}:{c.line}", tier=tier, explicit_out=explicit_out,
                               given_outputs=given, value_spec=spec, standard=std, seed=case_seed)
        reason = op.outside_contract(sig)
        if reason:
            raise FileError(ctx.path, c.line, None, f"this case is outside the documented contract: {reason}")
        if "expect" in c:
            want = c["expect"]
            if isinstance(want, bool) or not isinstance(want, int):
                raise ctx.fail(c, "expect", f"expect is an aclnn status integer, not {want!r}")
            if want != case.expect:
                derived = "success" if case.expect == NUMBERS else f"{case.expect} ({case.why})"
                raise ctx.fail(c, "expect", f"says {want} but the contract gives {derived}")
        if case.expect == NUMBERS and dtypes.is_exact(od):
            raise ctx.fail(c, "dtypes", _exact_out(od))
        if case.expect == NUMBERS and (out_shape is None or any(
                s is None and n not in op.optional for n, s in shapes.items()) or any(
                s is None for s, _ in (case.outputs or {}).values())):
            raise FileError(ctx.path, c.line, "shapes", "NULL tensors are for rejection cases")
        _drawable(ctx, case, c.line_of("shapes"), "shapes")
        out.cases.append(case)
