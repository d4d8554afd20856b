"""A case's id and datakey, built from its fields by one rule (stable: goldens and results are keyed
by them)."""
from __future__ import annotations

import functools
from typing import Dict, Iterable, Mapping, Optional, Tuple

from suite.ops.base import Operator, Shape


# -- tokens ------------------------------------------------------------------------------------
def shape_token(shape: Optional[Shape]) -> str:
    if shape is None:
        return "null"
    return "x".join(str(n) for n in shape) if shape else "scalar"


def input_tokens(names: Iterable[str]) -> Dict[str, str]:
    """How a dtype token names each input: its first letter (g, s, t: the ids every case and golden
    is keyed by), or, for inputs whose first letters clash (two inputs starting with t), the
    shortest prefix no other input shares (ta, to)."""
    return dict(_tokens(tuple(names)))


@functools.lru_cache(maxsize=None)             # (one operator's inputs; asked for every case)
def _tokens(names: Tuple[str, ...]) -> Tuple[Tuple[str, str], ...]:
    out = {}
    for n in names:
        if sum(1 for m in names if m[:1] == n[:1]) == 1:
            out[n] = n[:1]
            continue
        k = 1
        while k < len(n) and any(m != n and m.startswith(n[:k]) for m in names):
            k += 1
        out[n] = n[:k]
    return tuple(out.items())


def _dtype_token(dts: Mapping[str, Optional[str]], out: Optional[str]) -> str:
    tokens = input_tokens(dts)
    dts = {k: v for k, v in dts.items() if v is not None}        # an optional input passed NULL
    ins = list(dts.values())
    if len(set(ins)) == 1:
        head = ins[0]
    else:
        head = ".".join(f"{tokens[k]}{v}" for k, v in dts.items())     # g.. s.. t..
    return head if out == ins[0] and len(set(ins)) == 1 else f"{head}-to-{out}"


def _ids(op: Operator, product: str, dts, out_dtype, *, attrs, shapes, out_shape, explicit_out: bool,
         layout_name: str, values: str,
         explicit_outputs: Mapping[str, Tuple[Optional[Shape], Optional[str]]] = {}) -> Tuple[str, str]:
    """(case id, datakey). Keyword-only past the dtypes: ten fields of like types, where a swapped
    pair (layout and values, say) would silently rename every case and orphan every golden.
    `explicit_outputs`: the outputs beyond the first a single case names (a wrong shape or dtype),
    each spelt after out's (none for every case of an operator with one output: its id is as it was)."""
    parts = [_dtype_token(dts, out_dtype)]
    if "reduction" in attrs:                        # an operator without one has no token for it
        parts.append(op.reduction_name(attrs["reduction"]))
    parts += [a.token(attrs[a.name]) for a in op.attributes if a.name in attrs]
    parts.append(".".join(shape_token(s) for s in shapes.values()))
    if explicit_out:
        parts.append("out" + shape_token(out_shape))
    for name, (shape, dt) in explicit_outputs.items():
        parts.append(f"{name}{shape_token(shape)}.{dt or 'none'}")
    datakey = "-".join([op.name, *parts, values])
    case_id = "-".join([op.name, parts[0], product, *parts[1:], layout_name, values])
    return case_id, datakey
