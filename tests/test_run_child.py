"""The backend's process, its serving loop (suite/run/child.py), driven in pytest's own process:
child_main serves a socket pair from a thread, with what would end or rewire a real process (its
exit, its fd 1 and 2, SIGINT, the parent-death signal, the exit handlers) recorded instead. What a
real process does end to end is tests/test_run_host.py's; these tests see what each step sends."""
from __future__ import annotations

import os
import signal
import socket
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest

from suite.run import child
from suite.run.wire import recv, send
from tests.waiting import HANG_S


class _Exit(BaseException):
    """os._exit, recorded: the serving thread ends with it."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


def _line_of(text: str) -> int:
    """The line of this file that holds `text` (the one raise an Echo makes)."""
    lines = Path(__file__).read_text().splitlines()
    return next(i + 1 for i, t in enumerate(lines) if text in t and "raise" in t)


class Echo:
    """self's values plus gradOutput's, as out's dtype; says which calls it saw."""
    name = "echo"
    capabilities = {"status"}
    products = ("atlas-a2", "atlas-a3")
    deterministic = False
    working_memory = 3.5

    def __init__(self, **opts):
        self.opts = opts
        self.closed = 0
        self.calls = 0

    def run(self, call):
        self.calls += 1
        if call.outputs is not None:
            return {"out": np.full((2,), self.calls, np.float32), "totalWeightOut": np.full((), 7, np.float32)}
        if call.inputs["target"] is not None:
            raise RuntimeError("target given")
        return (call.inputs["self"] + call.inputs["gradOutput"]).astype(call.out_dtype)

    def close(self):
        self.closed += 1
        if self.opts.get("close") == "raise":
            raise RuntimeError("close failed")


class RaisingStart:
    def __init__(self):
        raise RuntimeError("no device 3")


class ExitingStart:
    def __init__(self):
        raise SystemExit(4)


class Timed:
    """A timing hook that says what it was asked."""
    name = "timed"

    def __init__(self):
        self.calls = []

    def run(self, call):
        return np.zeros(call.out_shape, call.out_dtype)

    def time_launches(self, call, launches, *, flush):
        from suite.perf.record import Timing
        self.calls.append(call)
        return Timing("device", f"seen {len(self.calls)} flush {flush}", (2.0 ** -10,) * launches)


class Served:
    """child_main in a thread of this process, and the parent's end of its socket."""

    def __init__(self, monkeypatch, spec, opts=None, policy=None, out="out"):
        self.log = []
        log = self.log
        fake_os = types.SimpleNamespace(_exit=self._exit)
        fake_signal = types.SimpleNamespace(signal=lambda *a: log.append(("signal",) + a), SIGINT=signal.SIGINT,
                                            SIG_IGN=signal.SIG_IGN, SIGKILL=signal.SIGKILL)
        monkeypatch.setattr(child, "os", fake_os)
        monkeypatch.setattr(child, "signal", fake_signal)
        monkeypatch.setattr(child, "_die_with_parent", lambda: log.append(("die_with_parent",)))
        monkeypatch.setattr(child, "redirect_output", lambda o: log.append(("redirect", o)))
        monkeypatch.setattr(child, "flush_output", lambda: log.append(("flush",)))
        monkeypatch.setattr(child, "atexit", types.SimpleNamespace(_run_exitfuncs=lambda: log.append(("atexit",))))
        made = []
        real_make = child.make_backend

        def make(s, o):
            b = real_make(s, o)
            made.append(b)
            return b
        monkeypatch.setattr(child, "make_backend", make)
        self.made = made
        self.parent, theirs = socket.socketpair()
        self.theirs = theirs
        self.ended = None
        self.thread = threading.Thread(target=self._serve, args=(theirs, spec, dict(opts or {}), out, policy),
                                       daemon=True)
        self.thread.start()

    def _exit(self, code):
        self.log.append(("exit", code))
        raise _Exit(code)

    def _serve(self, sock, spec, opts, out, policy):
        try:
            child.child_main(sock, spec, opts, out, policy)
            self.ended = "returned"
        except _Exit as e:
            self.ended = ("exit", e.code)
        except BaseException as e:                         # noqa: B036  (what the test reports)
            self.ended = ("raised", repr(e))

    def recv(self):
        return recv(self.parent, time.monotonic() + HANG_S)        # a serving loop that hangs fails the test

    def ask(self, header, arrays=()):
        send(self.parent, header, list(arrays), time.monotonic() + HANG_S)
        return self.recv()

    def join(self):
        self.thread.join(HANG_S)
        assert not self.thread.is_alive()
        return self.ended

    def close(self):
        """Ends the serving thread while its os._exit is still the recorded one: a thread left
        behind would call the real os._exit(0) on EOF once the patches are undone, ending pytest
        with exit status 0 (a failing test read as passing)."""
        self.parent.close()
        self.theirs.close()
        self.thread.join(HANG_S)
        assert not self.thread.is_alive(), "the serving loop did not end"


def _req(op="Echo", target=False, shape=(2, 3)):
    return {"op": op, "inputs": {"gradOutput": 0, "self": 1, "target": 2 if target else None},
            "layout": "contiguous", "attrs": {"reduction": 0}, "out_shape": shape, "out_dtype": "float32",
            "product": "atlas-a2"}


def _arrays(target=False):
    g = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = [g, np.full((2, 3), 10, np.float32)]
    return out + [np.ones((2, 3), np.float32)] if target else out


def test_the_process_ignores_sigint_dies_with_its_parent_redirects_then_says_ready(monkeypatch):
    s = Served(monkeypatch, "tests.test_run_child:Echo", {"a": "1"})
    try:
        head, arrays = s.recv()
        assert head == ("ready", {"name": "echo", "capabilities": ["status"], "products": ["atlas-a2", "atlas-a3"],
                                  "deterministic": False, "working_memory": 3.5}) and arrays == []
        assert s.log[:4] == [("signal", signal.SIGINT, signal.SIG_IGN), ("die_with_parent",), ("redirect", "out"),
                             ("flush",)]
        assert s.made[0].opts == {"a": "1"}
        head, _ = s.ask(("close",))
        assert head == ("closed", None)
        assert s.join() == ("exit", 0)
        assert s.made[0].closed == 1 and s.log[-3:] == [("atexit",), ("flush",), ("exit", 0)]
    finally:
        s.close()


def test_a_run_request_is_served_with_each_outcome_and_its_array_index(monkeypatch):
    s = Served(monkeypatch, "tests.test_run_child:Echo")
    try:
        s.recv()
        head, got = s.ask(("run", 41, _req(), 2), _arrays())
        assert head[:2] == ("done", 41) and len(head[2]) == 2
        assert [h["array"] for h in head[2]] == [{"out": 0}, {"out": 1}]         # each output's, by name
        assert head[2][0] == {"array": {"out": 0}, "status": None, "unsupported": None, "raised": None, "trace": None,
                              "returned": None, "aliased": None, "violation": None, "device_fault": None, "device_lost": False}
        assert [a.tolist() for a in got] == [[[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]]] * 2
        # an outcome with no array, with an input at index 2: no array is carried, the index is None
        head, got = s.ask(("run", 42, _req(target=True), 1), _arrays(target=True))
        # the backend's own frame of what it raised crosses the wire with it (and none of the suite's)
        assert head[2][0].pop("trace") == f'File "{__file__}", line {_line_of("target given")}, in run\n' \
                                         f'  raise RuntimeError("target given")'
        assert head == ("done", 42, [{"array": None, "status": None, "unsupported": None,
                                      "raised": "RuntimeError: target given", "returned": None, "aliased": None,
                                      "violation": None, "device_fault": None, "device_lost": False}])
        assert got == []
        assert s.made[0].calls == 3
        assert ("flush",) in s.log[4:]
        head, _ = s.ask(("close",))
        assert head == ("closed", None) and s.join() == ("exit", 0)
    finally:
        s.close()


def test_a_call_with_several_outputs_names_each_outputs_array(monkeypatch):
    s = Served(monkeypatch, "tests.test_run_child:Echo")
    try:
        s.recv()
        req = {**_req(), "outputs": [["out", [2], "float32"], ["totalWeightOut", [], "float32"]],
               "written": ["out", "totalWeightOut"]}
        head, got = s.ask(("run", 3, req, 2), _arrays())
        assert [h["array"] for h in head[2]] == [{"out": 0, "totalWeightOut": 1}, {"out": 2, "totalWeightOut": 3}]
        assert [a.tolist() for a in got] == [[1.0, 1.0], 7.0, [2.0, 2.0], 7.0]
        s.ask(("close",))
        assert s.join() == ("exit", 0)
    finally:
        s.close()


def test_nothing_of_a_call_is_held_after_its_reply(monkeypatch):
    s = Served(monkeypatch, "tests.test_run_host:Forgetful")
    try:
        s.recv()
        got = [s.ask(("run", i, _req(), 1), _arrays())[1][0].tolist() for i in range(3)]
        assert got == [[[1.0] * 3] * 2] * 3
        s.ask(("close",))
        assert s.join() == ("exit", 0)
    finally:
        s.close()


def test_timing_rounds_keep_the_call_between_rounds(monkeypatch):
    s = Served(monkeypatch, "tests.test_run_child:Timed")
    try:
        s.recv()
        head, got = s.ask(("time", 5, _req(), 3, True), _arrays())
        assert head == ("timed", 5, {"clock": "device", "source": "seen 1 flush True",
                                     "seconds": [2.0 ** -10] * 3, "wall_s": head[2]["wall_s"]}) and got == []
        head, _ = s.ask(("time", 6, None, 1, False))
        assert head[:2] == ("timed", 6) and head[2]["source"] == "seen 2 flush False"
        b = s.made[0]
        assert b.calls[0] is b.calls[1]                  # the call kept: one OpCall, timed twice
        assert b.calls[0].inputs["self"].tolist() == [[10.0] * 3] * 2
        s.ask(("close",))
        assert s.join() == ("exit", 0)
    finally:
        s.close()


def test_close_reports_what_close_raised(monkeypatch):
    s = Served(monkeypatch, "tests.test_run_child:Echo", {"close": "raise"})
    try:
        s.recv()
        head, _ = s.ask(("close",))
        assert head == ("closed", "the backend's close() raised RuntimeError: close failed")
        assert s.join() == ("exit", 0)
    finally:
        s.close()


def test_the_parent_gone_ends_the_process_with_exit_0(monkeypatch):
    s = Served(monkeypatch, "tests.test_run_child:Echo")
    try:
        s.recv()
        s.parent.close()
        assert s.join() == ("exit", 0) and s.made[0].closed == 0 and ("atexit",) not in s.log
    finally:
        s.close()


@pytest.mark.parametrize("spec, said", [
    ("tests.test_run_child:RaisingStart", "backend 'tests.test_run_child:RaisingStart' failed to start: "
                                          "RuntimeError: no device 3"),
    ("tests.test_run_child:NoSuchThing", None),
])
def test_a_backend_error_at_start_is_one_error_reply(monkeypatch, spec, said):
    s = Served(monkeypatch, spec)
    try:
        head, _ = s.recv()
        assert head[0] == "error" and type(head[1]) is str
        assert head[1] == said if said else "NoSuchThing" in head[1]
        assert s.join() == "returned" and ("flush",) not in s.log
    finally:
        s.close()


def test_a_start_that_exits_is_an_error_reply_naming_the_backend(monkeypatch):
    s = Served(monkeypatch, "tests.test_run_child:ExitingStart")
    try:
        head, _ = s.recv()
        assert head == ("error", "backend 'tests.test_run_child:ExitingStart' failed to start: SystemExit: 4")
        assert s.join() == "returned"
    finally:
        s.close()


def test_a_start_without_a_spec_is_named_reference(monkeypatch):
    def refuse(spec, opts):
        raise SystemExit(2)
    monkeypatch.setattr(child, "make_backend", refuse)
    monkeypatch.setattr(child, "signal", types.SimpleNamespace(signal=lambda *a: None, SIGINT=2, SIG_IGN=1))
    monkeypatch.setattr(child, "_die_with_parent", lambda: None)
    monkeypatch.setattr(child, "redirect_output", lambda o: None)
    a, b = socket.socketpair()
    try:
        assert child.child_main(b, None, {}, None, None) is None
        head, _ = recv(a, time.monotonic() + HANG_S)
        assert head == ("error", "backend 'reference' failed to start: SystemExit: 2")
    finally:
        a.close()
        b.close()


class _Policy:
    def __init__(self, fail=None):
        self.applied = 0
        self.fail = fail

    def apply(self):
        self.applied += 1
        if self.fail:
            raise self.fail


def test_the_policy_is_applied_before_the_backend_is_made(monkeypatch):
    from suite.run.backend import BackendError
    p = _Policy()
    s = Served(monkeypatch, "tests.test_run_child:Echo", policy=p)
    try:
        assert s.recv()[0][0] == "ready" and p.applied == 1
        s.ask(("close",))
        s.join()
    finally:
        s.close()
    p = _Policy(BackendError("landlock refused"))
    s = Served(monkeypatch, "tests.test_run_child:Echo", policy=p)
    try:
        assert s.recv()[0] == ("error", "landlock refused") and s.made == []
        assert s.join() == "returned"
    finally:
        s.close()


def test_dying_with_the_parent_asks_the_kernel_for_sigkill(monkeypatch):
    import ctypes
    asked = []

    class Libc:
        def prctl(self, *a):
            asked.append(a)
            return 0
    monkeypatch.setattr(ctypes, "CDLL", lambda name, use_errno=False: asked.append((name, use_errno)) or Libc())
    child._die_with_parent()
    assert asked == [(None, True), (1, signal.SIGKILL)]


@pytest.mark.parametrize("missing", [OSError, AttributeError])
def test_without_prctl_the_process_still_starts(monkeypatch, missing):
    import ctypes

    def no(name, use_errno=False):
        if missing is OSError:
            raise OSError("no libc")
        return object()
    monkeypatch.setattr(ctypes, "CDLL", no)
    assert child._die_with_parent() is None


def test_a_timing_round_before_any_call_is_not_timed(monkeypatch):
    s = Served(monkeypatch, "tests.test_run_child:Timed")
    try:
        s.recv()
        head, _ = s.ask(("time", 1, None, 2, True))
        assert head == ("timed", 1, {"not_timed": "a timing round without a call to time (the suite's bug)"})
        assert s.made[0].calls == []
        s.ask(("close",))
        assert s.join() == ("exit", 0)
    finally:
        s.close()
