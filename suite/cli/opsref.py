"""The backend author's reference: per operator, what a call carries (C signature, inputs in order,
attributes and their values, reduction codes, dtypes per product, the out shape) read from the
operator modules themselves, so it cannot disagree with what the suite sends and judges.

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


def operand_dtypes(op: Operator, product: str) -> Dict[str, List[str]]:
    """Per tensor (inputs and out), the dtypes its check accepts on `product` when every other
    tensor of a page's accepted float32 call keeps float32: the promotions and integer operands a
    backend must take, probed through the operator's own check."""
    base = next((s for s in _accepted(op) if all(d in (None, "float32") for d in s.dtypes.values())
                 and s.out_dtype == "float32"), None)
    if base is None:
        return {}
    out: Dict[str, List[str]] = {}
    for n in [*op.inputs, "out"]:
        if n != "out" and base.shapes.get(n) is None:
            continue
        ok = []
        for d in dtypes.DTYPES:
            dts = dict(base.dtypes) if n == "out" else {**base.dtypes, n: d}
            sig = Signature(base.shapes, dts, base.out_shape, d if n == "out" else base.out_dtype,
                            dict(base.attrs), product)
            if op.check(sig)[0] == 0:
                ok.append(d)
        out[n] = ok
    return out


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
        "dtypes": {p: sorted(op.product_dtypes[p]) for p in PRODUCTS},
        "accepted_per_tensor": {p: operand_dtypes(op, p) for p in PRODUCTS},
        "out_shape_examples": [{"inputs": {k: None if v is None else list(v) for k, v in shapes.items()},
                                "out": {r: None if s is None else list(s) for r, s in by.items()}}
                               for shapes, by in shape_examples(op)],
        "nondeterministic": {p: {k: list(v) for k, v in when.items()} for p, when in op.nondeterministic.items()},
        "page": f"docs/operators/{op.name}.md",
    }


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
        lines += ["| product | every tensor one of | accepted per tensor, the others float32 |", "| --- | --- | --- |"]
        for p in PRODUCTS:
            per = d["accepted_per_tensor"][p]
            extra = "; ".join(f"`{n}` {', '.join(ds)}" for n, ds in per.items())
            lines.append(f"| {p} | {', '.join(d['dtypes'][p])} | {extra} |")
        lines += ["", "Out shape, worked from the page's accepted calls:", ""]
        for ex in d["out_shape_examples"]:
            ins = ", ".join(f"{k} {_shape(v)}" for k, v in ex["inputs"].items())
            outs = "; ".join(f"{_shape(s)}{' under ' + r if r else ''}" for r, s in ex["out"].items())
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
