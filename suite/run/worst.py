"""A numbers case's failure in numbers: its worst elements as results.json data (`worst`, and
each failing output's of a call with several: `failed_outputs`, docs/results-schema.md) and as
the failure message's lines, each with the inputs that produced it; and the record's metrics of
every judged output (outputs_record).

Apart from the runner (suite/run/runner.py, which decides that a case failed) because what a failure
says is read by people and by the report, and changes for them alone. Imports suite.ops, suite.cases,
suite.golden.source and suite.judge only."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from suite import ops
from suite.cases.model import Case
from suite.golden.source import CaseData
from suite.judge.judging import Element, Verdict


def _fmt(v: float) -> str:
    return repr(float(v))


def _output_of(case: Case, name: Optional[str]) -> Tuple[bool, tuple, Optional[str]]:
    """(whether `name` is the first output, its shape, its dtype): None names the first."""
    first = ops.get(case.op).outputs[0]
    shape, dt = case.all_outputs[first if name is None else name]
    return name is None or name == first, tuple(shape), dt


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


def failing_text(case: Case, failing: Mapping[str, Verdict], run: str = "") -> str:
    """The first line of a call that failed in one or more of its outputs: each failing output
    named, with (a call with several) its worst error, and why (`run`: "run 1 of 3", a determinism
    test's run, for which the output is named without its dtype, and a one-output call's not at all)."""
    several = len(case.all_outputs) > 1

    def one(n: str, v: Verdict) -> str:
        shape, dt = case.all_outputs[n]
        who = (f"{n} of {run}" if several else run) if run else f"{n} {dt}{list(shape)}"
        worst = f" (worst error {v.max_ulp:.4g} ulp)" if several else ""
        return f"{who} fails standard '{v.standard}'{worst}: {v.why}"
    return "; ".join(one(n, v) for n, v in failing.items())


def failing_outputs(case: Case, data: CaseData, failing: Mapping[str, Verdict]) -> Tuple[List[str], Dict[str, Any]]:
    """(the failure message's details, the record's fields) of the outputs of one call that failed
    their standard: each output's numbers and worst elements (under its name where more than one
    failed); `worst`, the first failing output's elements, and (a call with several outputs)
    `failed_outputs`, each failing output's (docs/results-schema.md)."""
    details: List[str] = []
    found: Dict[str, List[Dict[str, Any]]] = {}
    for n, v in failing.items():
        found[n] = worst_elements(case, data, v, n)
        lines = numbers_details(case, data, v, found[n], n)
        details += lines if len(failing) == 1 else [f"  {n}:"] + ["  " + x for x in lines]
    fields: Dict[str, Any] = {"worst": next(iter(found.values()))}
    if len(case.all_outputs) > 1:
        fields["failed_outputs"] = found
    return details, fields


def outputs_record(case: Case, verdicts: Mapping[str, Verdict]) -> Dict[str, Any]:
    """The record's metrics of a call's judged outputs (docs/results-schema.md): the first
    output's where a single output's are (older readers see them), and, for a call with several
    outputs, every judged output's under `outputs`."""
    metrics = {n: v.metrics() for n, v in verdicts.items()}
    record = dict(metrics.get(ops.get(case.op).outputs[0], {}))
    if len(case.all_outputs) > 1:
        record["outputs"] = metrics
    return record
