"""What a backend's run returned for a call with several outputs (docs/backend-contract.md,
"Several outputs"): a mapping of output name to array, each written output exactly its shape and
dtype, none of them an input's memory, an earlier result's or another output's. An output the call
does not write may be absent or hold anything: it is dropped here, never judged. Kept apart from
suite/run/calls.py, whose one-array path every single-output call still takes unchanged."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from suite.cases.model import Case
from suite.common import dtypes
from suite.contract import OpCall


def _spell(name: str, shape: Optional[tuple], dt: Optional[str]) -> str:
    return f"{name} {dt}{list(shape) if shape is not None else 'NULL'}"


def outputs_text(outputs: Sequence[Sequence[Any]], written: Sequence[str]) -> str:
    """The outputs a call writes, as a message spells them: `out float32[4] and totalWeightOut float32[]`."""
    parts = [_spell(n, s, d) for n, s, d in outputs if n in written]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def several(call: OpCall, req: Mapping[str, Any], got: Any,
            earlier: Sequence[np.ndarray]) -> Tuple[Any, Optional[List[np.ndarray]]]:
    """(Outcome, the arrays kept for a later call's aliasing check) of one call's returned mapping."""
    from suite.run.calls import Outcome, _describe, _plain, words
    outputs, written = req["outputs"], tuple(req["written"])
    names = [n for n, _, _ in outputs]
    if not isinstance(got, Mapping):
        return Outcome(returned=f"{_describe(got)}; a call with several outputs returns a mapping of output "
                                f"name to array ({', '.join(names)})"), None
    keys = list(got.keys())
    stray = [k for k in keys if k not in names]
    if stray:
        return Outcome(returned=f"a mapping with {words(repr(stray[0]))[:80]}, which is no output of "
                                f"{call.op} (its outputs: {', '.join(names)})"), None
    missing = [n for n in written if n not in got]
    if missing:
        return Outcome(returned=f"a mapping without {', '.join(missing)}"), None
    arrays: Dict[str, np.ndarray] = {}
    for n, shape, dt in outputs:
        if n not in written:
            continue                          # unwritten: whatever it holds is no failure
        a, refused = _plain(got[n])
        if refused is not None:
            return Outcome(violation=f"the backend returned {n} as {refused}"), None
        if not isinstance(a, np.ndarray) or shape is None or tuple(a.shape) != tuple(shape) \
                or a.dtype != dtypes.dtype_of(dt):
            return Outcome(returned=f"{n} as {_describe(a)}"), None
        arrays[n] = a
    return Outcome(arrays=arrays, aliased=_aliased(call, arrays, earlier)), list(arrays.values())


def _aliased(call: OpCall, arrays: Mapping[str, np.ndarray], earlier: Sequence[np.ndarray]) -> Optional[str]:
    """What one of the outputs shares memory with: "input NAME", "an earlier result" or "output
    NAME" (another output of the same call), None when each is memory of its own."""
    seen: List[Tuple[str, np.ndarray]] = []
    for n, a in arrays.items():
        if a.size:
            for i, x in call.inputs.items():
                if x is not None and np.may_share_memory(a, x):
                    return f"input {i} (as {n})"
            if any(np.may_share_memory(a, e) for e in earlier):
                return "an earlier result"
            for m, b in seen:
                if np.may_share_memory(a, b):
                    return f"output {m} (as {n})"
            seen.append((n, a))
    return None


def out_shapes(case: Case) -> List[Optional[tuple]]:
    """The shapes of every output the caller allocates (out's alone for one output)."""
    if case.outputs is None:
        return [case.out_shape]
    return [s for s, _ in case.outputs.values()]


def request_outputs(case: Case) -> List[Tuple[str, Optional[tuple], Optional[str]]]:
    return [(n, s, d) for n, (s, d) in (case.outputs or {}).items()]


def aliased_text(aliased: str) -> str:
    """A result must be the backend's own new memory: not a view of an input, and not a buffer it
    handed out before (an earlier result would change under the caller)."""
    if aliased.startswith("output "):
        return (f"the result shares memory with {aliased}: two outputs of one call must each be "
                f"memory of their own")
    if aliased.startswith("input "):
        return (f"the result shares memory with {aliased}: the backend returned a view of its input, "
                f"not a result of its own")
    return ("the second call's result shares memory with the first's: the backend hands out a buffer "
            "it reuses, so an earlier result changes under the caller")


def outputs_record(first: str, metrics: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """The record fields of a call with several outputs judged (docs/results-schema.md): the first
    output's metrics where a single output's are (older readers see them), every judged output's
    under `outputs`."""
    return {**(metrics[first] if first in metrics else {}), "outputs": {n: dict(m) for n, m in metrics.items()}}
