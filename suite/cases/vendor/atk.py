"""ATK JSON files (`tests/st/aclnnXxx/atk_aclnnXxx.json`): a list of cases, each naming its aclnn
operator (`aclnn_name`), a tolerance standard, and its inputs in call order, each a tensor (dtype,
shape, `range_values`) or an attribute (its value, a list, or a range). docs/vendor-cases.md maps
every field."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator, Optional

from suite import ops
from suite.common import dtypes
from suite.common.jsonfile import load
from suite.common.yamlfile import FileError
from suite.cases.vendor.emit import Call
from suite.cases.vendor.spec import Refused, atk_attr, atk_standard, atk_values
from suite.cases.vendor.record import Item
from suite.ops.base import Operator


class _Whole(FileError):
    """A file that cannot be read at all (jsonfile's message names the file and line)."""

    def __init__(self, text: str) -> None:
        Exception.__init__(self, text)
        self.path, self.line, self.field, self.message = "", None, None, text


def operators() -> Dict[str, Operator]:
    """aclnn_name -> operator, from each operator's declaration."""
    return {op.vendor.atk or op.name: op for op in ops.OPERATORS.values()}


def read(path: Path, shown: str, product: str) -> Iterator[Item]:
    """Every case of one ATK file, translated or refused."""
    doc = load(path, _Whole)
    if not isinstance(doc, list):
        raise FileError(shown, 1, None, "an ATK file is a JSON list of cases")
    by_name = operators()
    for i, case in enumerate(doc):
        ident = str(case.get("id", f"#{i}")) if isinstance(case, dict) else f"#{i}"
        try:
            if not isinstance(case, dict):
                raise Refused(f"entry {i} is not an object")
            name = case.get("aclnn_name")
            if not isinstance(name, str) or not name:
                raise Refused("field 'aclnn_name': missing")
            op = by_name.get(name)
            if op is None:
                yield Item(shown, ident, f"aclnn{name}", None, None, f"operator not covered: aclnn{name}")
                continue
            yield Item(shown, ident, op.name, op, translate(op, case, product), None)
        except Refused as e:
            key = case.get("aclnn_name") if isinstance(case, dict) else None
            known = by_name.get(key) if isinstance(key, str) else None
            yield Item(shown, ident, known.name if known else f"aclnn{key}", None, None, str(e))


def _dtype(v: Any, what: str) -> str:
    try:
        return dtypes.canonical(str(v))
    except KeyError:
        raise Refused(f"{what}: dtype {v!r} is not one the suite runs ({', '.join(dtypes.DTYPES)})") from None


def _shape(v: Any, what: str) -> tuple:
    if not isinstance(v, list) or any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in v):
        raise Refused(f"{what}: shape {v!r} is not a list of dimensions")
    return tuple(v)


def translate(op: Operator, case: Dict[str, Any], product: str) -> Call:
    """One ATK case as the operator's call, or Refused."""
    names = op.vendor.atk_names
    attrs = {a.name: a for a in op.attributes}
    items = case.get("inputs")
    if not isinstance(items, list):
        raise Refused("field 'inputs': missing or not a list")
    call = Call(product=product, dtypes={}, shapes={}, standard=atk_standard(case.get("standard")))
    reduction: Optional[Any] = None
    for item in items:
        if not isinstance(item, dict):
            raise Refused("field 'inputs': an entry that is not an object (a tensor list is not read)")
        vname = item.get("name")
        ours = names.get(vname, vname)
        what = f"input '{vname}'"
        kind = item.get("type")
        if kind == "tensor":
            if ours not in op.inputs:
                raise Refused(f"{what}: not an input of aclnn{op.name} ({', '.join(op.inputs)})")
            shape = _shape(item.get("shape"), what)
            if item.get("required") is False and shape == ():
                # an optional tensor of shape [] is the vendor's NULL (docs/vendor-cases.md)
                call.dtypes[ours], call.shapes[ours] = None, None
                continue
            dt = _dtype(item.get("dtype"), what)
            call.dtypes[ours], call.shapes[ours] = dt, shape
            call.values[ours] = atk_values(item.get("range_values"), what)
        elif kind == "attr":
            if ours == "reduction" and op.reductions:
                reduction = _reduction(op, item.get("range_values"), what)
            elif ours in attrs:
                call.attrs[ours] = atk_attr(item.get("range_values"), attrs[ours].kind, what)
            else:
                raise Refused(f"{what}: not an attribute of aclnn{op.name}")
        else:
            raise Refused(f"{what}: type {kind!r} is not read (tensor and attr are)")
    for n in op.inputs:
        if n not in call.shapes:
            if n not in op.optional:
                raise Refused(f"no input for {n!r} of aclnn{op.name}")
            call.dtypes[n], call.shapes[n] = None, None
    if op.reductions and reduction is None:
        raise Refused("no reduction attribute")
    call.reduction = reduction
    call.dtypes = {n: call.dtypes[n] for n in op.inputs}
    call.shapes = {n: call.shapes[n] for n in op.inputs}
    return call


def _reduction(op: Operator, rv: Any, what: str) -> Any:
    """The reduction as the call passes it (an integer; a word is read as the operator's name)."""
    if isinstance(rv, str) and rv in op.reductions:
        return op.reductions[rv]
    return atk_attr(rv, int, what)
