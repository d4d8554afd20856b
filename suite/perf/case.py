"""Timing one case whose numbers passed (pytest --timing): the protocol (suite/perf/protocol.py)
driven through the host the backend runs in, into the record's `timing` field."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from suite.cases import hardware
from suite.cases.model import Case
from suite.common.blocks import numel
from suite.perf.traffic import bytes_moved
from suite.perf.peak import peak_of
from suite.perf.protocol import NotTimed, Settings, measure, not_timed
from suite.perf.record import Timing
from suite.run.calls import Request, call_of
from suite.run.host import Fault
from suite.run.runner import CaseFailure, request_of

NUMBERS_FAILED = "its numbers did not pass: only a correct kernel is timed"


@dataclass
class CaseTimer:
    """The session's timing: its settings, and the hardware table (cases/hardware.yaml: each
    product's peak bandwidth) read before the backend's process starts."""

    settings: Settings
    hardware: Dict[str, hardware.Hardware] = field(repr=False)
    baseline: Optional[Any] = None        # --timing-baseline: suite/perf/against.py's Baseline

    def peak(self, product: str) -> Tuple[Optional[float], str]:
        return peak_of(product, self.hardware)

    def after_numbers(self, runner: Any, case: Case, nodeid: str) -> Dict[str, Any]:
        """A timing-set case's numbers test (suite/run/runner.py), then its timing: only after its
        numbers pass; a failure's record says why it was not timed."""
        try:
            record = runner._check_numbers(case, nodeid)
        except CaseFailure as e:
            e.record["timing"] = not_timed(NUMBERS_FAILED)
            raise
        req = request_of(case, runner._inputs(case))
        if self.baseline is None:
            record["timing"] = self.time(runner.host, case, req)
        else:
            record["timing"], record["interleaved"] = self._against(runner, case, nodeid, req)
        runner._take_output(runner.host)
        failure = None if self.baseline is None else self.baseline.failure(record["interleaved"], self.settings.rounds)
        if failure is not None:            # a REGRESSION fails the case (docs/timing.md, "Interleaved")
            raise runner._fail(case, nodeid, failure, record=record)
        return record

    def _against(self, runner: Any, case: Case, nodeid: str, req: Request) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """The candidate's timing and the interleaved field (suite/perf/against.py)."""
        per = runner.host.deadline_for(self._elements(case))
        return self.baseline.time(runner, case, nodeid, req, settings=self.settings,
                                  nbytes=bytes_moved(call_of(req)), peak=self.peak(case.product), per=per)

    @staticmethod
    def _elements(case: Case) -> int:
        return sum(numel(s) for s in case.shapes.values() if s is not None) + sum(
            numel(s or ()) for s, _ in case.all_outputs.values())

    def time(self, host: Any, case: Case, req: Request) -> Dict[str, Any]:
        """The case's timing record: measured, or {"status": "not timed", "reason": ...} (a
        backend without the hook, one that cannot time here, bad times, or a fault of its process
        while timing: the case's numbers passed, so the fault is this record's, not the case's)."""
        timer = getattr(host, "time", None)
        if not callable(timer):
            return not_timed(f"the backend's host {type(host).__name__} cannot time calls")
        per = host.deadline_for(self._elements(case))

        def one(launches: int, flush: bool):
            answer = timer(req, launches, flush, None if per is None else per * (launches + 1))
            if "not_timed" in answer:
                raise NotTimed(answer["not_timed"])
            return Timing(answer["clock"], answer["source"], tuple(answer["seconds"])), answer["wall_s"]

        try:
            return measure(one, self.settings, bytes_moved(call_of(req)), self.peak(case.product))
        except NotTimed as e:
            return not_timed(e.reason)
        except Fault as e:
            return not_timed(f"the backend's process failed while timing: {e}")
