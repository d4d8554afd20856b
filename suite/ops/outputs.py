"""An operator's outputs as the suite reads them (Operator.outputs, output_shape, output_dtype,
writes): which outputs a call has, each one's shape and dtype, and which it writes. One output (every
operator but those that declare more) has no declaration at all: a case, a call and a record carry
it as they always did, and `declared` says None."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

from suite.ops.base import Operator
from suite.ops.shapes import Shape

Output = Tuple[Optional[Shape], Optional[str]]       # (shape or None for NULL, dtype name or None)


def several(op: Operator) -> bool:
    """Whether `op` writes more than one output (the only case anything here changes)."""
    return len(op.outputs) > 1


def declared(op: Operator, shapes: Mapping[str, Optional[Shape]], dts: Mapping[str, Optional[str]],
             out_shape: Optional[Shape], out_dtype: Optional[str], attrs: Mapping[str, Any],
             given: Mapping[str, Output] = {}) -> Optional[Dict[str, Output]]:
    """Every output of a call in signature order, name -> (shape, dtype): the first is out's, each
    other one is what `given` names for it (a rejection case's wrong shape or dtype) or what the
    operator declares for these inputs and attributes. None for an operator with one output."""
    if not several(op):
        return None
    found: Dict[str, Output] = {op.outputs[0]: (out_shape, out_dtype)}
    for name in op.outputs[1:]:
        if name in given:
            found[name] = given[name]
        else:
            shape = op.output_shape(name, shapes, attrs)
            found[name] = (None if shape is None else tuple(shape), op.output_dtype(name, dts, out_dtype, attrs))
    return found


def written(op: Operator, attrs: Mapping[str, Any]) -> Tuple[str, ...]:
    """The outputs a call with these attributes writes, in signature order (the ones judged)."""
    return tuple(n for n in op.outputs if op.writes(n, attrs))
