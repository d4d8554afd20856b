"""pytest --accuracy-baseline: one numbers case's double benchmark (docs/precision.md, "The double
benchmark"). The baseline backend lives in a host of its own (its own process, confined as the
candidate's is; suite/plugin/accuracy.py starts it, as suite/plugin/baseline.py starts the timing
baseline's): it is untrusted code like the candidate.

For each numbers case whose candidate returned its result (judged by its standard as always): the
baseline's call on the same inputs, its result judged by the same standard against the same golden,
then both results measured against the golden (suite/judge/benchmark.py) and the candidate's
errors compared with the baseline's at the run's level. Whatever the baseline does (rejects the
call, raises, crashes, hangs, fails its standard, returns what cannot be compared) is recorded as
the baseline's error, `{"baseline": NAME, "error": ...}`: the candidate is then judged by its
standard alone, never failed nor passed by it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from suite.judge import benchmark
from suite.run.runner import CaseFailure, CaseSkip

WHO = "the accuracy baseline's process"


@dataclass
class DoubleBenchmark:
    """The run's double benchmark: the baseline's host, its --accuracy-baseline spec (the records
    name it) and the level (--accuracy-level)."""
    host: Any
    spec: str
    level: str = benchmark.DEFAULT_LEVEL
    who: str = "the accuracy baseline"      # its share of a memory estimate's message (Runner.fits)

    def _error(self, why: str) -> Dict[str, Any]:
        return {"accuracy": {"baseline": self.spec, "error": why}}

    def field(self, runner: Any, case: Any, nodeid: str, data: Any, got: Any) -> Dict[str, Any]:
        """The record's `accuracy` field for the candidate's result `got` (name -> array of each
        written output), as {"accuracy": ...}."""
        outs = got
        skip = [w for w in (benchmark.unsupported(a.dtype) for a in outs.values()) if w]
        if skip:
            return {"accuracy": {"baseline": self.spec, "level": self.level, "skipped": skip[0]}}
        try:
            base = self._baseline(runner, case, nodeid, data)
        except CaseFailure as e:            # (the summary's case id left out: the record has it)
            return self._error(f"the baseline did not return a result: {e.summary.split(': ', 1)[-1]}")
        except CaseSkip as e:
            return self._error(f"the baseline did not return a result: {e.reason}")
        if isinstance(base, str):
            return self._error(base)
        if set(base) != set(outs):
            return self._error(f"the baseline wrote {', '.join(map(str, base))}, the candidate "
                               f"{', '.join(map(str, outs))}")
        # each output against its own golden: the first's is data.golden, the others' data.others
        judged = {n: benchmark.judge(benchmark.measure(a, base[n], data.others.get(n, data.golden)), self.level)
                  for n, a in outs.items()}
        first = next(iter(outs))
        field: Dict[str, Any] = {"baseline": self.spec, **judged[first].to_json()}
        if len(outs) > 1:
            field["outputs"] = {n: j.to_json() for n, j in judged.items()}
            field["passed"] = all(j.passed for j in judged.values())
            field.pop("why", None)
            why = "; ".join(f"{n}: {j.why}" for n, j in judged.items() if j.why)
            if why:
                field["why"] = why
        return {"accuracy": field}

    def _baseline(self, runner: Any, case: Any, nodeid: str, data: Any) -> Any:
        """The baseline's result by output name, or why it cannot serve: it did not pass the
        case's standard. CaseFailure / CaseSkip: it did not return one."""
        o = runner._calls(case, data.inputs, nodeid, host=self.host, who=WHO)[0]
        got = runner._accepted(case, o, nodeid, named=True)
        std = runner.standard_for(case)
        for name, a in got.items():
            v = runner._judged(case, data, a, std, name)
            if not v.passed:
                who = f"{name} " if len(case.all_outputs) > 1 else ""
                return (f"the baseline's result fails the case's standard: {who}"
                        f"fails standard '{v.standard}': {v.why}")
        return got

    def failure(self, field: Mapping[str, Any]) -> Optional[str]:
        """The case's failure message when the double benchmark failed (None otherwise)."""
        if field.get("passed", True):
            return None
        return (f"fails the double benchmark at {self.level} against the accuracy baseline {self.spec}: "
                f"{field.get('why')} ({ratios_text(field)})")


def ratios_text(field: Mapping[str, Any]) -> str:
    """'MARE x1.02, MERE x2.00, RMSE x2.00, small x0' (the candidate's over the baseline's)."""
    r = field.get("ratios") or {}
    return ", ".join(f"{k.upper() if k != 'small' else k} " + ("-" if r.get(k) is None else f"x{r[k]:.3g}")
                     for k in (*benchmark.METRICS, "small"))
