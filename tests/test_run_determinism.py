"""The determinism verdict in-process (suite/run/runner.py Runner.check_determinism and _same): two
calls and the second process's call must be bit-identical, NaN matching any NaN; a difference
fails the case with the count and the first differing elements. And which kinds of case a
backend's own declarations keep from running (not_run_because). Fast: no pytest of its own."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

from suite.common import dtypes
from suite.run.backend import BackendInfo
from suite.backends.reference import ReferenceBackend
from suite.cases.model import Kind
from suite.cases.load import load_cases
from suite.golden.store import GoldenStore
from suite.run.calls import InProcess
from suite.run.runner import CaseFailure, Runner, build_call, not_run_because
from suite.judge.table import load_table

ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=None)
def _mse_cases():
    return load_cases([ROOT / "cases" / "mse_loss_backward.yaml"])[0]


def _case(dtype: str):
    """A small determinism case of `dtype` with at least 8 output elements."""
    return next(c for c in _mse_cases() if c.determinism and c.tier == "default" and c.product == "atlas-a2"
                and c.id.startswith(f"MseLossBackward-{dtype}-") and c.layout == "contiguous"
                and c.out_shape is not None and int(np.prod(c.out_shape)) >= 8)


class Drifting(ReferenceBackend):
    """Correct on its first call; from call `bad` on, the last bit of elements `where` flips."""

    def __init__(self, where=(), bad: int = 2, fill: Optional[list] = None) -> None:
        super().__init__()
        self.where, self.bad, self.fill, self.calls = list(where), bad, fill, 0

    def run(self, call):
        self.calls += 1
        out = np.array(super().run(call))
        if self.fill is not None:                  # fixed bit patterns, one per call
            bits = np.full(out.shape, self.fill[min(self.calls, len(self.fill)) - 1], dtype=dtypes.to_bits(out).dtype)
            return bits.view(out.dtype)
        if self.calls >= self.bad and self.where:
            flat = dtypes.to_bits(out).reshape(-1)
            flat[self.where] ^= 1
        return out


class WithTwin(InProcess):
    """A host with a second process (suite.run.host.Hosted.twin): another backend object."""

    def __init__(self, first, second) -> None:
        super().__init__(first)
        self._twin = InProcess(second)

    def twin(self):
        return self._twin


def _runner(host) -> Runner:
    return Runner(host, host.info, GoldenStore(ROOT / "golden"), load_table(ROOT / "cases" / "tolerances.yaml"))


def _check(host, case):
    return _runner(host).check(Kind.DETERMINISM, case, f"suite/conformance/test_determinism.py::t[{case.id}]")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_a_deterministic_backend_passes_in_one_process_and_two(dtype):
    case = _case(dtype)
    assert _check(InProcess(ReferenceBackend()), case) == {"status": 0, "deterministic": True}
    assert _check(WithTwin(ReferenceBackend(), ReferenceBackend()), case) == {"status": 0, "deterministic": True}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_one_flipped_bit_in_the_second_call_fails_with_where(dtype):
    case = _case(dtype)
    size, last = int(np.prod(case.out_shape)), int(np.prod(case.out_shape)) - 1
    with pytest.raises(CaseFailure) as e:
        _check(InProcess(Drifting([last])), case)
    msg = str(e.value)
    assert f"two runs on identical inputs differ in 1 of {size} elements" in msg, msg
    good = ReferenceBackend().run(build_call(case, GoldenStore(ROOT / "golden").inputs(case)))
    index = tuple(int(i) for i in np.unravel_index(last, case.out_shape))
    first = float(np.asarray(good).reshape(-1)[last])
    assert f"    index {index}: first {first!r}, second " in msg, msg


def test_many_differences_are_counted_and_the_first_five_named():
    case = _case("float32")
    where = [0, 1, 2, 3, 4, 5, 6]
    with pytest.raises(CaseFailure) as e:
        _check(InProcess(Drifting(where)), case)
    msg = str(e.value)
    assert f"differ in 7 of {int(np.prod(case.out_shape))} elements" in msg
    named = [ln for ln in msg.splitlines() if ln.startswith("    index ")]
    assert [ln.split(":")[0] for ln in named] == [
        f"    index {tuple(int(i) for i in np.unravel_index(j, case.out_shape))}" for j in range(5)]


def test_nan_matches_any_nan_but_not_a_number():
    case = _case("float32")
    nan_a, nan_b, one = 0x7FC00000, 0x7FC00001, 0x3F800000     # two NaN payloads, and 1.0
    assert _check(InProcess(Drifting(fill=[nan_a, nan_b])), case)["deterministic"] is True
    with pytest.raises(CaseFailure, match="differ in"):
        _check(InProcess(Drifting(fill=[nan_a, one])), case)
    with pytest.raises(CaseFailure, match="differ in"):
        _check(InProcess(Drifting(fill=[one, nan_a])), case)


def test_a_result_remembered_in_the_first_process_fails_against_the_second():
    """Two calls in the first process agree; the second process computes something else."""
    case = _case("float32")
    with pytest.raises(CaseFailure) as e:
        _check(WithTwin(ReferenceBackend(), Drifting([3], bad=1)), case)
    msg = str(e.value)
    assert "a run in the backend's second process" in msg and "differs from the first process's in 1 of" in msg
    assert "two runs on identical inputs" not in msg


def test_a_difference_in_the_first_process_is_named_before_the_second():
    case = _case("float32")
    with pytest.raises(CaseFailure) as e:
        _check(WithTwin(Drifting([2]), ReferenceBackend()), case)
    assert "two runs on identical inputs differ in 1 of" in str(e.value)


NUMBERS_NODE = "suite/conformance/test_numerics.py::test_results[{}]"


@pytest.mark.parametrize("twin", [False, True], ids=["one-process", "two-processes"])
def test_a_result_that_changed_since_the_numbers_test_fails(twin):
    """Correct when the case's numbers test called it; later every call (in either process) gives
    the same other bits: the runs agree with each other, not with the same call earlier."""
    case = _case("float32")
    later = Drifting([4], bad=2)
    host = WithTwin(later, Drifting([4], bad=1)) if twin else InProcess(later)
    runner = _runner(host)
    node = NUMBERS_NODE.format(case.id)
    assert runner.check(Kind.NUMBERS, case, node)["status"] == 0
    with pytest.raises(CaseFailure) as e:
        runner.check(Kind.DETERMINISM, case, f"suite/conformance/test_determinism.py::t[{case.id}]")
    msg = str(e.value)
    assert "the same call earlier in this session gave other bits" in msg and f"earlier: {node}" in msg, msg
    assert "two runs on identical inputs" not in msg and "second process" not in msg


def test_the_same_bits_as_the_numbers_test_pass_and_other_cases_are_not_compared():
    case = _case("float32")
    runner = _runner(InProcess(ReferenceBackend()))
    runner.check(Kind.NUMBERS, case, NUMBERS_NODE.format(case.id))
    assert set(runner.earlier) == {case.id}
    assert runner.check(Kind.DETERMINISM, case, "d")["deterministic"] is True
    other = _case("float16")          # its numbers test did not run in this session: nothing to compare
    assert _runner(InProcess(Drifting([0], bad=1))).check(Kind.DETERMINISM, other, "d")["deterministic"]
    no_determinism = next(c for c in _mse_cases() if not c.determinism and c.expect == 0 and c.tier == "default"
                          and c.product == "atlas-a2" and c.elements < 4096)
    runner.check(Kind.NUMBERS, no_determinism, "n")
    assert set(runner.earlier) == {case.id}       # only cases with a determinism test are remembered


@pytest.mark.parametrize("caps,deterministic,kind,why", [
    (frozenset(), True, Kind.REJECTION, "backend b does not claim 'status' (aclnn's parameter validation)"),
    (frozenset({"status"}), True, Kind.REJECTION, None),
    (frozenset({"status"}), False, Kind.DETERMINISM, "backend b declares itself nondeterministic (deterministic = False)"),
    (frozenset(), True, Kind.DETERMINISM, None),
    (frozenset(), False, Kind.NUMBERS, None),
])
def test_what_a_backends_declarations_keep_from_running(caps, deterministic, kind, why):
    info = BackendInfo(name="b", capabilities=caps, products=("atlas-a2",), deterministic=deterministic,
                       working_memory=2.0)
    assert not_run_because(kind, info) == why
