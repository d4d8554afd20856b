"""A backend's own traceback (suite/run/trace.py): its frames below the suite's call, bounded."""
from __future__ import annotations

from suite.run import trace
from suite.run.calls import InProcess
from suite.run.trace import HEAD, MAX_LINE, TAIL, backend_frames, trace_lines


def _deep(n: int) -> None:
    if n == 0:
        raise ValueError("bottom")
    _deep(n - 1)


class Deep:
    name = "deep"

    def run(self, call):
        _deep(100)


def _caught(fn):
    try:
        fn()
    except Exception as e:
        return e
    raise AssertionError("did not raise")


def test_the_frame_that_caught_it_is_left_out_and_the_rest_kept_with_source():
    e = _caught(lambda: _deep(1))
    lines = backend_frames(e).splitlines()
    assert [ln.split(", in ")[1] for ln in lines[::2]] == ["<lambda>", "_deep", "_deep"]
    assert lines[-1] == '  raise ValueError("bottom")' and all(__file__ in ln for ln in lines[::2])
    assert backend_frames(e, skip=4) is None


def test_a_deep_recursion_keeps_its_first_and_last_frames_only():
    e = _caught(lambda: _deep(100))
    lines = backend_frames(e).splitlines()
    assert len(lines) == 2 * (HEAD + TAIL) + 1
    assert lines[2 * HEAD] == f"... {102 - HEAD - TAIL} frames left out ..."
    assert lines[-1] == '  raise ValueError("bottom")'


def test_a_long_line_is_cut():
    e = _caught(lambda: exec("raise KeyError('" + "k" * 1000 + "')", {}, {}))
    assert all(len(ln) <= MAX_LINE + 5 for ln in backend_frames(e).splitlines())
    long = _caught(lambda: exec(compile("1/0", "/x/" + "d" * 1000 + ".py", "exec")))
    assert max(map(len, backend_frames(long).splitlines())) == MAX_LINE + 3


def test_a_raising_backend_in_this_process_carries_its_frames_not_the_suites():
    req = {"op": "MseLossBackward", "inputs": {}, "layout": "contiguous", "attrs": {}, "out_shape": None,
           "out_dtype": None, "product": "atlas-a2"}
    o = InProcess(Deep()).run(req)[0]
    assert o.raised == "ValueError: bottom"
    assert o.trace.splitlines()[0].endswith(", in run") and __file__ in o.trace.splitlines()[0]
    assert "suite/run" not in o.trace and trace.__file__ not in o.trace
    assert trace_lines(o.trace)[0] == "  the backend's traceback (most recent call last):"
    assert trace_lines(None) == [] and InProcess(Deep()).run(req)[0].trace == o.trace
