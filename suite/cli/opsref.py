"""The backend author's reference: per operator, what a call carries (C signature, inputs in order,
attributes and their values, reduction codes, the dtypes of every input and output per product,
each output's shape and dtype and when it is written, the out shape) read from the operator
modules themselves, so it cannot disagree with what the suite sends and judges.

`aclnn-conform ops` prints it; docs/operators/reference.md is the same text, committed, and
tests/test_cli_opsref.py holds the two equal (`aclnn-conform ops --write-docs` rewrites it)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from suite import ops
from suite.common import dtypes
from suite.common.files import atomic_write
from suite.contract import PRODUCTS
from suite.ops.base import Operator, Signature

PAGE = Path("docs") / "operators" / "reference.md"


def _shape(s: Optional[Sequence[int]]) -> str:
    return "NULL" if s is None else "[" + ", ".join(str(n) for n in s) + "]"


def _accepted(op: Operator) -> List[Signature]:
    """The page's accepted calls (its phase-1 table), inside the contract, in the table's order."""
    return [e.signature for e in op.examples() if e.status == 0 and not e.outside]


def outputs(op: Operator) -> Tuple[str, ...]:
    """The operator's outputs in C-signature order (one, `out`, unless it declares more)."""
    return tuple(getattr(op, "outputs", ("out",)))


def c_signature(op: Operator) -> str:
    params = [f"{'const aclTensor *' if t == 'tensor' else {'int64': 'int64_t ', 'bool': 'bool ', 'float': 'double '}.get(t, t + ' ')}{n}"
              for n, t, _ in op.c_params]
    params += [f"aclTensor *{o}" for o in outputs(op)]
    params += ["uint64_t *workspaceSize", "aclOpExecutor **executor"]
    return f"aclnnStatus aclnn{op.name}GetWorkspaceSize({', '.join(params)})"


def shape_examples(op: Operator, limit: int = 3) -> List[Tuple[Dict[str, Any], Dict[str, Optional[Tuple[int, ...]]]]]:
    """Worked out-shape examples: input shapes of accepted page calls (those with the most distinct
    input shapes first: broadcasting shows) and the out shape `out_shape` gives under each
    reduction."""
    seen, picked = set(), []
    for sig in sorted(_accepted(op), key=lambda s: -len({tuple(v) for v in s.shapes.values() if v is not None})):
        key = tuple(sorted((k, tuple(v) if v is not None else None) for k, v in sig.shapes.items()))
        if key in seen or any(v is not None and 0 in v for v in sig.shapes.values()):
            continue
        seen.add(key)
        base = {k: v for k, v in sig.attrs.items() if k != "reduction"}
        by = {name: op.out_shape(sig.shapes, {**base, "reduction": code}) for name, code in op.reductions.items()} \
            if op.reductions else {"": op.out_shape(sig.shapes, dict(sig.attrs))}
        picked.append((dict(sig.shapes), by))
        if len(picked) == limit:
            break
    return picked


def _with(op: Operator, sig: Signature, product: str, dts: Mapping[str, str]) -> Signature:
    """`sig` on `product` with the tensors named in `dts` (inputs or outputs) of those dtypes."""
    first = outputs(op)[0]
    ins = {**sig.dtypes, **{n: d for n, d in dts.items() if n in op.inputs}}
    out_dtype = dts.get(first, sig.out_dtype)
    outs = None if sig.outputs is None else {
        n: (shape, dts.get(n, out_dtype if n == first else d)) for n, (shape, d) in sig.outputs.items()}
    return Signature(sig.shapes, ins, sig.out_shape, out_dtype, dict(sig.attrs), product, outs)


def _passes(op: Operator, sig: Signature) -> bool:
    return op.check(sig)[0] == 0 and not op.outside_contract(sig)


def tensor_dtypes(op: Operator, product: str) -> Dict[str, List[str]]:
    """Per tensor (the inputs, then every output), the dtypes it may have on `product`: each dtype
    with which some call the page accepts passes the operator's own check there, inside the
    contract, when that tensor alone changes dtype or every floating tensor of the call takes it
    (the other outputs as the operator allocates them). Promotions and integer operands included."""
    names = [*op.inputs, *outputs(op)]
    found: Dict[str, set] = {n: set() for n in names}
    floats = sorted(op.product_dtypes.get(product, ()))
    for base in _accepted(op):
        if not _passes(op, _with(op, base, product, {})):
            continue
        tensors = [n for n in names if n not in op.inputs or base.shapes.get(n) is not None]
        for n in tensors:
            for d in dtypes.DTYPES:
                if _passes(op, _with(op, base, product, {n: d})):
                    found[n].add(d)
        for d in floats:
            dts = {n: d for n in tensors if n in op.inputs and base.dtypes.get(n) in floats}
            dts[outputs(op)[0]] = d
            for n in outputs(op)[1:]:
                dts[n] = op.output_dtype(n, {**base.dtypes, **dts}, d, base.attrs)
            if _passes(op, _with(op, base, product, dts)):
                for n, dn in dts.items():
                    found[n].add(dn)
    return {n: [d for d in dtypes.DTYPES if d in found[n]] for n in names}


CANDIDATE_SHAPES = ((), (1,), (1, 1), (1, 1, 1), (2,))   # tried for an output beyond out


def _shaped(sig: Signature, name: str, shape: Tuple[int, ...]) -> Signature:
    outs = {**sig.outputs, name: (shape, sig.outputs[name][1])}
    return Signature(sig.shapes, sig.dtypes, sig.out_shape, sig.out_dtype, dict(sig.attrs), sig.product, outs)


def _written(op: Operator, name: str) -> List[str]:
    """The reductions under which a call writes output `name` (all of them; [""] without any)."""
    if not op.reductions:
        return [""]
    return [r for r, code in op.reductions.items() if op.writes(name, {"reduction": code})]


def output_facts(op: Operator) -> List[Dict[str, Any]]:
    """Each output beyond out: the shapes the page's accepted calls pass, the one the suite
    allocates, the dtype it allocates for inputs of each floating dtype, and when it is written."""
    facts = []
    accepted = _accepted(op)
    floats = [d for d in dtypes.DTYPES if any(d in op.product_dtypes.get(p, ()) for p in PRODUCTS)]
    for name in outputs(op)[1:]:
        base = accepted[0]
        passed = {c for s in accepted if s.outputs for c in CANDIDATE_SHAPES
                  if _passes(op, _shaped(s, name, c))}
        shape = op.output_shape(name, base.shapes, base.attrs)
        dt = {d: op.output_dtype(name, {n: (d if v in floats else v) for n, v in base.dtypes.items()}, d, base.attrs)
              for d in floats}
        facts.append({"name": name, "shape": None if shape is None else list(shape),
                      "shapes_passed": [list(t) for t in sorted(passed, key=lambda t: (len(t), t))],
                      "dtype_for_inputs": dt, "written": _written(op, name)})
    return facts


def _other_shapes(op: Operator, shapes: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Per reduction, each output beyond out: the shape the suite allocates, or "-" (not written)."""
    found: Dict[str, Dict[str, Any]] = {}
    for r, code in (op.reductions.items() if op.reductions else [("", None)]):
        attrs = {} if code is None else {"reduction": code}
        for n in outputs(op)[1:]:
            shape = op.output_shape(n, shapes, attrs) if op.writes(n, attrs) else "-"
            found.setdefault(r, {})[n] = shape if shape in ("-", None) else list(shape)
    return found


def describe(op: Operator) -> Dict[str, Any]:
    """One operator's reference as data (what `aclnn-conform ops --json` prints)."""
    return {
        "name": op.name,
        "c_signature": c_signature(op),
        "inputs": [{"name": n, "optional": n in op.optional,
                    "values_read": op.reads is None or n in op.reads} for n in op.inputs],
        "outputs": list(outputs(op)),
        "reduction": dict(op.reductions),
        "attributes": [{"name": a.name, "type": a.kind.__name__, "values_run": list(a.values),
                        "default": a.default} for a in op.attributes],
        "products": [p for p in PRODUCTS if op.serves(p)],
        "dtypes": {p: sorted(op.product_dtypes[p]) for p in PRODUCTS if op.serves(p)},
        "tensor_dtypes": {p: tensor_dtypes(op, p) for p in PRODUCTS if op.serves(p)},
        "other_outputs": output_facts(op),
        "out_shape_examples": [{"inputs": {k: None if v is None else list(v) for k, v in shapes.items()},
                                "out": {r: None if s is None else list(s) for r, s in by.items()},
                                "others": _other_shapes(op, shapes)}
                               for shapes, by in shape_examples(op)],
        "nondeterministic": {p: {k: list(v) for k, v in when.items()} for p, when in op.nondeterministic.items()},
        "page": f"docs/operators/{op.name}.md",
    }


def _cell(d: Mapping[str, Any], product: str, tensor: str) -> str:
    """A tensor's dtypes on a product as the page prints them ("-": an optional tensor none fits)."""
    if product not in d["tensor_dtypes"]:
        return "not served"
    if not d["dtypes"][product]:
        return "none"
    return ", ".join(d["tensor_dtypes"][product][tensor]) or "-"


def markdown(operators: Mapping[str, Operator]) -> str:
    """The reference page: one section per operator, in name order."""
    lines = ["# Operator reference for backend authors", "",
             "Generated from the operator modules (`suite/ops/`) by `aclnn-conform ops --write-docs`;",
             "tests/test_cli_opsref.py fails when it falls behind them. What each call carries, as",
             "`OpCall` hands it to a backend ([backend-contract.md](../backend-contract.md)): `inputs` in",
             "this order (an optional one may be `None`, a NULL tensor), `attrs` by these names, `out_shape`",
             "and `out_dtype`. The facts behind each operator, cited, are on its page.", ""]
    for name in sorted(operators):
        d = describe(operators[name])
        lines += [f"## {name}", "", f"[Contract page]({name}.md)", "", "```c", d["c_signature"], "```", ""]
        lines += ["| input | optional | values read |", "| --- | --- | --- |"]
        lines += [f"| `{i['name']}` | {'yes (None: NULL)' if i['optional'] else 'no'} | "
                  f"{'yes' if i['values_read'] else 'no (shape and dtype only)'} |" for i in d["inputs"]]
        lines.append("")
        attrs = []
        if d["reduction"]:
            codes = ", ".join(f"{v} {k}" for k, v in d["reduction"].items())
            attrs.append(f"| `reduction` | int | {codes} | 1 |")
        attrs += [f"| `{a['name']}` | {a['type']} | cases run {', '.join(repr(v) for v in a['values_run'])} | "
                  f"{a['default']!r} |" for a in d["attributes"]]
        if attrs:
            lines += ["| attribute | type | values | default |", "| --- | --- | --- | --- |", *attrs, ""]
        lines += ["Dtypes each tensor may have, per product (each passes the operator's check in some call the",
                  "page accepts; which combinations pass is the contract page's table; \"none\": every call is",
                  "rejected there; \"not served\": no case runs there, what aclnn returns is not established):", "",
                  "| tensor | " + " | ".join(PRODUCTS) + " |", "| --- |" + " --- |" * len(PRODUCTS)]
        for n in [i["name"] for i in d["inputs"]] + d["outputs"]:
            lines.append(f"| `{n}` | " + " | ".join(_cell(d, p, n) for p in PRODUCTS) + " |")
        for o in d["other_outputs"]:
            written = "every call" if o["written"] == [""] else "under " + ", ".join(o["written"])
            alloc = ", ".join(f"{a} for {i} inputs" for i, a in o["dtype_for_inputs"].items())
            lines += ["", f"`{o['name']}`: written {written}; shape {_shape(o['shape'])} as the suite allocates it "
                          f"(accepted: {', '.join(_shape(t) for t in o['shapes_passed'])}); dtype {alloc}."]
        lines += ["", "Out shape, worked from the page's accepted calls:", ""]
        for ex in d["out_shape_examples"]:
            ins = ", ".join(f"{k} {_shape(v)}" for k, v in ex["inputs"].items())
            outs = "; ".join(f"{_shape(s)}" + "".join(f", {n} " + ("not written" if t == "-" else _shape(t))
                                                      for n, t in ex["others"].get(r, {}).items())
                             + f"{' under ' + r if r else ''}" for r, s in ex["out"].items())
            lines.append(f"- {ins} -> out {outs}")
        if d["nondeterministic"]:
            nd = "; ".join(f"{p}" + (" for " + ", ".join(f"{k} {v}" for k, v in when.items()) if when else "")
                           for p, when in d["nondeterministic"].items())
            lines += ["", f"Not deterministic by its contract on: {nd} (judged twice within standard there)."]
        lines.append("")
    return "\n".join(lines)


def write_docs(root: Path) -> Path:
    """Rewrite docs/operators/reference.md under `root` (atomically)."""
    path = root / PAGE
    atomic_write(path, markdown(ops.OPERATORS).encode())
    return path
