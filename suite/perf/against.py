"""pytest --timing --timing-baseline: a timed case against a baseline backend in the same run
(docs/timing.md, "Interleaved"). The baseline lives in a host of its own (its own process, confined
as the candidate's is; suite/plugin/baseline.py starts it): it is untrusted code like the candidate.

For each timed case whose numbers passed on the candidate: the baseline's numbers on the same
inputs, judged as the candidate's were (a baseline that is wrong is timed for nothing: its timing is
not timed, the verdict UNKNOWN, with the reason); then both timed round by round
(suite/perf/interleave.py); then the gate's verdict (suite/perf/gate.py, the same rules and options
as `report diff`). Whatever the baseline does (fails, crashes, hangs, is not timed) costs only the
verdict, which is UNKNOWN: it never fails the case and never makes a failing one pass, since the
candidate's numbers are judged before it runs, and its faults are caught here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from suite.perf import gate, pair
from suite.perf.interleave import measure_pair
from suite.perf.protocol import NotTimed, Settings, Timer, measure, not_timed
from suite.perf.record import Timing, TimingRecord, read
from suite.run.host import Fault
from suite.run.runner import CaseFailure, CaseSkip

WHO = "the timing baseline's process"


@dataclass
class Baseline:
    """The baseline of a run: its host, its --timing-baseline spec (for messages) and the gate's
    options (--perf-threshold, --perf-alpha)."""
    host: Any
    spec: str
    threshold: float = gate.THRESHOLD
    alpha: float = gate.ALPHA
    who: str = "the timing baseline"        # its share of a memory estimate's message (Runner.fits)

    def numbers(self, runner: Any, case: Any, nodeid: str) -> Optional[str]:
        """Why the baseline's result on this case is not correct (None: it passed), judged against
        the same golden within the same standard as the candidate's."""
        try:
            data = runner._data(case)
            o = runner._calls(case, data.inputs, nodeid, host=self.host, who=WHO)[0]
            got = runner._accepted(case, o, nodeid, named=True)
            std = runner.standard_for(case)
            for name, a in (got.items() if isinstance(got, dict) else [(None, got)]):
                v = runner._judged(case, data, a, std, name)
                if not v.passed:
                    return f"the baseline's numbers did not pass: {'' if name is None else name + ' '}fails " \
                           f"standard '{v.standard}': {v.why}"
        except CaseFailure as e:
            return f"the baseline's numbers did not pass: {e.summary.split(': ', 1)[-1]}"
        except CaseSkip as e:
            return f"the baseline's numbers did not pass: {e.reason}"
        return None

    def time(self, runner: Any, case: Any, nodeid: str, req: Any, *, settings: Settings, nbytes: int,
             peak: Tuple[Optional[float], Optional[str]], per: Optional[float]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """(the candidate's `timing`, the record's `interleaved`) for a case whose numbers passed."""
        why = self.numbers(runner, case, nodeid)
        if why is not None:
            try:
                cand = measure(_timer(runner.host, req, per, "the backend's process"), settings, nbytes, peak)
            except NotTimed as e:
                cand = not_timed(e.reason)
            base: Dict[str, Any] = not_timed(why)
        else:
            base, cand = measure_pair(_timer(self.host, req, per, WHO), _timer(runner.host, req, per,
                                      "the backend's process"), settings, nbytes, peak)
        return cand, pair.make(base, self.verdict(base, cand), self.threshold, self.alpha)

    def verdict(self, base: Dict[str, Any], cand: Dict[str, Any]) -> gate.Verdict:
        b, c = read(base), read(cand)
        if isinstance(b, TimingRecord) and isinstance(c, TimingRecord):
            return gate.compare(b, c, threshold=self.threshold, alpha=self.alpha)
        why = f"the baseline was not timed: {b.reason}" if not isinstance(b, TimingRecord) else \
            f"the candidate was not timed: {c.reason}"
        return gate.Verdict(gate.UNKNOWN, getattr(b, "median_s", None), getattr(c, "median_s", None), None, None, why)

    def failure(self, v: Dict[str, Any], rounds: int) -> Optional[str]:
        """The case's failure message when the verdict is a REGRESSION (None otherwise)."""
        if v["verdict"] != gate.REGRESSION:
            return None
        g = gate.Verdict(v["verdict"], v["base_median_s"], v["cand_median_s"], v["ratio"], v["p"], v["reason"])
        return pair.reason_line(g, self.spec, rounds, self.threshold, self.alpha)


def _timer(host: Any, req: Any, per: Optional[float], who: str) -> Timer:
    """The protocol's timer over one host: a not-timed answer or a fault of its process is NotTimed."""
    def one(launches: int, flush: bool):
        try:
            answer = host.time(req, launches, flush, None if per is None else per * (launches + 1))
        except Fault as e:
            raise NotTimed(f"{who} failed while timing: {e}") from None
        if "not_timed" in answer:
            raise NotTimed(answer["not_timed"])
        return Timing(answer["clock"], answer["source"], tuple(answer["seconds"])), answer["wall_s"]
    return one
