"""Running one case against the backend and saying, in numbers, what went wrong (a numbers failure's
worst elements, as data and as lines: suite/run/worst.py)."""
from __future__ import annotations

import shlex
import pathlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from suite.common import dtypes
from suite import ops
from suite.run import memory
from suite.run.backend import BackendInfo
from suite.cases.model import Case, Kind
from suite.common.blocks import numel
from suite.contract import OpCall, status_name
from suite.golden.source import CaseData, GoldenError, is_stored
from suite.golden.store import GoldenStore
from suite.cases.inputs import draw_inputs
from suite.run.host import Fault
from suite.run.trace import trace_lines
from suite.run.calls import Outcome, Request, aliased_text, call_of, outputs_text
from suite.run.output import Log, output_lines
from suite.run.seams import Backend, Host
from suite.run.bits import _copied, _same, digest_of
from suite.run.paths import judged_dtype, may_flush, rounding_path
from suite.judge.judging import Verdict, judge
from suite.judge.table import Standard, ToleranceTable
from suite.run.worst import failing_outputs, failing_text, outputs_record


class CaseFailure(AssertionError):
    """A conformance failure: the message is the whole story, no traceback needed. The parts stay
    data for the reports: `summary` (the first line), `reproduce` (the one-line command, or None)
    and `record` (what was measured before failing: status, metrics, fault)."""

    def __init__(self, case_id: str, what: str, details: Sequence[str] = (), reproduce: Optional[str] = None,
                 record: Optional[Dict[str, Any]] = None, stop: Optional[str] = None) -> None:
        self.summary = f"{case_id}: {what}"
        self.reproduce = reproduce
        self.record = record or {}
        self.stop = stop  # why the whole run must stop after this case (None: it goes on)
        lines = [self.summary, *details] + ([f"  reproduce: {reproduce}"] if reproduce else [])
        super().__init__("\n".join(lines))


class CaseSkip(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def request_of(case: Case, inputs: Dict[str, Optional[np.ndarray]]) -> Request:
    """What the backend's process needs to make the case's call: contiguous inputs and the layout."""
    out = case.out_dtype if case.out_dtype is not None and case.out_shape is not None else None
    # Every input of the signature, in its order; one the data lacks is NULL (an optional input).
    named = {n: inputs.get(n) for n in ops.get(case.op).inputs}
    # Every output in signature order (a one-output operator's one, named by its declaration).
    return {"op": case.op, "inputs": named, "layout": case.layout, "attrs": dict(case.attrs),
            "out_shape": None if case.out_shape is None else tuple(case.out_shape),
            "out_dtype": None if out is None else dtypes.canonical(out), "product": case.product,
            "outputs": [[n, None if s is None else tuple(s), None if d is None else dtypes.canonical(d)]
                        for n, (s, d) in case.all_outputs.items()],
            "written": list(case.written)}


def build_call(case: Case, inputs: Dict[str, Optional[np.ndarray]]) -> OpCall:
    return call_of(request_of(case, inputs))


def not_run_because(kind: Kind, info: BackendInfo) -> Optional[str]:
    """Why the backend's own declarations keep `kind` from running (the case is skipped with it)."""
    if kind is Kind.REJECTION and "status" not in info.capabilities:
        return f"backend {info.name} does not claim 'status' (aclnn's parameter validation)"
    if kind is Kind.DETERMINISM and not info.deterministic:
        return f"backend {info.name} declares itself nondeterministic (deterministic = False)"
    return None


@dataclass
class Runner:
    host: Host                                # suite.run.host.Hosted or calls.InProcess: where the backend runs
    info: BackendInfo
    store: GoldenStore
    table: ToleranceTable
    standard_override: Optional[str] = None
    replay: str = ""                          # options that reproduce this run's configuration
    max_memory: Optional[int] = None          # bytes a case may need (None: what is available)
    # What the backend's process printed during this case's calls: (who, suite.output.Log).
    output: List[Tuple[str, Optional[Log]]] = field(default_factory=list)
    # case id -> (digest of out, node id) of the numbers test of a case that has a determinism test
    # too: that test runs later in the session (the plugin orders it last) and must get the same bits.
    earlier: Dict[str, Tuple[str, str]] = field(default_factory=dict)
    # Where pytest was started, and the running test's file (set per test by the plugin): a
    # reproducer names the test as a command line run there can (a node id is relative to the
    # rootdir, and bare for a file outside it, as in a run from the user's own repository).
    invocation_dir: Optional[pathlib.Path] = None
    test_path: Optional[pathlib.Path] = None
    # pytest --timing: times each timing-set case after its numbers pass (suite/perf/case.py).
    timer: Optional[Any] = None
    # pytest --accuracy-baseline: each numbers case's double benchmark (suite/run/double.py).
    accuracy: Optional[Any] = None

    def standard_for(self, case: Case) -> Standard:      # --standard, the case's, the table's
        return self.table.for_op(case.op, self.standard_override or getattr(case, "standard", None))

    def reproducer(self, nodeid: str) -> str:
        return f"pytest {shlex.quote(self.address(nodeid))}{self.replay}"

    def address(self, nodeid: str) -> str:
        """The running test as a command line started in `invocation_dir` names it: its file
        relative to that folder where it lies below it, else by its absolute path."""
        if self.test_path is None or self.invocation_dir is None or "::" not in nodeid:
            return nodeid
        path = self.test_path.resolve()
        try:
            where = str(path.relative_to(self.invocation_dir.resolve()))
        except ValueError:
            where = str(path)
        return f"{where}::{nodeid.split('::', 1)[1]}"

    def _fail(self, case: Case, nodeid: str, what: str, details: Sequence[str] = (),
              record: Optional[Dict[str, Any]] = None, stop: Optional[str] = None) -> CaseFailure:
        details = [*details, *output_lines(self.output)]
        return CaseFailure(case.id, what, details, self.reproducer(nodeid), record, stop)

    def _take_output(self, host: Host, who: str = "the backend's process") -> None:
        self.output.append((who, host.take_output()))

    @property
    def backend(self) -> Optional[Backend]:
        """The backend object when it lives in this process (--isolation none), else None."""
        return self.host.backend

    # -- calling -------------------------------------------------------------------------------
    def _calls(self, case: Case, inputs: Dict[str, Optional[np.ndarray]], nodeid: str,
               repeat: int = 1, host: Optional[Host] = None, who: str = "the backend's process") -> List[Outcome]:
        """What the backend made of `repeat` calls; a fault of its process fails the case."""
        host = self.host if host is None else host
        elements = sum(numel(s) for s in case.shapes.values() if s is not None) + sum(
            numel(s or ()) for s, _ in case.all_outputs.values())
        deadline = host.deadline_for(elements)
        try:
            outs = host.run(request_of(case, inputs), repeat, deadline)
        except Fault as e:
            self._take_output(host, who)
            what = str(e) if host is self.host else f"{who}: {e}"
            raise self._fail(case, nodeid, what, record={"fault": e.kind}) from None
        self._take_output(host, who)
        for o in outs:
            if o.device_fault is not None:
                raise self._device_fault(case, nodeid, o)
        return outs

    def _device_fault(self, case: Case, nodeid: str, o: Outcome) -> CaseFailure:
        """The device faulted in this case: it fails; the run goes on if the backend recovered."""
        if o.device_lost:
            stop = f"{case.id}: device fault, and the backend could not recover the device: {o.device_fault}"
            return self._fail(case, nodeid, f"device fault: {o.device_fault}; the backend could not recover "
                                            f"the device, so the run stops here", record={"fault": "device lost"},
                              stop=stop)
        return self._fail(case, nodeid, f"device fault: {o.device_fault}; the backend reset the device, the "
                                        f"next case runs on a fresh one", record={"fault": "device"})

    def _status(self, case: Case, o: Outcome, nodeid: str) -> Optional[int]:
        """The status of a rejected call (None: accepted); crashes and skips become a failure or a skip."""
        if o.unsupported is not None:
            raise CaseSkip(f"backend cannot express this call: {o.unsupported}")
        if o.raised is not None:
            raise self._fail(case, nodeid, f"the backend crashed: {o.raised}", trace_lines(o.trace))
        if o.violation is not None:
            raise self._fail(case, nodeid, f"the backend broke its contract: {o.violation}")
        return o.status

    def fits(self, case: Case, kind: Kind) -> None:
        """Skip, with the numbers, a case whose arrays this machine cannot hold."""
        if is_stored(case):
            return
        b = self.timer.baseline if self.timer is not None and case.timing and kind is Kind.NUMBERS else None
        b = self.accuracy if b is None and kind is Kind.NUMBERS else b      # (one baseline's copy counted)
        second = None if b is None else (getattr(b.host.info, "working_memory", memory.WORKING_MEMORY), b.host.copies)
        want = memory.need(case, kind, self.info.working_memory, self.host.copies, second)
        have = self.max_memory if self.max_memory is not None else memory.available()
        if have is not None and want > have:
            src = "--max-memory" if self.max_memory is not None else "available now"
            raise CaseSkip(f"needs about {memory.fmt(want)} of memory for its arrays" + ("" if b is None else
                           f" ({memory.fmt(memory.baseline_share(case, *second))} of it {getattr(b, 'who', 'the timing baseline')}'s copy)")
                           + f"; {memory.fmt(have)} {src}")

    def _data(self, case: Case) -> CaseData:
        try:
            return self.store.load(case)
        except GoldenError as e:
            raise CaseFailure(case.id, str(e)) from None

    def _inputs(self, case: Case) -> Dict[str, np.ndarray]:
        try:
            return self.store.inputs(case)
        except GoldenError as e:
            raise CaseFailure(case.id, str(e)) from None

    def _check_array(self, case: Case, o: Outcome, nodeid: str) -> Dict[str, np.ndarray]:
        """The returned arrays, name -> array of each written output."""
        if o.arrays is None:
            outs = [(n, s, d) for n, (s, d) in case.all_outputs.items()]
            wants = (f"the call writes {outputs_text(outs, case.written)}" if len(outs) > 1 else
                     f"out is shape {tuple(case.out_shape)} dtype {case.out_dtype}")
            raise self._fail(case, nodeid, f"the backend returned {o.returned}; {wants}")
        return o.arrays

    def _accepted(self, case: Case, o: Outcome, nodeid: str, named: bool = False) -> Dict[str, np.ndarray]:
        """The arrays of an accepted call, or the case's failure: a rejected valid call (its status
        `named` as aclnn spells it), a crash, a broken contract, a result of the wrong kind."""
        status = self._status(case, o, nodeid)
        if status is not None:
            because = f" ({status_name(status)}); the contract accepts it" if named else ""
            raise self._fail(case, nodeid, f"the backend rejected a valid call with status {status}{because}",
                             record={"status": status})
        return self._check_array(case, o, nodeid)

    def _judged(self, case: Case, data: CaseData, got: np.ndarray, std: Standard,
                name: Optional[str] = None) -> Verdict:
        """Judge this returned array against the case's golden within `std`, through the rounding
        path the operator's kernel takes to out (the one step every numeric verdict is made by).
        `name`: the output; one beyond the first is judged against its own golden in its own
        dtype's entry of the standard, rounded once to its dtype (no vendor path: the operator's
        result_dtype, term_dtype and vendor_at describe the first output)."""
        if name is not None and name != ops.get(case.op).outputs[0]:
            return judge(got, data.others[name], got.dtype, std, self.table.slack_ulps,
                         flush=may_flush(case.product))
        path = rounding_path(case, data, got.dtype)
        return judge(got, data.golden, judged_dtype(case, got.dtype), std, self.table.slack_ulps,
                     through=path.through, terms=path.terms, vendor=path.vendor, flush=path.flush, kept=path.kept)

    # -- the three kinds of test ---------------------------------------------------------------
    def check(self, kind: Kind, case: Case, nodeid: str) -> Dict[str, Any]:
        """Run `case` as a test of `kind`: its record, or CaseFailure / CaseSkip."""
        self.output = []
        return {Kind.NUMBERS: self.check_numbers, Kind.REJECTION: self.check_rejection,
                Kind.DETERMINISM: self.check_determinism}[Kind(kind)](case, nodeid)

    def check_numbers(self, case: Case, nodeid: str) -> Dict[str, Any]:
        if self.timer is None or not case.timing:
            return self._check_numbers(case, nodeid)
        return self.timer.after_numbers(self, case, nodeid)     # pytest --timing (suite/perf/case.py)

    def _check_numbers(self, case: Case, nodeid: str) -> Dict[str, Any]:
        """Each written output judged against its golden; the record keeps the first output's
        metrics, and a call with several every judged output's under `outputs`
        (docs/results-schema.md). A failure names each failing output."""
        self.fits(case, Kind.NUMBERS)
        data = self._data(case)
        o = self._calls(case, data.inputs, nodeid)[0]
        got = self._accepted(case, o, nodeid, named=True)
        if case.determinism:
            self.earlier[case.id] = (digest_of(got), nodeid)
        std = self.standard_for(case)
        verdicts = {n: self._judged(case, data, a, std, n) for n, a in got.items()}
        record = {"status": 0, **outputs_record(case, verdicts), **self._double(case, nodeid, data, got)}
        failing = {n: v for n, v in verdicts.items() if not v.passed}
        if failing:
            details, fields = failing_outputs(case, data, failing)
            raise self._fail(case, nodeid, failing_text(case, failing), details, {**record, **fields})
        return self._double_passed(case, nodeid, record)

    def _double(self, case: Case, nodeid: str, data: CaseData, got: Any) -> Dict[str, Any]:
        """The record's `accuracy` field ({} without --accuracy-baseline), made before the verdict."""
        return {} if self.accuracy is None else self.accuracy.field(self, case, nodeid, data, got)

    def _double_passed(self, case: Case, nodeid: str, record: Dict[str, Any]) -> Dict[str, Any]:
        """`record` of a case that passed its standard, or its failure: the double benchmark failed."""
        why = None if "accuracy" not in record else self.accuracy.failure(record["accuracy"])
        if why is not None:
            raise self._fail(case, nodeid, why, record=record)
        return record

    def check_rejection(self, case: Case, nodeid: str) -> Dict[str, Any]:
        status = self._status(case, self._calls(case, draw_inputs(case), nodeid)[0], nodeid)
        if status is None:
            raise self._fail(case, nodeid, f"the backend accepted a call that aclnn rejects with "
                                           f"{case.expect} ({status_name(case.expect)}): {case.why}",
                             record={"status": 0})
        if status != case.expect:
            raise self._fail(case, nodeid, f"status {status} ({status_name(status)}), expected {case.expect} "
                                           f"({status_name(case.expect)}): {case.why}", record={"status": status})
        return {"status": status}

    def check_determinism(self, case: Case, nodeid: str) -> Dict[str, Any]:
        """Two calls back to back in the backend's process, then (where it runs in a process of its
        own) a third in its second process (suite.run.host.Hosted.twin): all three bit-identical, and
        identical to what the same call gave earlier in the session (the case's numbers test, where
        it ran in this pytest process: a result that drifts with time or with what ran before)."""
        self.fits(case, Kind.DETERMINISM)
        if not ops.get(case.op).deterministic_on(case.product, dict(case.attrs)):
            return self._judged_twice(case, nodeid)
        inputs = self._inputs(case)
        outs = self._calls(case, inputs, nodeid, repeat=2)
        twin = self.host.twin()
        if twin is not None:
            outs += self._calls(case, inputs, nodeid, host=twin, who="the backend's second process")
        results = []
        for o in outs:
            got = self._accepted(case, o, nodeid)
            if o.aliased is not None:
                raise self._fail(case, nodeid, aliased_text(o.aliased))
            # A copy: a backend that hands back the same buffer twice must not compare it with itself.
            results.append(_copied(got) if len(results) < 2 else got)
        _same(self, case, nodeid, results[0], results[1],
                  "two runs on identical inputs differ in {n} of {size} elements (the operator is documented "
                  "as deterministic)")
        if len(results) > 2:
            _same(self, case, nodeid, results[0], results[2],
                  "a run in the backend's second process, on the same inputs received into fresh memory, "
                  "differs from the first process's in {n} of {size} elements (two runs in one process "
                  "agree: a result remembered there, not recomputed; the operator is documented as "
                  "deterministic)")
        before = self.earlier.get(case.id)
        if before is not None and digest_of(results[0]) != before[0]:
            raise self._fail(case, nodeid, "the same call earlier in this session gave other bits (the runs "
                                           "now agree with each other: a result that changes with time or "
                                           "with what ran before; the operator is documented as deterministic)",
                             [f"  earlier: {before[1]}"])
        return {"status": 0, "deterministic": True}

    def _judged_twice(self, case: Case, nodeid: str) -> Dict[str, Any]:
        """The determinism test of a call its operator's contract does not promise identical bits
        for on this product (Operator.nondeterministic): the same calls as a deterministic case's,
        each result judged against the golden within the case's standard, never bit for bit.
        The record's metrics are the worst run's, and its reason says why (docs/running.md)."""
        data = self._data(case)
        outs = self._calls(case, data.inputs, nodeid, repeat=2)
        twin = self.host.twin()
        if twin is not None:
            outs += self._calls(case, data.inputs, nodeid, host=twin, who="the backend's second process")
        std = self.standard_for(case)
        worst: Dict[str, Verdict] = {}                 # output -> its worst run
        note = nondeterministic_note(case, len(outs))
        for i, o in enumerate(outs, 1):
            got = _copied(self._accepted(case, o, nodeid))
            if o.aliased is not None:
                raise self._fail(case, nodeid, aliased_text(o.aliased))
            run = {name: self._judged(case, data, a, std, name) for name, a in got.items()}
            failing = {n: v for n, v in run.items() if not v.passed}
            if failing:             # the run's metrics (of each output), every failing one named
                # (a one-output run's failure says its numbers alone, as it always has)
                details, fields = failing_outputs(case, data, failing) if len(case.all_outputs) > 1 else ([], {})
                raise self._fail(case, nodeid, f"{failing_text(case, failing, f'run {i} of {len(outs)}')} "
                                               f"({note})", details,
                                 {"status": 0, **outputs_record(case, run), **fields})
            for name, v in run.items():
                if name not in worst or v.max_ulp > worst[name].max_ulp:
                    worst[name] = v
        return {"status": 0, "deterministic": False, **outputs_record(case, worst), "note": note}


def nondeterministic_note(case: Case, runs: int = 2) -> str:
    """What a determinism record of a call its contract does not promise identical bits for says
    (its reason, and the report's line)."""
    how = "judged twice" if runs == 2 else "judged twice in one process and once in the second"
    return f"not deterministic on {case.product} by its contract: {how} within standard"
