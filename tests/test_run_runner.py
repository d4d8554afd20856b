"""The runner's verdict of one case, in pytest's own process (suite/run/runner.py): what a rejection
test, a numbers test and the timing hand-off decide, and the exact words and record of each failure.
The end-to-end runs drive the same code from another process, where mutmut cannot see it; these
drive it in-process so that a planted defect in the verdict fails a test here (docs/mutation-score.md)."""
from __future__ import annotations

import dataclasses
import shlex
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

from suite.backends.reference import ReferenceBackend
from suite.cases.load import load_cases
from suite.cases.model import Case, Kind
from suite.contract import AclnnError, DeviceFault
from suite.golden.source import GoldenError
from suite.golden.store import GoldenStore
from suite.judge.table import load_table
from suite.run.calls import InProcess
from suite.run.host import Fault
from suite.run.runner import CaseFailure, CaseSkip, Runner

ROOT = Path(__file__).resolve().parents[1]
NODE = "suite/conformance/test_x.py::t[{}]"


@lru_cache(maxsize=None)
def _cases():
    return load_cases([ROOT / "cases" / "mse_loss_backward.yaml"])[0]


def _rejection() -> Case:
    return next(c for c in _cases() if c.expect == 161002 and c.product == "atlas-training")


def _numbers() -> Case:
    return next(c for c in _cases() if c.expect == 0 and c.tier == "default" and c.layout == "contiguous"
                and c.out_shape is not None and len(c.out_shape) == 2 and c.out_dtype == "float32")


def _runner(backend: Any = None, host: Any = None, **kw: Any) -> Runner:
    host = host if host is not None else InProcess(backend if backend is not None else ReferenceBackend())
    return Runner(host, host.info, GoldenStore(ROOT / "golden"), load_table(ROOT / "cases" / "tolerances.yaml"), **kw)


def _failure(runner: Runner, kind: Kind, case: Case) -> CaseFailure:
    with pytest.raises(CaseFailure) as e:
        runner.check(kind, case, NODE.format(case.id))
    return e.value


class Accepting(ReferenceBackend):
    """Accepts every call: zeros of the out shape, never a status."""

    def run(self, call):
        return np.zeros(call.out_shape or (), dtype=call.out_dtype or np.float32)


class Status(ReferenceBackend):
    """Rejects every call with `status`."""

    def __init__(self, status: int) -> None:
        super().__init__()
        self.status = status

    def run(self, call):
        raise AclnnError(self.status, "no")


class Crashing(ReferenceBackend):
    def run(self, call):
        raise RuntimeError("boom")


class Dying(InProcess):
    """A host whose backend's process dies in every call."""

    def run(self, req, repeat=1, deadline=None):
        raise Fault("the backend's process died: signal 11 (SIGSEGV)", "signal 11 (SIGSEGV)")


def _reproduce(case: Case) -> str:
    return f"pytest 'suite/conformance/test_x.py::t[{case.id}]'"


# -- rejection ----------------------------------------------------------------------------------
def test_a_rejection_answered_with_its_status_passes_with_it() -> None:
    c = _rejection()
    assert _runner().check(Kind.REJECTION, c, NODE.format(c.id)) == {"status": 161002}


def test_a_call_aclnn_rejects_accepted_fails_with_the_expected_status_and_why() -> None:
    c = _rejection()
    f = _failure(_runner(Accepting()), Kind.REJECTION, c)
    assert f.summary == (f"{c.id}: the backend accepted a call that aclnn rejects with 161002 "
                         f"(ACLNN_ERR_PARAM_INVALID): {c.why}")
    assert (f.record, f.reproduce) == ({"status": 0}, _reproduce(c))


def test_a_rejection_with_another_status_fails_naming_both() -> None:
    c = _rejection()
    f = _failure(_runner(Status(561000)), Kind.REJECTION, c)
    assert f.summary == (f"{c.id}: status 561000 (ACLNN_ERR_INNER), expected 161002 "
                         f"(ACLNN_ERR_PARAM_INVALID): {c.why}")
    assert (f.record, f.reproduce) == ({"status": 561000}, _reproduce(c))


def test_a_crash_or_a_dead_process_in_a_rejection_test_fails_with_its_reproducer() -> None:
    c = _rejection()
    f = _failure(_runner(Crashing()), Kind.REJECTION, c)
    assert (f.summary, f.reproduce) == (f"{c.id}: the backend crashed: RuntimeError: boom", _reproduce(c))
    f = _failure(_runner(host=Dying(ReferenceBackend())), Kind.REJECTION, c)
    assert f.summary == f"{c.id}: the backend's process died: signal 11 (SIGSEGV)"
    assert (f.record, f.reproduce) == ({"fault": "signal 11 (SIGSEGV)"}, _reproduce(c))


# -- numbers ------------------------------------------------------------------------------------
def test_a_valid_call_rejected_fails_naming_the_status_as_aclnn_spells_it() -> None:
    c = _numbers()
    f = _failure(_runner(Status(161002)), Kind.NUMBERS, c)
    assert f.summary == (f"{c.id}: the backend rejected a valid call with status 161002 "
                         f"(ACLNN_ERR_PARAM_INVALID); the contract accepts it")
    assert (f.record, f.reproduce) == ({"status": 161002}, _reproduce(c))


def test_a_dead_process_in_a_numbers_test_fails_with_its_reproducer() -> None:
    c = _numbers()
    f = _failure(_runner(host=Dying(ReferenceBackend())), Kind.NUMBERS, c)
    assert (f.record, f.reproduce) == ({"fault": "signal 11 (SIGSEGV)"}, _reproduce(c))


class NoGolden:
    """A golden store that has none: a stale or missing golden."""

    def load(self, case):
        raise GoldenError("golden/x.npz: stale (regenerate)")

    inputs = load


def test_a_golden_that_cannot_be_read_fails_the_case_in_one_line() -> None:
    c = _numbers()
    r = _runner()
    r.store = NoGolden()
    f = _failure(r, Kind.NUMBERS, c)
    assert str(f) == f.summary == f"{c.id}: golden/x.npz: stale (regenerate)"
    assert f.reproduce is None and f.record == {}
    d = _det()                                  # a determinism test reads the inputs alone
    f = _failure(r, Kind.DETERMINISM, d)
    assert str(f) == f"{d.id}: golden/x.npz: stale (regenerate)" and f.reproduce is None


class Timer:
    """pytest --timing's stand-in: what after_numbers was given."""

    def __init__(self) -> None:
        self.given: Optional[tuple] = None

    def after_numbers(self, runner, case, nodeid):
        self.given = (runner, case, nodeid)
        return {"timed": True}


def test_a_timing_case_is_handed_to_the_timer_and_no_other_case_is() -> None:
    c = _numbers()
    timed = dataclasses.replace(c, timing=True)
    t = Timer()
    r = _runner(timer=t)
    assert r.check(Kind.NUMBERS, timed, "n") == {"timed": True} and t.given == (r, timed, "n")
    t.given = None
    assert r.check(Kind.NUMBERS, c, "n")["status"] == 0 and t.given is None       # not in the timing set
    assert _runner().check(Kind.NUMBERS, timed, "n")["status"] == 0                # no --timing: judged


def test_a_skip_says_its_reason() -> None:
    e = CaseSkip("backend cannot express this call: no")
    assert (str(e), e.reason, e.args) == ("backend cannot express this call: no",) * 2 + (
        ("backend cannot express this call: no",),)


# -- a device fault, a result of the wrong kind ---------------------------------------------------
class Faulting(ReferenceBackend):
    def __init__(self, recovered: bool) -> None:
        super().__init__()
        self.recovered = recovered

    def run(self, call):
        raise DeviceFault("aicore exception", 507015, recovered=self.recovered)


def test_a_device_fault_fails_the_case_and_stops_the_run_only_when_the_device_is_lost() -> None:
    c = _numbers()
    f = _failure(_runner(Faulting(True)), Kind.NUMBERS, c)
    assert f.summary == (f"{c.id}: device fault: aicore exception (status 507015); the backend reset the "
                         f"device, the next case runs on a fresh one")
    assert (f.record, f.stop, f.reproduce) == ({"fault": "device"}, None, _reproduce(c))
    f = _failure(_runner(Faulting(False)), Kind.NUMBERS, c)
    assert f.summary == (f"{c.id}: device fault: aicore exception (status 507015); the backend could not "
                         f"recover the device, so the run stops here")
    assert f.stop == (f"{c.id}: device fault, and the backend could not recover the device: "
                      f"aicore exception (status 507015)")
    assert (f.record, f.reproduce) == ({"fault": "device lost"}, _reproduce(c))


class Listing(ReferenceBackend):
    def run(self, call):
        return [1.0, 2.0]


class WrongShape(ReferenceBackend):
    def run(self, call):
        return np.zeros((1,), dtype=np.float16)


def test_a_result_of_the_wrong_kind_fails_saying_what_came_back_and_what_out_is() -> None:
    c = _numbers()
    out = f"out is shape {tuple(c.out_shape)} dtype {c.out_dtype}"
    f = _failure(_runner(Listing()), Kind.NUMBERS, c)
    assert f.summary == f"{c.id}: the backend returned list, not a numpy array; {out}" and f.reproduce == _reproduce(c)
    f = _failure(_runner(WrongShape()), Kind.NUMBERS, c)
    assert f.summary == f"{c.id}: the backend returned shape (1,) dtype float16; {out}"


# -- the failure's words: what it says, its reproducer --------------------------------------------
class Doubling(ReferenceBackend):
    """Twice the right result, plus one: a numbers failure."""

    def run(self, call):
        out = np.asarray(super().run(call))
        return (out * 2 + 1).astype(out.dtype)


def test_a_numbers_failure_names_out_the_standard_and_keeps_the_worst_elements() -> None:
    c = _numbers()
    f = _failure(_runner(Doubling()), Kind.NUMBERS, c)
    assert f.summary.startswith(f"{c.id}: out float32{list(c.out_shape)} fails standard '"), f.summary
    assert f.record["status"] == 0 and f.record["max_ulp"] > 1 and f.record["n_over"] + f.record["mismatches"] > 0
    assert f.record["worst"] and all(w["why"] in ("mismatch", "gross", "over", "") for w in f.record["worst"])
    assert f.reproduce == _reproduce(c) and str(f).splitlines()[0] == f.summary
    assert str(f).splitlines()[-1] == f"  reproduce: {_reproduce(c)}" and len(str(f).splitlines()) > 2


class SecondDiffers(ReferenceBackend):
    """Its second call differs in the last bit of every element."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def run(self, call):
        self.calls += 1
        out = np.array(super().run(call))
        if self.calls == 2:
            out = (out.view(np.uint32) ^ 1).view(out.dtype) if out.dtype == np.float32 else out + 1
        return out


def test_a_determinism_failure_has_the_reproducer_of_its_test() -> None:
    c = next(x for x in _cases() if x.determinism and x.tier == "default" and x.out_dtype == "float32"
             and x.layout == "contiguous" and x.out_shape and ops_deterministic(x))
    f = _failure(_runner(SecondDiffers()), Kind.DETERMINISM, c)
    assert "two runs on identical inputs differ in" in f.summary and f.reproduce == _reproduce(c)


def ops_deterministic(case: Case) -> bool:
    from suite import ops
    return ops.get(case.op).deterministic_on(case.product, dict(case.attrs))


@pytest.mark.parametrize("invoked, test_path, nodeid, want", [
    # started at the root: the node id's own file
    ("", "suite/conformance/test_x.py", "suite/conformance/test_x.py::t[k]", "suite/conformance/test_x.py::t[k]"),
    # started below the root: the file relative to there; a '::' in the parameters is kept
    ("suite", "suite/conformance/test_x.py", "suite/conformance/test_x.py::t[a::b]", "conformance/test_x.py::t[a::b]"),
    # started beside it: the file's absolute path
    ("docs", "suite/conformance/test_x.py", "suite/conformance/test_x.py::t[k]", "{root}/suite/conformance/test_x.py::t[k]"),
    # no test file known, or no invocation folder, or a node id without '::': as it is
    ("", None, "suite/conformance/test_x.py::t[k]", "suite/conformance/test_x.py::t[k]"),
    (None, "suite/conformance/test_x.py", "x/test_x.py::t[k]", "x/test_x.py::t[k]"),
    ("suite", "suite/conformance/test_x.py", "t[k]", "t[k]"),
])
def test_the_reproducer_names_the_test_as_a_command_started_there_can(invoked, test_path, nodeid, want) -> None:
    r = _runner(invocation_dir=None if invoked is None else ROOT / invoked,
                test_path=None if test_path is None else ROOT / test_path, replay=" --backend=x")
    want = want.format(root=ROOT)
    assert r.address(nodeid) == want and r.reproducer(nodeid) == f"pytest {shlex.quote(want)} --backend=x"


# -- the rounding path the first output is judged through (tests/test_rounding_path.py, three cases) --
NAMED = "MseLossBackward-float16-to-float32-atlas-a2-mean-2x3.2x3.2x3-contiguous-uniform"
THROUGH = "MseLossBackward-float16-to-bfloat16-atlas-a2-none-9x17.9x17.9x17-contiguous-uniform"   # needs `through`
VENDOR = "KlDivBackward-float16-atlas-a2-none-plaintarget-6x5.5.6x5-contiguous-large"            # needs `vendor`


@lru_cache(maxsize=None)
def _all_cases():
    return load_cases([ROOT / "cases" / "mse_loss_backward.yaml", ROOT / "cases" / "kl_div_backward.yaml"])[0]


def test_a_kernel_rounding_as_documented_passes_and_one_through_another_dtype_fails() -> None:
    """Each case here fails the documented kernel when judged without its path's `through` (THROUGH)
    or without its vendor window (VENDOR): found by judging every path case so (1872 of them)."""
    from tests.test_rounding_path import ThroughInputs, ThroughTheOther
    by_id = {x.id: x for x in _all_cases()}
    r = _runner(ThroughInputs())
    for cid in (NAMED, THROUGH, VENDOR):
        assert r.check(Kind.NUMBERS, by_id[cid], "n")["status"] == 0, cid
    f = _failure(_runner(ThroughTheOther()), Kind.NUMBERS, by_id[NAMED])
    assert f.summary.startswith(f"{NAMED}: out float32[2, 3] fails standard '")


# -- determinism: each way two runs can disagree, with its words and reproducer --------------------
from suite.run.bits import digest_of  # noqa: E402
from suite.run.output import Log  # noqa: E402
from tests.test_run_determinism import Drifting, WithTwin  # noqa: E402

TWO_RUNS = ("two runs on identical inputs differ in {n} of {size} elements (the operator is documented as "
            "deterministic)")
SECOND = ("a run in the backend's second process, on the same inputs received into fresh memory, differs from "
          "the first process's in {n} of {size} elements (two runs in one process agree: a result remembered "
          "there, not recomputed; the operator is documented as deterministic)")
EARLIER = ("the same call earlier in this session gave other bits (the runs now agree with each other: a result "
           "that changes with time or with what ran before; the operator is documented as deterministic)")


def _det() -> Case:
    """A deterministic float32 case of MseLossBackward whose out is self's shape (reduction none)."""
    return next(x for x in _cases() if x.determinism and x.tier == "default" and x.out_dtype == "float32"
                and x.dtypes["self"] == "float32" and x.layout == "contiguous" and x.attrs["reduction"] == 0
                and x.out_shape and tuple(x.out_shape) == tuple(x.shapes["self"]) and len(x.out_shape) == 2
                and ops_deterministic(x))


def _size(c: Case) -> int:
    return int(np.prod(c.out_shape))


def test_two_runs_that_differ_fail_with_the_count_and_the_reproducer() -> None:
    c = _det()
    f = _failure(_runner(Drifting([0])), Kind.DETERMINISM, c)
    assert f.summary == f"{c.id}: " + TWO_RUNS.format(n=1, size=_size(c)) and f.reproduce == _reproduce(c)


def test_the_second_process_that_differs_fails_with_its_own_words() -> None:
    c = _det()
    f = _failure(_runner(host=WithTwin(ReferenceBackend(), Drifting([0, 1], bad=1))), Kind.DETERMINISM, c)
    assert f.summary == f"{c.id}: " + SECOND.format(n=2, size=_size(c)) and f.reproduce == _reproduce(c)


def test_a_second_process_that_dies_is_named_as_the_second() -> None:
    c = _det()
    host = WithTwin(ReferenceBackend(), ReferenceBackend())
    host._twin = Dying(ReferenceBackend())
    f = _failure(_runner(host=host), Kind.DETERMINISM, c)
    assert f.summary == f"{c.id}: the backend's second process: the backend's process died: signal 11 (SIGSEGV)"
    assert (f.record, f.reproduce) == ({"fault": "signal 11 (SIGSEGV)"}, _reproduce(c))


class NanPayloads(ReferenceBackend):
    """All NaN, its payload alternating between calls: NaN matches any NaN, the bits do not."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def run(self, call):
        self.calls += 1
        return self.nan(call, 0x7FC00001 if self.calls % 2 else 0x7FC00002)

    @staticmethod
    def nan(call, bits):
        return np.full(call.out_shape, bits, dtype=np.uint32).view(np.float32)


def test_the_first_runs_bits_are_compared_with_the_numbers_tests() -> None:
    """The runs agree (NaN matches NaN) but the first one's bits are not the numbers test's."""
    c = _det()
    r = _runner(NanPayloads())
    shape_call = type("C", (), {"out_shape": tuple(c.out_shape)})
    r.earlier[c.id] = (digest_of({"out": NanPayloads.nan(shape_call, 0x7FC00002)}), "the numbers test")
    f = _failure(r, Kind.DETERMINISM, c)
    assert f.summary == f"{c.id}: {EARLIER}" and f.reproduce == _reproduce(c)
    assert str(f).splitlines()[1] == "  earlier: the numbers test"
    r.earlier[c.id] = (digest_of({"out": NanPayloads.nan(shape_call, 0x7FC00001)}), "the numbers test")
    assert r.check(Kind.DETERMINISM, c, "n") == {"status": 0, "deterministic": True}


class Echo(ReferenceBackend):
    """Returns its input self: a view of an input, not a result."""

    def run(self, call):
        return call.inputs["self"]


def test_a_result_that_is_an_input_fails_the_determinism_test() -> None:
    c = _det()
    f = _failure(_runner(Echo()), Kind.DETERMINISM, c)
    assert f.summary == (f"{c.id}: the result shares memory with input self: the backend returned a view of its "
                         f"input, not a result of its own") and f.reproduce == _reproduce(c)


class Printing(InProcess):
    """A host whose backend's process printed something in each call."""

    def take_output(self):
        log = Log()
        log.add(b"hello\n")
        return log


def test_what_the_backends_process_printed_is_in_the_failure_named_by_who_printed_it() -> None:
    c = _rejection()
    f = _failure(_runner(host=Printing(Accepting())), Kind.REJECTION, c)
    assert str(f).splitlines()[1:3] == ["  the backend's process wrote 6 bytes to its stdout and stderr:",
                                        "    | hello"]
    c = _det()
    host = WithTwin(ReferenceBackend(), ReferenceBackend())
    host._twin = Printing(Drifting([0], bad=1))
    f = _failure(_runner(host=host), Kind.DETERMINISM, c)
    assert "  the backend's second process wrote 6 bytes to its stdout and stderr:" in str(f).splitlines()


class Timed(InProcess):
    """A host that gives each call a deadline of its elements, and keeps what it was asked."""

    def __init__(self, backend) -> None:
        super().__init__(backend)
        self.asked = []

    def deadline_for(self, elements: int) -> float:
        return float(elements)

    def run(self, req, repeat=1, deadline=None):
        self.asked.append((repeat, deadline))
        return super().run(req, repeat, deadline)


def test_each_test_makes_its_calls_with_a_deadline_for_its_elements() -> None:
    c = _numbers()          # inputs and out of one shape
    n = int(np.prod(c.out_shape))
    h = Timed(ReferenceBackend())
    _runner(host=h).check(Kind.NUMBERS, c, "n")
    assert h.asked == [(1, float(3 * n + n))]                 # one call: three inputs and out
    d = _det()
    h = Timed(ReferenceBackend())
    _runner(host=h).check(Kind.DETERMINISM, d, "n")
    assert h.asked == [(2, float(4 * _size(d)))]
    r = _rejection()
    h = Timed(Status(161002))
    _runner(host=h).check(Kind.REJECTION, r, "n")
    ins = sum(int(np.prod(s)) for s in r.shapes.values() if s is not None)
    assert h.asked == [(1, float(ins + (int(np.prod(r.out_shape)) if r.out_shape is not None else 1)))]


def test_output_taken_without_a_name_is_the_backends_process() -> None:
    """suite/perf/case.py takes the timing rounds' output so, unnamed."""
    h = Printing(ReferenceBackend())
    r = _runner(host=h)
    r._take_output(h)
    assert [(who, log.total) for who, log in r.output] == [("the backend's process", 6)]


# -- memory: a case this machine cannot hold is skipped, with the numbers --------------------------
class Hungry(ReferenceBackend):
    working_memory = 2.0


class Copying(InProcess):
    copies = 1                                  # a process of its own: its copy of the arrays


@pytest.mark.parametrize("kind, pick", [(Kind.NUMBERS, _numbers), (Kind.DETERMINISM, lambda: _det())])
def test_a_case_that_needs_more_memory_than_allowed_is_skipped_saying_both(kind, pick, monkeypatch) -> None:
    from suite.run import memory
    c = dataclasses.replace(pick(), generated=True)          # computed on demand, not committed
    want = memory.need(c, kind, 2.0, 1)
    # each of kind, working memory and copies counts: without any of them it would fit in want - 1
    assert want > max(memory.need(c, None, 2.0, 1), memory.need(c, kind, 0.0, 1), memory.need(c, kind, 2.0, 0))
    r = _runner(host=Copying(Hungry()), max_memory=want - 1)
    with pytest.raises(CaseSkip) as e:
        r.fits(c, kind)
    assert e.value.reason == f"needs about {memory.fmt(want)} of memory for its arrays; {memory.fmt(want - 1)} --max-memory"
    _runner(host=Copying(Hungry()), max_memory=want).fits(c, kind)            # exactly enough: runs
    monkeypatch.setattr(memory, "available", lambda: want - 1)
    with pytest.raises(CaseSkip) as e:
        _runner(host=Copying(Hungry())).fits(c, kind)
    assert e.value.reason.endswith(f"; {memory.fmt(want - 1)} available now")
    monkeypatch.setattr(memory, "available", lambda: None)                     # not known: runs
    _runner(host=Copying(Hungry())).fits(c, kind)
    _runner(host=Copying(Hungry()), max_memory=1).fits(pick(), kind)           # committed: never skipped


class _Timer:
    """What fits reads of `--timing-baseline`: the baseline's host, its working memory and copies."""

    def __init__(self, working: Optional[float], copies: int) -> None:
        from types import SimpleNamespace
        info = SimpleNamespace() if working is None else SimpleNamespace(working_memory=working)   # None: it says none
        self.baseline = SimpleNamespace(host=SimpleNamespace(info=info, copies=copies))


def test_a_timed_numbers_test_counts_the_timing_baselines_share_and_says_how_much() -> None:
    from suite.run import memory
    c = dataclasses.replace(_numbers(), generated=True, timing=True)
    alone, both = memory.need(c, Kind.NUMBERS, 2.0, 1), memory.need(c, Kind.NUMBERS, 2.0, 1, (40.0, 1))
    assert both > alone
    timed = _runner(host=Copying(Hungry()), max_memory=alone, timer=_Timer(40.0, 1))
    with pytest.raises(CaseSkip) as e:
        timed.fits(c, Kind.NUMBERS)
    assert e.value.reason == (f"needs about {memory.fmt(both)} of memory for its arrays "
                              f"({memory.fmt(memory.baseline_share(c, 40.0, 1))} of it the timing baseline's copy); "
                              f"{memory.fmt(alone)} --max-memory")
    # the baseline's own working memory (40), not this backend's or the default: exactly `both` fits,
    # a byte less does not; a baseline that says none is counted with memory.WORKING_MEMORY
    _runner(host=Copying(Hungry()), max_memory=both, timer=_Timer(40.0, 1)).fits(c, Kind.NUMBERS)
    with pytest.raises(CaseSkip):
        _runner(host=Copying(Hungry()), max_memory=both - 1, timer=_Timer(40.0, 1)).fits(c, Kind.NUMBERS)
    default = memory.need(c, Kind.NUMBERS, 2.0, 1, (memory.WORKING_MEMORY, 1))
    assert alone < default < both
    _runner(host=Copying(Hungry()), max_memory=default, timer=_Timer(None, 1)).fits(c, Kind.NUMBERS)
    with pytest.raises(CaseSkip):
        _runner(host=Copying(Hungry()), max_memory=default - 1, timer=_Timer(None, 1)).fits(c, Kind.NUMBERS)
    timed.fits(dataclasses.replace(c, timing=False), Kind.NUMBERS)       # not timed: its own share only
    _runner(host=Copying(Hungry()), max_memory=alone).fits(c, Kind.NUMBERS)          # no baseline
    det = memory.need(c, Kind.DETERMINISM, 2.0, 1)
    _runner(host=Copying(Hungry()), max_memory=det, timer=_Timer(3.0, 1)).fits(c, Kind.DETERMINISM)  # not timed


@pytest.mark.parametrize("kind, pick", [(Kind.NUMBERS, _numbers), (Kind.DETERMINISM, lambda: _det())])
def test_each_test_asks_for_the_memory_of_its_own_kind_before_it_calls(kind, pick) -> None:
    """The test itself (not only `fits`) skips, by its kind's estimate: one under it, where the
    estimate without the kind would fit, skips before any call is made."""
    from suite.run import memory
    c = dataclasses.replace(pick(), generated=True)
    want = memory.need(c, kind, 2.0, 1)
    assert memory.need(c, None, 2.0, 1) <= want - 1
    with pytest.raises(CaseSkip, match=f"needs about {memory.fmt(want)} of memory"):
        _runner(host=Copying(Hungry()), max_memory=want - 1).check(kind, c, "t")


def test_a_device_fault_or_a_dead_process_in_a_determinism_test_fails_with_its_reproducer() -> None:
    c = _det()
    f = _failure(_runner(Faulting(True)), Kind.DETERMINISM, c)
    assert (f.record, f.reproduce) == ({"fault": "device"}, _reproduce(c))
    f = _failure(_runner(host=Dying(ReferenceBackend())), Kind.DETERMINISM, c)
    assert (f.record, f.reproduce) == ({"fault": "signal 11 (SIGSEGV)"}, _reproduce(c))


def test_a_valid_call_rejected_in_a_determinism_test_is_failed_without_the_status_name() -> None:
    c = _det()
    f = _failure(_runner(Status(161002)), Kind.DETERMINISM, c)
    assert f.summary == f"{c.id}: the backend rejected a valid call with status 161002"
    assert (f.record, f.reproduce) == ({"status": 161002}, _reproduce(c))
    f = _failure(_runner(Listing()), Kind.DETERMINISM, c)
    assert f.summary.startswith(f"{c.id}: the backend returned list, not a numpy array") and f.reproduce == _reproduce(c)


def test_a_request_names_out_only_where_the_case_has_both_its_shape_and_dtype() -> None:
    from suite.run.runner import request_of
    bce = load_cases([ROOT / "cases" / "binary_cross_entropy_backward.yaml"])[0]
    null_out = next(c for c in bce if c.out_shape is None and c.out_dtype is not None)
    req = request_of(null_out, {})
    assert (req["out_shape"], req["out_dtype"]) == (None, None) and req["outputs"][0][:2] == ["out", None]
    from suite.run.calls import call_of
    assert call_of({**req, "inputs": {}}).out_dtype is None
    c = _numbers()
    req = request_of(c, {})
    assert (req["out_shape"], req["out_dtype"]) == (tuple(c.out_shape), "float32")
    assert list(req["inputs"]) == ["gradOutput", "self", "target"] and set(req["inputs"].values()) == {None}


class Unsupporting(ReferenceBackend):
    def run(self, call):
        from suite.contract import Unsupported
        raise Unsupported("no bfloat16 here")


class BadStatus(ReferenceBackend):
    """Raises an AclnnError whose status is no int: the contract broken."""

    def run(self, call):
        e = AclnnError(161002)
        e.status = "161002"
        raise e


@pytest.mark.parametrize("kind, pick", [(Kind.NUMBERS, _numbers), (Kind.REJECTION, _rejection)])
def test_what_a_backend_cannot_do_or_did_wrong_is_a_skip_a_crash_or_a_broken_contract(kind, pick) -> None:
    c = pick()
    with pytest.raises(CaseSkip) as e:
        _runner(Unsupporting()).check(kind, c, "n")
    assert e.value.reason == str(e.value) == "backend cannot express this call: no bfloat16 here"
    f = _failure(_runner(Crashing()), kind, c)
    assert (f.summary, f.reproduce) == (f"{c.id}: the backend crashed: RuntimeError: boom", _reproduce(c))
    f = _failure(_runner(BadStatus()), kind, c)
    assert f.summary == (f"{c.id}: the backend broke its contract: AclnnError's status is '161002' (str), "
                         f"not an int") and f.reproduce == _reproduce(c) and f.record == {}


# -- a determinism test judged within standard (an operator not deterministic on a product) -------
class Counting(ReferenceBackend):
    """Counts its calls; from call `bad` on its results are 1.5 times the right ones."""

    def __init__(self, bad: int = 0) -> None:
        super().__init__()
        self.calls, self.bad = 0, bad

    def run(self, call):
        self.calls += 1
        out = np.asarray(super().run(call))
        return (out * np.float32(1.5)).astype(out.dtype) if self.bad and self.calls >= self.bad else out


@pytest.fixture
def judged_twice(monkeypatch) -> Case:
    """_det()'s case, its operator declared not deterministic on the case's product."""
    from suite import ops
    c = _det()
    monkeypatch.setattr(ops.get(c.op), "nondeterministic", {c.product: {}})
    assert not ops_deterministic(c)
    return c


def test_judged_twice_calls_the_second_process_too_and_judges_each_run(judged_twice) -> None:
    c = judged_twice
    first, second = Counting(), Counting()
    rec = _runner(host=WithTwin(first, second)).check(Kind.DETERMINISM, c, "n")
    assert (first.calls, second.calls) == (2, 1) and rec["deterministic"] is False
    assert rec["note"] == (f"not deterministic on {c.product} by its contract: judged twice in one process "
                           f"and once in the second within standard")
    f = _failure(_runner(host=WithTwin(Counting(bad=2), Counting())), Kind.DETERMINISM, c)
    assert f.summary.startswith(f"{c.id}: run 2 of 3 fails standard '") and f.reproduce == _reproduce(c)
    assert f.summary.endswith(f"({rec['note']})")                  # the three runs' words
    f = _failure(_runner(host=WithTwin(Counting(), Counting(bad=1))), Kind.DETERMINISM, c)
    assert f.summary.startswith(f"{c.id}: run 3 of 3 fails standard '") and f.reproduce == _reproduce(c)


def test_judged_twice_fails_a_dead_second_process_a_rejection_and_an_aliased_result(judged_twice) -> None:
    c = judged_twice
    host = WithTwin(ReferenceBackend(), ReferenceBackend())
    host._twin = Printing(ReferenceBackend())
    host._twin.run = Dying(ReferenceBackend()).run
    f = _failure(_runner(host=host), Kind.DETERMINISM, c)
    assert f.summary == f"{c.id}: the backend's second process: the backend's process died: signal 11 (SIGSEGV)"
    assert (f.record, f.reproduce) == ({"fault": "signal 11 (SIGSEGV)"}, _reproduce(c))
    assert "  the backend's second process wrote 6 bytes to its stdout and stderr:" in str(f).splitlines()
    f = _failure(_runner(Status(161002)), Kind.DETERMINISM, c)
    assert f.summary == f"{c.id}: the backend rejected a valid call with status 161002" and f.reproduce == _reproduce(c)
    f = _failure(_runner(Echo()), Kind.DETERMINISM, c)
    assert f.summary == (f"{c.id}: the result shares memory with input self: the backend returned a view of its "
                         f"input, not a result of its own") and f.reproduce == _reproduce(c)
    f = _failure(_runner(host=Dying(ReferenceBackend())), Kind.DETERMINISM, c)
    assert f.reproduce == _reproduce(c) and f.summary == f"{c.id}: the backend's process died: signal 11 (SIGSEGV)"


def test_the_note_of_a_determinism_test_judged_within_standard() -> None:
    from suite.run.runner import nondeterministic_note
    c = _det()
    assert nondeterministic_note(c) == nondeterministic_note(c, 2) == (
        f"not deterministic on {c.product} by its contract: judged twice within standard")
    assert nondeterministic_note(c, 3) == (f"not deterministic on {c.product} by its contract: judged twice in "
                                           f"one process and once in the second within standard")


class Then(ReferenceBackend):
    """Returns the given results in turn."""

    def __init__(self, *outs) -> None:
        super().__init__()
        self.outs = list(outs)

    def run(self, call):
        return self.outs.pop(0).copy()


def test_judged_twice_keeps_the_worst_runs_metrics_and_fails_with_the_runs_own(judged_twice) -> None:
    """Two runs in one process: the record is the worse run's metrics, and a failing run's record
    is that run's, its words naming the run."""
    from suite.run.runner import build_call
    c = judged_twice
    r = _runner()
    data = r.store.load(c)
    good = np.asarray(ReferenceBackend().run(build_call(c, data.inputs)))
    std = r.standard_for(c)
    worse = good.copy()
    worse.reshape(-1)[0] *= np.float32(1.00002)        # one element 2e-5 off: within the standard's 1e-4
    m = r._judged(c, data, worse, std)
    assert m.passed and m.max_ulp > r._judged(c, data, good, std).max_ulp
    note = f"not deterministic on {c.product} by its contract: judged twice within standard"
    for runs in ((good, worse), (worse, good)):
        rec = _runner(Then(*runs)).check(Kind.DETERMINISM, c, "n")
        assert rec == {"status": 0, "deterministic": False, **m.metrics(), "note": note}
    tie = worse.copy()
    tie.reshape(-1)[1] *= np.float32(1.00001)           # as bad at worst, more off on average: the first kept
    t = r._judged(c, data, tie, std)
    assert t.max_ulp == m.max_ulp and t.metrics() != m.metrics()
    assert _runner(Then(worse, tie)).check(Kind.DETERMINISM, c, "n") == {
        "status": 0, "deterministic": False, **m.metrics(), "note": note}
    bad = (good * np.float32(1.5)).astype(good.dtype)
    f = _failure(_runner(Then(good, bad)), Kind.DETERMINISM, c)
    v = r._judged(c, data, bad, std)
    assert f.summary == f"{c.id}: run 2 of 2 fails standard '{v.standard}': {v.why} ({note})"
    assert f.record == {"status": 0, **v.metrics()} and f.reproduce == _reproduce(c)
