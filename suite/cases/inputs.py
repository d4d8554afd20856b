"""A case's inputs, drawn from its seed by its operator's value set (suite/values/), exactly
representable in each input's dtype, so the float64 golden is computed from the very values the
backend receives."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from suite.values import draw
from suite.common import dtypes
from suite import ops
from suite.cases.model import Case
from suite.cases import valuespec


def _bound(case: "Case") -> Tuple[Dict[str, Tuple[draw.Dist, Tuple[int, ...], np.dtype]], List[str]]:
    """Each drawn input's distribution bound to the call, its shape and dtype; and the NULL inputs."""
    op = ops.get(case.op)
    sig = case.signature
    live = {n: s for n, s in sig.shapes.items() if s is not None}
    in_dtypes = {n: sig.dtypes[n] for n in live}
    # A NULL out (a rejection case) has no dtype: the value sets size their draws by the inputs'.
    out_dtype = sig.out_dtype or next(iter(in_dtypes.values()), "float32")
    call = type(sig)(live, in_dtypes, sig.out_shape, out_dtype, sig.attrs, sig.product)
    spec = case.value_spec                      # the case's own values (suite/cases/valuespec.py)
    dists = dict(op.value_sets[case.values if spec is None else spec.base](call))
    if spec is not None:
        dists.update(valuespec.dists(spec, in_dtypes))
    # (a distribution that reads the call, a class count or an ignore value, is bound to it)
    bound = {n: (dists[n].bind(call), live[n], dtypes.dtype_of(sig.dtypes[n])) for n in op.inputs if n in live}
    return bound, [n for n in op.inputs if n not in live]


def value_problem(case: "Case") -> Optional[str]:
    """Why the case's inputs cannot be drawn (one line naming the input: a value set that draws
    integers its dtype cannot hold, floats for an exact dtype, a class count of 0), or None:
    checked when a case file is read, so that a case that loads is one `golden generate` and a
    run can draw (nothing is drawn here)."""
    if not any(d in dtypes.EXACT for d in case.dtypes.values()):      # (canonical names, or None)
        return None                          # float inputs: any value set draws them (none is bound to the call)
    key = case.datakey
    if key not in _PROBLEMS:                # a case's products and layouts share its data: checked once
        try:
            for n, (dist, _, dtype) in _bound(case)[0].items():
                draw.fits(dist, dtype, n)
            _PROBLEMS[key] = None
        except ValueError as e:
            _PROBLEMS[key] = str(e)
    return _PROBLEMS[key]


_PROBLEMS: Dict[str, Optional[str]] = {}


def draw_inputs(case: "Case") -> Dict[str, Optional[np.ndarray]]:
    """The case's inputs, drawn from its seed by its value set (None for a NULL tensor); read-only."""
    bound, null = _bound(case)
    out: Dict[str, Optional[np.ndarray]] = {n: None for n in null}
    for n, (dist, shape, dtype) in bound.items():
        a = draw.draw(dist, case.seed, n, shape, dtype)
        a.flags.writeable = False
        out[n] = a
    return {n: out[n] for n in ops.get(case.op).inputs}
