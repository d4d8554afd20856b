"""What one call of a backend came to (suite/run/calls.py), in pytest's own process: a backend's own
words kept as text and cut at MAX_WORDS with the count of what was cut (docs/mutation-score.md)."""
from __future__ import annotations

from suite.run.calls import MAX_WORDS, InProcess, close_backend, words


def test_words_are_kept_up_to_max_words_and_cut_after_with_the_count() -> None:
    assert MAX_WORDS == 2000
    assert words("x" * MAX_WORDS) == "x" * MAX_WORDS
    assert words("x" * (MAX_WORDS + 1)) == "x" * MAX_WORDS + "... (1 more characters)"
    assert words("y" * (MAX_WORDS + 7)) == "y" * MAX_WORDS + "... (7 more characters)"


class Bad:
    def __str__(self):
        return 3


def test_an_object_whose_str_is_no_text_costs_nothing() -> None:
    assert words(Bad()) == "<unprintable Bad: its __str__ raised TypeError>"


class Closing:
    def __init__(self, error: Exception = None) -> None:
        self.error, self.closed = error, 0

    def close(self):
        self.closed += 1
        if self.error is not None:
            raise self.error


def test_close_calls_the_backends_close_once_and_says_what_it_raised() -> None:
    ok = Closing()
    assert close_backend(ok) is None and ok.closed == 1
    bad = Closing(OSError("device busy"))
    assert InProcess(bad).close() == "the backend's close() raised OSError: device busy" and bad.closed == 1
    assert close_backend(object()) is None                      # close() is optional
    assert close_backend(type("NotCallable", (), {"close": 3})()) is None


def test_in_process_the_rounds_of_one_request_time_one_call_built_once() -> None:
    """InProcess.time, as Hosted.time in the backend's process (tests/test_perf_protocol.py)."""
    import numpy as np
    from tests.timing_backends import CountsCalls, UNIT
    x = np.ones(4, dtype=np.float32)
    req = {"op": "MseLossBackward", "inputs": {"gradOutput": x, "self": x, "target": x}, "layout": "contiguous",
           "attrs": {"reduction": 0}, "out_shape": (4,), "out_dtype": "float32", "product": "atlas-a2"}
    backend = CountsCalls()
    h = InProcess(backend)
    got = [h.time(r, 3, True) for r in (req, req, dict(req), req)]
    assert [g["source"] for g in got] == ["seen 1", "seen 1", "seen 2", "seen 3"]
    assert all(g["clock"] == "device" and g["seconds"] == [UNIT] * 3 for g in got)
    call = backend.seen[-1]
    assert call.op == "MseLossBackward" and call.out_shape == (4,) and call.attrs == {"reduction": 0}


class Flushes:
    """Answers with the launches and flush it was given, in its source."""

    def time_launches(self, call, launches, *, flush):
        from suite.perf.record import Timing
        return Timing("device", f"{launches} {flush}", (1e-6,) * launches)


def test_in_process_time_passes_the_launches_and_the_flush() -> None:
    x = {"op": "MseLossBackward", "inputs": {}, "layout": "contiguous", "attrs": {}, "out_shape": (4,),
         "out_dtype": "float32", "product": "atlas-a2"}
    h = InProcess(Flushes())
    assert h.time(x, 2, False)["source"] == "2 False" and h.time(x, 5, True)["source"] == "5 True"
    assert h.deadline_for(10 ** 9) is None and h.take_output() is None and h.twin() is None and h.copies == 0


# -- what a call came to (call_once, run_calls), in this process ------------------------------------
def _req(out_shape=(4,), out_dtype="float32"):
    import numpy as np
    x = np.ones(4, dtype=np.float32)
    return {"op": "MseLossBackward", "inputs": {"gradOutput": x, "self": x, "target": x}, "layout": "contiguous",
            "attrs": {"reduction": 0}, "out_shape": out_shape, "out_dtype": out_dtype, "product": "atlas-a2"}


class Returns:
    """Answers every call with what it was given (the same object each time)."""

    def __init__(self, result) -> None:
        self.result = result

    def run(self, call):
        return self.result


class Raises:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def run(self, call):
        raise self.error


def test_an_aclnn_error_without_a_status_is_a_broken_contract_not_a_crash_of_the_suite() -> None:
    from suite.contract import AclnnError
    from suite.run.calls import call_once
    bare = AclnnError.__new__(AclnnError)                   # a subclass that never set status, in effect
    out, raw = call_once(Raises(bare), _req(), [])
    assert out.violation == "AclnnError's status is None (NoneType), not an int" and raw is None


def test_a_result_of_the_wrong_shape_or_the_wrong_dtype_is_returned_not_accepted() -> None:
    import numpy as np
    from suite.run.calls import call_once
    for got, says in [(np.zeros(5, np.float32), "shape (5,) dtype float32"),
                      (np.zeros(4, np.float16), "shape (4,) dtype float16"),
                      (np.zeros((2, 2), np.float32), "shape (2, 2) dtype float32")]:
        out, raw = call_once(Returns(got), _req(), [])
        assert (out.arrays, out.returned, raw) == (None, says, None), says
    right = np.zeros(4, np.float32)
    out, raw = call_once(Returns(right), _req(), [])
    assert out.arrays["out"] is right and out.returned is None and raw == [right] and raw[0] is right


def test_a_call_with_no_out_that_returns_an_array_is_described_not_judged() -> None:
    import numpy as np
    from suite.run.calls import call_once
    out, raw = call_once(Returns(np.zeros(4, np.float32)), _req(out_shape=None, out_dtype=None), [])
    assert (out.arrays, out.returned, raw) == (None, "shape (4,) dtype float32", None)


def test_the_same_buffer_handed_back_twice_is_an_earlier_result() -> None:
    import numpy as np
    from suite.run.calls import run_calls
    same = np.zeros(4, np.float32)
    first, second = run_calls(Returns(same), _req(), 2)
    assert (first.aliased, second.aliased) == (None, "an earlier result")
    first, second = run_calls(Raises(RuntimeError("boom")), _req(), 2)    # nothing kept: nothing shared
    assert first.raised == second.raised == "RuntimeError: boom"


def test_a_call_with_no_out_tells_the_backend_no_out_dtype() -> None:
    """A NULL out (a rejection case) has neither shape nor dtype in the OpCall, whatever dtype the
    case file names for it."""
    import numpy as np
    from suite.run.calls import call_of
    assert call_of(_req(out_shape=None, out_dtype="float32")).out_dtype is None
    assert call_of(_req(out_shape=None, out_dtype=None)).out_dtype is None
    assert call_of(_req()).out_dtype == np.float32


def test_an_empty_result_shares_nothing() -> None:
    """An array of no elements is memory of no one's (its data pointer may be anything)."""
    import numpy as np
    from suite.run.calls import call_once
    empty = np.zeros(0, np.float32)
    out, _ = call_once(Returns(empty), _req(out_shape=(0,)), [empty])
    assert out.arrays["out"] is empty and out.aliased is None


def test_in_process_the_backends_declarations_are_its_info_and_each_outputs_dtype_reaches_the_call() -> None:
    import numpy as np
    from suite.run.calls import InProcess, call_of

    class Declares:
        name, working_memory, products, deterministic, capabilities = "mine", 3.5, ("atlas-a2",), False, ("status",)
    info = InProcess(Declares()).info
    assert (info.name, info.working_memory, info.products, info.deterministic, info.capabilities) == (
        "mine", 3.5, ("atlas-a2",), False, frozenset({"status"}))
    req = {**_req(), "outputs": [("out", (4,), "float32"), ("total", (), None)]}
    assert call_of(req).outputs == {"out": ((4,), np.float32), "total": ((), None)}
