"""Case files: declarative matrices of operator calls, expanded into cases with stable ids.

A case's expected outcome (numbers, or a status) is derived from the operator's contract; an
explicit `expect:` is allowed on single cases and must agree with that derivation.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import math

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from suite import dtypes, hardware, layout, ops
from suite.contract import PRODUCTS
from suite.ops.base import Operator, Shape, Signature
from suite.shapegen import Generator
from suite.yamlfile import FileError, LineDict, LineList, load

MAX_PARSED_RANK = 16
TOLERANCE_FILE = "tolerances.yaml"
NOT_CASE_FILES = (TOLERANCE_FILE, hardware.HARDWARE_FILE)
NUMBERS = 0                      # expect value meaning "the call succeeds with numbers"


class Kind(str, enum.Enum):
    """The three kinds of test a case runs under, one test module each. A str, so that it is
    also the plain word in records and node ids."""

    NUMBERS = "numbers"              # the result against its golden
    REJECTION = "rejection"          # the documented status
    DETERMINISM = "determinism"      # two runs, bit-identical

    def __str__(self) -> str:
        return self.value


def kinds_of(case: "Case") -> List[Kind]:
    """The kinds of test that run this case."""
    kinds = [Kind.NUMBERS if case.expect == NUMBERS else Kind.REJECTION]
    if case.determinism and case.expect == NUMBERS:
        kinds.append(Kind.DETERMINISM)
    return kinds


TIERS = ("default", "huge")      # huge: sizes only a device machine's host can hold (--scale=huge)
STORED_LIMIT = 1 << 15           # elements (inputs + broadcast shape) up to which data is committed
# The most elements one array of a case may have (each input, the broadcast shape, out), per tier:
# a typo such as 100000x100000 is refused when the file is read, before anything is drawn. The
# default tier's 2^28 is 1 GiB of float32 (2 GiB as a float64 golden), 64x the largest scale set
# (~2^22); the huge tier's 2^33 is 32 GiB of float32, 4x its largest case (2^31 + 2^16 elements of
# broadcast shape; inputs of 2^31 + 1). A case file may set its own: `limits: {huge: 17179869184}`.
# (The small scale is no tier: it is the default tier's cases up to STORED_LIMIT, whose data is
# committed; a larger case is simply not committed.)
ARRAY_LIMITS = {"default": 1 << 28, "huge": 1 << 33}


class Frozen(Mapping):
    """A read-only mapping that keeps its order (inputs in signature order) and can be hashed,
    so that a frozen Case can hold it."""

    __slots__ = ("_d", "_hash")

    def __init__(self, items: Any = ()) -> None:
        self._d = dict(items)
        self._hash = hash(tuple(self._d.items()))

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Mapping) and list(self.items()) == list(other.items())

    def __repr__(self) -> str:
        return f"Frozen({self._d!r})"


@dataclass(frozen=True)
class Case:
    id: str
    op: str
    product: str
    dtypes: Frozen                                    # input name -> dtype name (None: NULL)
    out_dtype: Optional[str]
    shapes: Frozen                                    # input name -> shape (None: NULL)
    out_shape: Optional[Shape]
    attrs: Frozen                                     # attribute name -> value
    layout: str
    values: str
    expect: int                                       # 0: numbers; else the aclnn status
    why: str                                          # the contract's reason for a rejection
    determinism: bool
    source: str                                       # "file:line" of the matrix or case
    datakey: str                                      # what the inputs and golden depend on
    tier: str = "default"                             # "huge": run only with --scale=huge
    generated: bool = False                           # made by a shape generator (a scale set)

    def __post_init__(self) -> None:
        for name in ("dtypes", "shapes", "attrs"):
            value = getattr(self, name)
            if not isinstance(value, Frozen):
                object.__setattr__(self, name, Frozen(value))

    @property
    def signature(self) -> Signature:
        return Signature(dict(self.shapes), dict(self.dtypes), self.out_shape, self.out_dtype,
                         dict(self.attrs), self.product)

    @functools.cached_property
    def seed(self) -> int:
        return int.from_bytes(hashlib.sha256(self.datakey.encode()).digest()[:8], "little")

    @property
    def reduction(self) -> int:
        return dict(self.attrs)["reduction"]

    @functools.cached_property
    def elements(self) -> int:
        """What the case's data costs: the elements of its inputs and of its broadcast shape."""
        return _elements(ops.get(self.op), dict(self.shapes))

    @property
    def dtype_token(self) -> str:
        return _dtype_token(dict(self.dtypes), self.out_dtype)


def _elements(op: Operator, shapes: Mapping[str, Optional[Shape]]) -> int:
    live = {n: s for n, s in shapes.items() if s is not None}
    b = op.b_shape(live) if all(n in live or n in op.optional for n in shapes) else None
    total = sum(math.prod(s) for s in live.values())
    return total + (math.prod(b) if b is not None else 0)


# -- tokens ------------------------------------------------------------------------------------
def shape_token(shape: Optional[Shape]) -> str:
    if shape is None:
        return "null"
    return "x".join(str(n) for n in shape) if shape else "scalar"


def _dtype_token(dts: Mapping[str, Optional[str]], out: Optional[str]) -> str:
    dts = {k: v for k, v in dts.items() if v is not None}        # an optional input passed NULL
    ins = list(dts.values())
    if len(set(ins)) == 1:
        head = ins[0]
    else:
        head = ".".join(f"{k[0]}{v}" for k, v in dts.items())     # g.. s.. t..
    return head if out == ins[0] and len(set(ins)) == 1 else f"{head}-to-{out}"


def _ids(op: Operator, product: str, dts, out_dtype, attrs, shapes, out_shape, explicit_out: bool,
         layout_name: str, values: str) -> Tuple[str, str]:
    parts = [_dtype_token(dts, out_dtype), op.reduction_name(attrs["reduction"])]
    parts += [a.token(attrs[a.name]) for a in op.attributes if a.name in attrs]
    parts.append(".".join(shape_token(s) for s in shapes.values()))
    if explicit_out:
        parts.append("out" + shape_token(out_shape))
    datakey = "-".join([op.name, *parts, values])
    case_id = "-".join([op.name, parts[0], product, *parts[1:], layout_name, values])
    return case_id, datakey


# -- field parsers -----------------------------------------------------------------------------
class _Ctx:
    """Where we are in a file, to name it in errors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.limits = dict(ARRAY_LIMITS)

    def fail(self, node: Any, key: Any, message: str) -> FileError:
        """An error at `key` of `node` (a mapping read from the file, or a list the loader has
        named: its item i is "name[i]")."""
        field = f"{node.name}[{key}]" if isinstance(node, list) else str(key)
        return FileError(self.path, node.line_of(key), field, message)


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
    if not v:
        raise ctx.fail(node, key, "is empty")
    v.name = key
    return v


def _products(ctx: _Ctx, node: LineDict, key: str) -> List[str]:
    v = node.get(key, "all")
    if v == "all":
        return list(PRODUCTS)
    items = _as_list(ctx, node, key)
    for i, p in enumerate(items):
        if p not in PRODUCTS:
            raise ctx.fail(items, i, f"unknown product {p!r} (known: {', '.join(PRODUCTS)})")
    return list(items)


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


# -- expansion ---------------------------------------------------------------------------------
# Each operator adds its attributes' names to these (Operator.attributes).
MATRIX_KEYS = {"name", "products", "dtypes", "reductions", "shapes", "layouts",
               "values", "determinism", "exclude", "tier"}
CASE_KEYS = {"name", "product", "dtypes", "reduction", "shapes", "out_shape",
             "layout", "values", "expect", "determinism"}
EXCLUDE_KEYS = {"product", "dtype", "reduction", "shapes", "layout", "values"}


def _keys(base: set, op: Operator) -> set:
    return base | {a.name for a in op.attributes}
FILE_KEYS = {"op", "shapes", "matrices", "cases", "limits"}


@dataclass
class Expansion:
    cases: List[Case] = field(default_factory=list)
    dropped: int = 0                 # combinations outside the contract or layouts that don't apply
    made: set = field(default_factory=set)   # ids the matrices made so far: a generated repeat is dropped


def _triple(ctx: _Ctx, op: Operator, node: Any, key: Any, value: Any,
            allow_null: bool = False) -> Dict[str, Optional[Shape]]:
    """One shape per input, in the operator's signature order (a NULL one only where allowed:
    anywhere in a single case, an optional input anywhere)."""
    if not isinstance(value, list) or len(value) != len(op.inputs):
        raise ctx.fail(node, key, f"a shape combination lists {len(op.inputs)} shapes "
                                  f"({', '.join(op.inputs)}), got {value!r}")
    return {n: parse_shape(ctx, f"shapes.{n}", value.line_of(i), s, allow_null or n in op.optional)
            for i, (n, s) in enumerate(zip(op.inputs, value))}


def _make_case(op: Operator, product: str, ins: Dict[str, Optional[str]], out_dtype: str,
               attrs: Dict[str, Any], shapes: Dict[str, Optional[Shape]], out_shape: Optional[Shape],
               layout_name: str, values: str, determinism: bool, source: str, tier: str = "default",
               generated: bool = False, explicit_out: bool = False) -> Tuple[Optional[Case], Signature]:
    # An optional input passed as NULL has no dtype (as in a Signature made of a call).
    ins = {n: (None if shapes.get(n) is None and n in op.optional else d) for n, d in ins.items()}
    sig = Signature(shapes, ins, out_shape, out_dtype, attrs, product)
    status, why = op.check(sig)
    case_id, datakey = _ids(op, product, ins, out_dtype, attrs, shapes, out_shape, explicit_out,
                            layout_name, values)
    case = Case(case_id, op.name, product, Frozen(ins), out_dtype, Frozen(shapes),
                out_shape, Frozen(attrs), layout_name, values, status, why,
                determinism and status == NUMBERS, source, datakey, tier, generated)
    return case, sig


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
    products = _products(ctx, m, "products")
    dts = [parse_dtypes(ctx, op, lst, i, v) for lst in [_as_list(ctx, m, "dtypes")] for i, v in enumerate(lst)]
    reds_node = m.get("reductions", "all")
    reds = list(op.reductions.values()) if reds_node == "all" else [
        _reduction(ctx, op, lst, i, v) for lst in [_as_list(ctx, m, "reductions")]
        for i, v in enumerate(lst)]
    # Every combination of the operator's attributes' values (each its matrix list, or all).
    extras = list(itertools.product(*[
        [_attr_value(ctx, a, lst, i, v) for lst in [_as_list(ctx, m, a.name, list(a.values))]
         for i, v in enumerate(lst)] for a in op.attributes]))
    literal: List[Tuple[str, Dict[str, Shape], Optional[int]]] = []   # set name, shapes, line
    generated: List[Tuple[str, Generator]] = []
    lst = _as_list(ctx, m, "shapes")
    for i, entry in enumerate(lst):
        if isinstance(entry, str):
            if entry not in shape_sets:
                raise ctx.fail(lst, i, f"unknown shape set {entry!r} (defined: {', '.join(shape_sets) or 'none'})")
            if isinstance(shape_sets[entry], Generator):
                generated.append((entry, shape_sets[entry]))
            else:
                literal.extend((entry, s, line) for s, line in shape_sets[entry])
        else:
            literal.append(("inline", _triple(ctx, op, lst, i, entry), lst.line_of(i)))
    layouts = [_choice(ctx, lst, i, v, layout.LAYOUTS, "layout")
               for lst in [_as_list(ctx, m, "layouts", ["contiguous"])] for i, v in enumerate(lst)]
    vsets = [_choice(ctx, lst, i, v, op.value_sets, "value set")
             for lst in [_as_list(ctx, m, "values", ["uniform"])] for i, v in enumerate(lst)]
    determinism = _bool(ctx, m, "determinism", m.get("determinism", False))
    tier = _choice(ctx, m, "tier", m.get("tier", "default"), TIERS, "tier")
    for _, shapes, line in literal:
        check_size(ctx, arrays_of(op, shapes), tier, line)
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

    made = out.made
    used: set = set()                          # the exclusions that took out a combination
    for product, (ins, od) in itertools.product(products, dts):
        combos = [(name, s, False) for name, s, _ in literal]
        for name, gen in generated:
            for s in _generated(op, gen, hw, product, ins):
                check_size(ctx, arrays_of(op, s), tier, gen.line, f"shapes.{name}",
                           f" (made for {product}, {_dtype_token(ins, od)})")
                combos.append((name, s, True))
        for red, extra, (set_name, shapes, gen), lay, vs in itertools.product(reds, extras, combos, layouts, vsets):
            attrs: Dict[str, Any] = {"reduction": red, **{a.name: v for a, v in zip(op.attributes, extra)}}
            point = {**attrs, "product": product, "dtype": _dtype_token(ins, od),
                     "reduction": op.reduction_name(red), "shapes": set_name, "layout": lay, "values": vs}
            excluded = {i for i, ex in enumerate(excludes) if all(point.get(k) == v for k, v in ex.items())}
            if excluded:
                used |= excluded
                continue
            case, sig = _make_case(op, product, dict(ins), od, attrs, dict(shapes), op.out_shape(shapes),
                                   lay, vs, determinism, source, tier, gen)
            # A rejection is made once per call, in the first of the matrix's layouts that applies
            # to its shapes and the first value set. Large and generated (scale) shapes make none:
            # the small sets have those, and a rejected call of a large shape would only cost memory.
            if op.outside_contract(sig) or not layout.applies(lay, shapes.values()) or (gen and case.id in made) or (
                    case.expect != NUMBERS and (gen or lay != _first_layout(layouts, shapes) or vs != vsets[0]
                                                or _elements(op, shapes) > STORED_LIMIT)):
                out.dropped += 1
                continue
            made.add(case.id)
            out.cases.append(case)
    for i, ex in enumerate(excludes):
        if i not in used:   # a misspelt value (an alias such as bf16, a product, a set's name) excludes nothing
            raise ctx.fail(excludes, i, "excludes nothing: no combination of this matrix has "
                           + " and ".join(f"{k} {v!r}" for k, v in ex.items()))


def _single(ctx: _Ctx, op: Operator, c: LineDict, out: Expansion) -> None:
    allowed = _keys(CASE_KEYS, op)
    for k in c:
        if k not in allowed:
            raise ctx.fail(c, k, f"unknown key (allowed: {', '.join(sorted(allowed))})")
    for k in ("product", "dtypes", "shapes", "reduction"):
        if k not in c:
            raise FileError(ctx.path, c.line, k, "is required")
    product = c["product"]
    if product not in PRODUCTS:
        raise ctx.fail(c, "product", f"unknown product {product!r} (known: {', '.join(PRODUCTS)})")
    ins, od = parse_dtypes(ctx, op, c, "dtypes", c["dtypes"])
    attrs: Dict[str, Any] = {"reduction": _reduction(ctx, op, c, "reduction", c["reduction"], single=True)}
    for a in op.attributes:
        attrs[a.name] = _attr_value(ctx, a, c, a.name, c.get(a.name, a.default))
    shapes = _triple(ctx, op, c, "shapes", c["shapes"], allow_null=True)
    explicit_out = "out_shape" in c
    out_shape = parse_shape(ctx, "out_shape", c.line_of("out_shape"), c["out_shape"], allow_null=True) if explicit_out \
        else op.out_shape(shapes)
    if out_shape is None and not explicit_out:
        out_shape = shapes.get(op.primary) or ()
    check_size(ctx, arrays_of(op, shapes), "default", c.line_of("shapes"))
    if explicit_out and out_shape is not None:
        check_size(ctx, [("out_shape", out_shape)], "default", c.line_of("out_shape"))
    lay = _choice(ctx, c, "layout", c.get("layout", "contiguous"), layout.LAYOUTS, "layout")
    vs = _choice(ctx, c, "values", c.get("values", "uniform"), op.value_sets, "value set")
    determinism = _bool(ctx, c, "determinism", c.get("determinism", False))
    case, sig = _make_case(op, product, ins, od, attrs, shapes, out_shape, lay, vs, determinism,
                           f"{ctx.path}:{c.line}", explicit_out=explicit_out)
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
    if case.expect == NUMBERS and (out_shape is None or any(
            s is None and n not in op.optional for n, s in shapes.items())):
        raise FileError(ctx.path, c.line, "shapes", "NULL tensors are for rejection cases")
    out.cases.append(case)


def load_file(path: Path, hw: Optional[Dict[str, hardware.Hardware]] = None) -> Expansion:
    path = Path(path)
    doc = load(path)
    ctx = _Ctx(path)
    if not isinstance(doc, LineDict):
        raise FileError(path, 1, None, "a case file is a mapping with keys op, shapes, matrices, cases")
    for k in doc:
        if k not in FILE_KEYS:
            raise ctx.fail(doc, k, f"unknown key (allowed: {', '.join(sorted(FILE_KEYS))})")
    if "op" not in doc:
        raise FileError(path, doc.line, "op", "is required")
    try:
        op = ops.get(doc["op"])
    except (KeyError, TypeError):
        raise ctx.fail(doc, "op", f"unknown operator {doc['op']!r} (known: {', '.join(ops.OPERATORS)})") from None
    _limits(ctx, doc)
    shape_sets: Dict[str, Any] = {}       # name -> a Generator, or [(shapes, line)]
    sets = doc.get("shapes")
    sets = {} if sets is None else sets
    if not isinstance(sets, dict):
        raise ctx.fail(doc, "shapes", "is a mapping of set name to a list of shape combinations")
    for name, combos in sets.items():
        if isinstance(combos, LineDict) and set(combos) == {"generate"}:
            shape_sets[name] = Generator(path, name, combos, op.inputs, generator_names(op))
            continue
        if not isinstance(combos, list) or not combos:
            raise ctx.fail(sets, name, "a shape set is a non-empty list of shape combinations, "
                                       "or a mapping with one key, generate")
        combos.name = f"shapes.{name}"
        shape_sets[name] = [(_triple(ctx, op, combos, i, v), combos.line_of(i))
                            for i, v in enumerate(combos)]
    if hw is None and any(isinstance(v, Generator) for v in shape_sets.values()):
        # The hardware file next to the case file, else the data folder's.
        beside = path.parent / hardware.HARDWARE_FILE
        hw = hardware.load_hardware(beside if beside.exists() else None)
    out = Expansion()
    for key, handler in (("matrices", _matrix), ("cases", _single)):
        items = doc.get(key)
        if items is None:                  # absent, or given empty
            continue
        if not isinstance(items, list):
            raise ctx.fail(doc, key, "is a list")
        items.name = key
        for i, item in enumerate(items):
            if not isinstance(item, LineDict):
                raise ctx.fail(items, i, f"each entry of {key} is a mapping")
            if handler is _matrix:
                _matrix(ctx, op, item, shape_sets, out, hw)
            else:
                _single(ctx, op, item, out)
    return out


def case_files(path: Path) -> List[Path]:
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.glob("*.yaml") if p.name not in NOT_CASE_FILES)
    if path.exists():
        return [path]
    raise FileError(path, None, None, "no such case file or folder")


def load_cases(paths: Iterable[Path]) -> Tuple[List[Case], int]:
    """Every case of every file, checked for duplicate ids across files; and the dropped count."""
    cases: List[Case] = []
    dropped = 0
    seen: Dict[str, Case] = {}
    for p in paths:
        for f in case_files(p):
            exp = load_file(f)
            dropped += exp.dropped
            for c in exp.cases:
                first = seen.get(c.id)
                if first is not None:
                    file, _, line = c.source.rpartition(":")
                    raise FileError(file, int(line), "id",
                                    f"duplicate case id {c.id} (also made by {first.source}); "
                                    f"use 'exclude' or distinct shape sets")
                seen[c.id] = c
                cases.append(c)
    return cases, dropped
