"""A case's inputs, drawn from its seed by its operator's value set (suite/values/), exactly
representable in each input's dtype, so the float64 golden is computed from the very values the
backend receives."""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from suite.values import draw
from suite.common import dtypes
from suite import ops
from suite.cases.model import Case


def draw_inputs(case: "Case") -> Dict[str, Optional[np.ndarray]]:
    """The case's inputs, drawn from its seed by its value set (None for a NULL tensor); read-only."""
    op = ops.get(case.op)
    sig = case.signature
    live = {n: s for n, s in sig.shapes.items() if s is not None}
    in_dtypes = {n: sig.dtypes[n] for n in live}
    # A NULL out (a rejection case) has no dtype: the value sets size their draws by the inputs'.
    out_dtype = sig.out_dtype or next(iter(in_dtypes.values()), "float32")
    call = type(sig)(live, in_dtypes, sig.out_shape, out_dtype, sig.attrs, sig.product)
    dists = op.value_sets[case.values](call)
    out: Dict[str, Optional[np.ndarray]] = {}
    for n in op.inputs:
        if n not in live:
            out[n] = None
            continue
        # (a distribution that reads the call, a class count or an ignore value, is bound to it)
        a = draw.draw(dists[n].bind(call), case.seed, n, live[n], dtypes.dtype_of(sig.dtypes[n]))
        a.flags.writeable = False
        out[n] = a
    return out
