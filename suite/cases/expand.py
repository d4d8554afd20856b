"""Expanding a case file's matrices and single cases into cases (the product of products, dtypes,
reductions, shapes, layouts and value sets, less the excluded ones)."""
from __future__ import annotations

import dataclasses
import itertools

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from suite.common import dtypes, layout
from suite.cases import hardware
from suite.contract import SOC_ALIASES
from suite.ops.base import Operator, Shape, Signature
from suite.cases.shapegen import Generator
from suite.common.yamlfile import FileError, LineDict, LineList
from suite.cases.ids import _dtype_token, _ids
from suite.cases.parse import _Ctx, _as_list, _attr_value, _bool, _choice, _dtype_name, _products, _reduction, arrays_of, check_size, parse_dtypes, parse_shape, standard
from suite.cases.parse import path_of, seed as parse_seed
from suite.ops.outputs import declared
from suite.cases.inputs import value_problem
from suite.cases import valuespec
from suite.cases.valuespec import ValueSpec
from suite.cases.model import Case, Frozen, NUMBERS, STORED_LIMIT, TIERS, _elements


# -- expansion ---------------------------------------------------------------------------------
# Each operator adds its attributes' names to these (Operator.attributes).
MATRIX_KEYS = {"name", "products", "dtypes", "reductions", "shapes", "layouts",
               "values", "determinism", "exclude", "tier", "timing", "standard", "seed"}
CASE_KEYS = {"name", "product", "dtypes", "reduction", "shapes", "out_shape",
             "layout", "values", "expect", "determinism", "tier", "standard", "seed"}
EXCLUDE_KEYS = {"product", "dtype", "reduction", "shapes", "layout", "values"}


def _exact_out(od: str) -> str:
    """Why an accepted call with an exact out cannot be a case: its result would be compared bit
    for bit, not judged, and no operator of the suite returns one (out of scope)."""
    return (f"out dtype {od} is exact (integer or BOOL): an accepted call's result in it cannot be judged "
            f"(judged dtypes: {', '.join(dtypes.JUDGED)})")


def _keys(base: set, op: Operator) -> set:
    """A file's keys for this operator: its attributes' names added; `reduction(s)` only where the
    operator has a reduction attribute (Operator.reductions); a single case of an operator with
    several outputs may also name `outputs` (a wrong shape or dtype of one beyond the first)."""
    extra = {"outputs"} if base is CASE_KEYS and len(op.outputs) > 1 else set()
    keys = base | extra | {a.name for a in op.attributes}
    return keys if op.reductions else keys - {"reduction", "reductions"}
FILE_KEYS = {"op", "family", "shapes", "matrices", "cases", "limits"}


@dataclass
class Expansion:
    cases: List[Case] = field(default_factory=list)
    dropped: int = 0                 # combinations outside the contract or layouts that don't apply
    made: set = field(default_factory=set)   # ids the matrices made so far: a generated repeat is dropped


def _triple(ctx: _Ctx, op: Operator, node: Any, key: Any, value: Any,
            allow_null: bool = False) -> Dict[str, Optional[Shape]]:
    """One shape per input, in the operator's signature order (a NULL one only where allowed:
    anywhere in a single case, an optional input anywhere)."""
    if isinstance(value, LineDict) and set(value) == {"each"}:       # every input this shape
        return {n: parse_shape(ctx, "shapes.each", value.line_of("each"), value["each"], allow_null or n in op.optional)
                for n in op.inputs}
    if not isinstance(value, list) or len(value) != len(op.inputs):
        raise ctx.fail(node, key, f"a shape combination lists {len(op.inputs)} shapes "
                                  f"({', '.join(op.inputs)}), or is {{each: SHAPE}}, got {value!r}")
    return {n: parse_shape(ctx, f"shapes.{n}", value.line_of(i), s, allow_null or n in op.optional)
            for i, (n, s) in enumerate(zip(op.inputs, value))}


def _make_case(op: Operator, product: str, ins: Dict[str, Optional[str]], out_dtype: str, *,
               attrs: Dict[str, Any], shapes: Dict[str, Optional[Shape]], out_shape: Optional[Shape],
               layout_name: str, values: str, determinism: bool, source: str, tier: str = "default",
               generated: bool = False, explicit_out: bool = False,
               given_outputs: Mapping[str, Tuple[Optional[Shape], Optional[str]]] = {},
               value_spec: Optional[ValueSpec] = None, standard: Optional[str] = None,
               seed: Optional[int] = None) -> Tuple[Optional[Case], Signature]:
    """The case of one combination, and the Signature its status was derived from. Keyword-only
    past the dtypes: a dozen fields, several of the same type, that a position could swap.
    `given_outputs`: what a single case names for outputs beyond the first (the rest declared);
    `value_spec`: the case's own values (`values` is then its token); `seed`: `-seed<N>` ends the
    id and the datakey (the same call under another seed, with data of its own)."""
    # An optional input passed as NULL has no dtype (as in a Signature made of a call).
    ins = {n: (None if shapes.get(n) is None and n in op.optional else d) for n, d in ins.items()}
    outs = declared(op, shapes, ins, out_shape, out_dtype, attrs, given_outputs)
    sig = Signature(shapes, ins, out_shape, out_dtype, attrs, product, outs)
    status, why = op.check(sig)
    case_id, datakey = _ids(op, product, ins, out_dtype, attrs=attrs, shapes=shapes, out_shape=out_shape,
                            explicit_out=explicit_out, layout_name=layout_name, values=values,
                            explicit_outputs=given_outputs)
    if seed is not None:
        case_id, datakey = f"{case_id}-seed{seed}", f"{datakey}-seed{seed}"
    case = Case(case_id, op.name, product, Frozen(ins), out_dtype, Frozen(shapes),
                out_shape, Frozen(attrs), layout_name, values, status, why,
                determinism and status == NUMBERS, source, datakey, tier, generated,
                None if outs is None else Frozen(outs), value_spec=value_spec, standard=standard)
    return case, sig


def _given_outputs(ctx: _Ctx, op: Operator, c: LineDict) -> Dict[str, Tuple[Optional[Shape], Optional[str]]]:
    """A single case's `outputs`: {name: {shape: ..., dtype: ...}} for outputs beyond the first
    (out's are out_shape and the dtypes' `out`), each key optional (the rest as declared); a shape
    may be null (a NULL tensor)."""
    if "outputs" not in c:
        return {}
    node = c["outputs"]
    if not isinstance(node, dict) or not node:
        raise ctx.fail(c, "outputs", f"a mapping of output name to {{shape, dtype}} ({', '.join(op.outputs[1:])})")
    found: Dict[str, Tuple[Optional[Shape], Optional[str]]] = {}
    for name in node:
        if name not in op.outputs[1:]:
            raise ctx.fail(node, name, f"unknown output (allowed: {', '.join(op.outputs[1:])})")
        spec = node[name]
        if not isinstance(spec, dict) or not spec or any(k not in ("shape", "dtype") for k in spec):
            raise ctx.fail(node, name, "a mapping with shape, dtype or both")
        found[name] = (parse_shape(ctx, f"outputs.{name}.shape", spec.line_of("shape"), spec["shape"], True)
                       if "shape" in spec else _MISSING,
                       _dtype_name(ctx, spec, "dtype", spec["dtype"]) if "dtype" in spec else _MISSING)
    return found


_MISSING = object()          # a key of a single case's `outputs` entry left to the declaration


def _fill_outputs(op: Operator, given: Mapping[str, Tuple[Any, Any]], shapes: Mapping[str, Optional[Shape]],
                  ins: Mapping[str, Optional[str]], od: str, attrs: Mapping[str, Any]
                  ) -> Dict[str, Tuple[Optional[Shape], Optional[str]]]:
    """`given` with what it leaves out taken from the operator's declaration."""
    filled = {}
    for name, (shape, dt) in given.items():
        if shape is _MISSING:
            s = op.output_shape(name, shapes, attrs)
            shape = None if s is None else tuple(s)
        filled[name] = (shape, op.output_dtype(name, ins, od, attrs) if dt is _MISSING else dt)
    return filled


def _generated(op: Operator, gen: Generator, hw: Dict[str, hardware.Hardware], product: str,
               ins: Dict[str, str]) -> List[Dict[str, Shape]]:
    names = {**hw[product].names(ins[op.primary]), **op.tiling(hw[product], ins)}
    return gen.expand(names, op.inputs)


def generator_names(op: Operator) -> List[str]:
    """The names a shape generator may use for this operator."""
    return ["cores", "ub", "block", "lanes", "reach", *op.tiling_names]


def _first_layout(layouts: Sequence[str], shapes: Mapping[str, Optional[Shape]]) -> str:
    """The first of `layouts` that applies to these shapes (contiguous always does)."""
    return next(lay for lay in layouts if layout.applies(lay, shapes.values()))


def _matrix(ctx: _Ctx, op: Operator, m: LineDict, shape_sets: Dict[str, Any], out: Expansion,
            hw: Dict[str, hardware.Hardware]) -> None:
    allowed = _keys(MATRIX_KEYS, op)
    for k in m:
        if k not in allowed:
            raise ctx.fail(m, k, f"unknown key (allowed: {', '.join(sorted(allowed))})")
    source = f"{ctx.path}:{m.line}"
    # A product the operator does not serve makes no case (Operator.serves): skipped silently.
    products = [p for p in _products(ctx, m, "products") if op.serves(p)]
    dts = [parse_dtypes(ctx, op, lst, i, v) for lst in [_as_list(ctx, m, "dtypes")] for i, v in enumerate(lst)]
    reds_node = m.get("reductions", "all")
    reds: List[Optional[int]] = [None] if not op.reductions else list(op.reductions.values()) if reds_node == "all" else [
        _reduction(ctx, op, lst, i, v) for lst in [_as_list(ctx, m, "reductions")]
        for i, v in enumerate(lst)]
    # Every combination of the operator's attributes' values (each its matrix list, or all).
    extras = list(itertools.product(*[
        [_attr_value(ctx, a, lst, i, v) for lst in [_as_list(ctx, m, a.name, list(a.values))]
         for i, v in enumerate(lst)] for a in op.attributes]))
    literal: List[Tuple[str, Dict[str, Shape], Optional[int], Any]] = []   # set name, shapes, line, file
    generated: List[Tuple[str, Generator]] = []
    lst = _as_list(ctx, m, "shapes")
    for i, entry in enumerate(lst):
        if isinstance(entry, str):
            if entry not in shape_sets:
                raise ctx.fail(lst, i, f"unknown shape set {entry!r} (defined: {', '.join(shape_sets) or 'none'})")
            if isinstance(shape_sets[entry], Generator):
                generated.append((entry, shape_sets[entry]))
            else:
                literal.extend((entry, s, line, where) for s, line, where in shape_sets[entry])
        else:
            at = ctx.at(path_of(lst))          # (a matrix of a family's file: that file)
            literal.append(("inline", _triple(at, op, lst, i, entry), lst.line_of(i), at.path))
    layouts = [_choice(ctx, lst, i, v, layout.LAYOUTS, "layout")
               for lst in [_as_list(ctx, m, "layouts", ["contiguous"])] for i, v in enumerate(lst)]
    # each a value set's name or the matrix's own values (a ValueSpec, named by its token)
    vsets = [valuespec.parse(ctx, op, lst, i, v) for lst in [_as_list(ctx, m, "values", ["uniform"])]
             for i, v in enumerate(lst)]
    specs = [v for v in vsets if isinstance(v, ValueSpec)]
    std, seed = standard(ctx, m), parse_seed(ctx, m)
    determinism = _bool(ctx, m, "determinism", m.get("determinism", False))
    tier = _choice(ctx, m, "tier", m.get("tier", "default"), TIERS, "tier")
    timed = _bool(ctx, m, "timing", m.get("timing", False))     # in the timing set (pytest --timing)
    for _, shapes, line, where in literal:
        check_size(ctx.at(where), arrays_of(op, shapes), tier, line)
    excludes = m.get("exclude", LineList())
    if not isinstance(excludes, list):
        raise ctx.fail(m, "exclude", "is a list of mappings")
    excludes.name = "exclude"
    exclude_keys = _keys(EXCLUDE_KEYS, op)
    for i, ex in enumerate(excludes):
        if not isinstance(ex, dict) or not ex:
            raise ctx.fail(excludes, i, "each exclusion is a mapping of axis: value")
        for k in ex:
            if k not in exclude_keys:
                raise ctx.fail(ex, k, f"unknown key (allowed: {', '.join(sorted(exclude_keys))})")

    # (a product named by its SoC name excludes its family)
    axes = [{k: SOC_ALIASES.get(v.lower(), v) if k == "product" and isinstance(v, str) else v
             for k, v in ex.items()} for ex in excludes]
    made = out.made
    used: set = set()                          # the exclusions that took out a combination
    for product, (ins, od) in itertools.product(products, dts):
        for spec in specs:
            valuespec.check(ctx, spec, ins)
        # (set name, shapes, generated, the line and field a case of them that cannot be drawn names)
        combos = [(name, s, False, (where, line), "shapes") for name, s, line, where in literal]
        for name, gen in generated:
            for s in _generated(op, gen, hw, product, ins):
                check_size(ctx.at(gen.path), arrays_of(op, s), tier, gen.line, f"shapes.{name}",
                           f" (made for {product}, {_dtype_token(ins, od)})")
                combos.append((name, s, True, (gen.path, gen.line), f"shapes.{name}"))
        for red, extra, (set_name, shapes, gen, (where, line), at), lay, given in itertools.product(
                reds, extras, combos, layouts, vsets):
            vs, spec = (given.token, given) if isinstance(given, ValueSpec) else (given, None)
            attrs: Dict[str, Any] = {**({} if red is None else {"reduction": red}),
                                     **{a.name: v for a, v in zip(op.attributes, extra)}}
            point = {**attrs, "product": product, "dtype": _dtype_token(ins, od), "shapes": set_name,
                     "layout": lay, "values": vs, **({} if red is None else {"reduction": op.reduction_name(red)})}
            excluded = {i for i, ex in enumerate(axes) if all(point.get(k) == v for k, v in ex.items())}
            if excluded:
                used |= excluded
                continue
            case, sig = _make_case(op, product, dict(ins), od, attrs=attrs, shapes=dict(shapes),
                                   out_shape=op.out_shape(shapes, attrs), layout_name=lay, values=vs,
                                   determinism=determinism, source=source, tier=tier, generated=gen,
                                   value_spec=spec, standard=std, seed=seed)
            # A rejection is made once per call, in the first of the matrix's layouts that applies
            # to its shapes and the first value set. Large and generated (scale) shapes make none:
            # the small sets have those, and a rejected call of a large shape would only cost memory.
            if op.outside_contract(sig) or not layout.applies(lay, shapes.values()) or (gen and case.id in made) or (
                    case.expect != NUMBERS and (gen or lay != _first_layout(layouts, shapes) or given != vsets[0]
                                                or _elements(op, shapes) > STORED_LIMIT)):
                out.dropped += 1
                continue
            if case.expect == NUMBERS and dtypes.is_exact(od):
                raise ctx.fail(m, "dtypes", _exact_out(od))
            _drawable(ctx.at(where), case, line, at)
            if timed and case.expect == NUMBERS:
                case = dataclasses.replace(case, timing=True)
            made.add(case.id)
            out.cases.append(case)
    for i, ex in enumerate(excludes):
        if i not in used:   # a misspelt value (an alias such as bf16, a product, a set's name) excludes nothing
            raise ctx.fail(excludes, i, "excludes nothing: no combination of this matrix has "
                           + " and ".join(f"{k} {v!r}" for k, v in ex.items()))


def _drawable(ctx: _Ctx, case: Case, line: int, field: str) -> None:
    """Refuse, at the shapes' line, a case whose inputs its value set cannot draw (inputs.value_problem):
    what loads, `golden generate` and a run can draw."""
    problem = value_problem(case)
    if problem:
        raise FileError(ctx.path, line, field, f"case {case.id}: {problem}")
