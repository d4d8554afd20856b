"""A numbers case's failure in numbers: its worst elements as results.json data (`worst`,
docs/results-schema.md) and as the failure message's lines, each with the inputs that produced it.

Apart from the runner (suite/run/runner.py, which decides that a case failed) because what a failure
says is read by people and by the report, and changes for them alone. Imports suite.ops, suite.cases,
suite.golden.source and suite.judge only."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from suite import ops
from suite.cases.model import Case
from suite.golden.source import CaseData
from suite.judge.judging import Element, Verdict


def _fmt(v: float) -> str:
    return repr(float(v))


def _output_of(case: Case, name: Optional[str]) -> Tuple[bool, tuple, Optional[str]]:
    """(whether `name` is the first output, its shape, its dtype): None names the only output."""
    if name is None or name == ops.get(case.op).outputs[0]:
        return True, tuple(case.out_shape), case.out_dtype
    shape, dt = case.outputs[name]
    return False, tuple(shape), dt


def _index(e: Element, shape: tuple) -> tuple:
    return tuple(int(i) for i in np.unravel_index(e.index, shape)) if shape else ()


def worst_element(e: Element, shape: tuple, inputs: Optional[Dict[str, Optional[float]]]) -> Dict[str, Any]:
    """One of the worst elements as a results.json item: where, from what, against what. The error
    is in ulps of out's dtype at the golden, or absolute where the golden is 0 (an ulp of 0 is the
    subnormal spacing, which makes any real error look astronomical)."""
    zero = e.golden == 0
    return {"index": list(_index(e, shape)), "inputs": inputs, "golden": e.golden, "lo": e.lo, "hi": e.hi,
            "got": e.got, "error": e.abs if zero else e.ulp, "unit": "abs" if zero else "ulp", "why": e.why}


def worst_elements(case: Case, data: CaseData, v: Verdict, name: Optional[str] = None) -> List[Dict[str, Any]]:
    """The worst elements as data (results.json `worst`, docs/results-schema.md); of output
    `name` where the call has several (its inputs are named only for the first output)."""
    op = ops.get(case.op)
    first, shape, _ = _output_of(case, name)
    return [worst_element(e, shape, op.element_values(data.inputs, shape, _index(e, shape)) if first else None)
            for e in v.elements]


def numbers_details(case: Case, data: CaseData, v: Verdict,
                    worst: Sequence[Dict[str, Any]], name: Optional[str] = None) -> List[str]:
    """The measured numbers and the worst elements, each with the inputs that produced it
    (an output beyond the first: where and what, without the inputs)."""
    op = ops.get(case.op)
    first, shape, out_dtype = _output_of(case, name)
    lines = [f"  {v.n} elements, {v.n_over} over; max error {v.max_ulp:.4g} ulp, max abs {v.max_abs:.4g}, "
             f"max rel {v.max_rel:.4g}, rmse {v.rmse:.4g}",
             "  worst elements:"]
    for e, w in zip(v.elements, worst):
        index = _index(e, shape)
        allowed = (_fmt(e.lo) if e.lo == e.hi else f"[{_fmt(e.lo)}, {_fmt(e.hi)}]")
        tag = {"mismatch": " (NaN/inf mismatch)", "gross": " (gross error)"}.get(e.why, "")
        error = (f"{w['error']:.4g} ulp of {out_dtype}" if w["unit"] == "ulp"
                 else f"{w['error']:.4g} absolute (the golden is 0)")
        lines.append(f"    index {index}: {op.describe(data.inputs, dict(case.attrs), shape, index)}" if first
                     else f"    {name} index {index}:")
        lines.append(f"      golden {_fmt(e.golden)} (allowed {allowed}), got {_fmt(e.got)}, "
                     f"error {error}{tag}")
    return lines
