"""The backend's process (suite/run/host.py): a backend sees across the boundary exactly what it sees
in-process, arrays of every dtype and rank cross it intact, and each way a process can end is told
apart."""
from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
import weakref
from pathlib import Path

import numpy as np
import pytest

from suite.common import dtypes, layout
from suite.run.backend import BackendError
from suite.run.calls import InProcess, call_once
from suite.contract import DeviceFault
from suite.cases.model import Kind, kinds_of
from suite.cases.load import load_cases
from suite.golden.store import GoldenStore
from suite.run.host import Fault, Hosted
from suite.run.runner import CaseFailure, CaseSkip, Runner
from suite.judge.table import load_table
from suite.run.wire import pending, recv, send
from suite.run.wire import ProtocolError
from tests.careless_backends import Unfinished
from tests.hostile import alive
from tests.waiting import HANG_S, until

SHAPES = [(), (0, 3), (2, 3), (3, 1, 4)]


def _req(shape, dtype="float32", lay="contiguous", out_shape=None):
    rng = np.random.default_rng(1)
    arr = lambda: rng.standard_normal(shape).astype(np.float32).astype(dtypes.dtype_of(dtype))
    return {"op": "Echo", "inputs": {"gradOutput": arr(), "self": arr(), "target": None}, "layout": lay,
            "attrs": {"reduction": 0}, "out_shape": shape if out_shape is None else out_shape,
            "out_dtype": dtype, "product": "atlas-a2"}


class ViewEcho:
    """Answers with what it was handed: self's values, and (in gradOutput's place) a number made of
    the views' strides, offsets within their buffers and writeability."""
    name = "view-echo"

    def run(self, call):
        g, s = call.inputs["gradOutput"], call.inputs["self"]
        assert call.inputs["target"] is None and call.attrs == {"reduction": 0}
        base = s.base if isinstance(s.base, np.ndarray) else s
        offset = s.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        sig = hash((s.strides, g.strides, s.flags.writeable, s.flags.c_contiguous, offset))
        out = np.array(s, dtype=call.out_dtype, copy=True)
        if out.size:
            out.reshape(-1)[0] = sig % 100         # (a value every dtype holds, int8 too)
        return out


@pytest.fixture(scope="module")
def hosted():
    h = Hosted("tests.test_run_host:ViewEcho", {}, timeout=HANG_S)
    h.start()
    yield h
    assert h.close() is None


@pytest.mark.parametrize("dtype", sorted(dtypes.DTYPES))
@pytest.mark.parametrize("lay", sorted(layout.LAYOUTS))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_a_backend_sees_the_same_views_in_its_own_process(hosted, shape, lay, dtype):
    req = _req(shape, dtype, lay)
    [mine] = InProcess(ViewEcho()).run(req)
    [theirs] = hosted.run(req, 1, hosted.deadline_for(100))
    assert mine.raised is None and theirs.raised is None, (mine, theirs)
    assert theirs.arrays["out"].dtype == mine.arrays["out"].dtype and theirs.arrays["out"].shape == mine.arrays["out"].shape == shape
    assert dtypes.to_bits(theirs.arrays["out"]).tolist() == dtypes.to_bits(mine.arrays["out"]).tolist()


def test_the_wrong_answer_is_described_not_carried(hosted):
    """A result of the wrong shape never crosses: the parent allocates only what it asked for."""
    [o] = hosted.run(_req((2, 3), out_shape=(3, 2)), 1, HANG_S)
    assert o.arrays is None and o.returned == "shape (2, 3) dtype float32"


class Forgetful:
    """Answers ones while the result it returned last time is gone from its process by the next
    call, zeros where something there still holds it."""
    name = "forgetful"

    def __init__(self):
        self.last = None

    def run(self, call):
        held = self.last is not None and self.last() is not None
        out = np.full(call.out_shape, 0.0 if held else 1.0, dtype=call.out_dtype)
        self.last = weakref.ref(out)
        return out


def test_the_backends_process_keeps_no_result_after_its_reply():
    """Nothing of a call outlives its reply there: a huge case's input and result (8 GiB for a
    float16 self of 2^31 elements) held until the next request came would be held while the next
    case is drawn and sent, and that case skipped for want of memory."""
    h = Hosted("tests.test_run_host:Forgetful", {}, timeout=HANG_S)
    h.start()
    try:
        got = [h.run(_req((2, 3)), 1, HANG_S)[0].arrays["out"] for _ in range(3)]
    finally:
        assert h.close() is None
    assert [a.tolist() for a in got] == [[[1.0] * 3] * 2] * 3, [a.tolist() for a in got]


def test_deadline_grows_with_the_elements():
    h = Hosted(None, {}, timeout=60)
    assert h.deadline_for(0) == 60 and h.deadline_for(10 ** 7) == pytest.approx(61)
    assert h.deadline_for(2 ** 31) == pytest.approx(60 + 214.7, abs=0.1)
    assert Hosted(None, {}, timeout=0).deadline_for(10 ** 9) is None


def test_wire_round_trip_and_refusals():
    a, b = socket.socketpair()
    arrays = [np.arange(6, dtype=np.float16).reshape(2, 3)[:, ::-1], np.zeros((), dtypes.bfloat16),
              np.zeros((0, 4), np.float32)]
    send(a, ("x", {"k": [1, 2.5, None]}), arrays)
    head, got = recv(b, None, expect=[(dtypes.name_of(x.dtype), x.shape) for x in arrays])
    assert head == ("x", {"k": [1, 2.5, None]})
    assert [(g.dtype, g.shape) for g in got] == [(x.dtype, x.shape) for x in arrays]
    assert (got[0] == arrays[0]).all()
    send(a, ("y",), [np.ones(3, np.float32)])
    with pytest.raises(ValueError, match="not asked for"):
        recv(b, None, expect=[("float32", (4,))])
    a.close()
    b.close()
    # a reply that names a class is malformed, never unpickled
    import pickle
    import struct
    a, b = socket.socketpair()
    head = pickle.dumps((Fault("x", "y"), []), protocol=4)
    a.sendall(struct.pack("<4sQQQ", b"ACN1", len(head), 0, 0) + head)
    with pytest.raises(ProtocolError, match="may not name"):
        recv(b, None)


def test_a_backend_that_fails_to_start_is_a_backend_error():
    h = Hosted("tests.misbehaving:RaisingInit", {}, timeout=HANG_S)
    with pytest.raises(BackendError, match="failed to start: RuntimeError: no device 0"):
        h.start()
    h = Hosted("tests.misbehaving:NoSuchThing", {}, timeout=HANG_S)
    with pytest.raises(BackendError, match="has no attribute 'NoSuchThing'"):
        h.start()


def test_faults_in_a_row_stop_the_restarts():
    h = Hosted("tests.misbehaving:CrashAlways", {}, timeout=HANG_S, restarts=1)
    h.start()
    kinds = []
    for _ in range(4):
        with pytest.raises(Fault) as e:
            h.run(_req((2, 3)), 1, HANG_S)
        kinds.append(e.value.kind)
    assert kinds == ["exit 7", "exit 7", "gave up", "gave up"] and h.starts == 2


def test_a_process_that_ends_between_calls_is_an_incident_not_a_failed_case():
    """Its last call had returned: no case fails, the next call gets a fresh backend, and the run
    gets an incident (which fails it)."""
    h = Hosted("tests.misbehaving:ExitAfterReturning", {}, timeout=HANG_S)
    h.start()
    req = _req((2, 3))
    mean = {**req, "op": "MseLossBackward", "attrs": {"reduction": 1},
            "inputs": {**req["inputs"], "target": req["inputs"]["self"]}}
    [o] = h.run(mean, 1, HANG_S)
    assert o.arrays is not None and o.raised is None
    until(lambda: not h._proc.is_alive(), "the backend's timer ending its process")
    [o] = h.run({**mean, "attrs": {"reduction": 0}}, 1, HANG_S)
    assert o.arrays is not None and h.starts == 2
    assert h.close() == "the backend's process exited with code 0 between calls, after a call had returned; it was restarted"
    h = Hosted("tests.misbehaving:ExitAfterReturning", {}, timeout=HANG_S)
    h.start()
    h.run(mean, 1, HANG_S)
    until(lambda: not h._proc.is_alive(), "the backend's timer ending its process")
    assert h.close() == "the backend's process exited with code 0 after its last call, before close()"


class BytesFault:
    """A device fault whose message is not text (a backend's own type)."""
    name = "bytes-fault"

    def run(self, call):
        from suite import DeviceFault
        raise DeviceFault(b"aicore exception", 507015)


def test_a_device_fault_whose_message_is_not_text_still_fails_just_its_case():
    [o] = InProcess(BytesFault()).run(_req((2, 3)))
    assert (o.device_fault, o.device_lost, o.raised) == ("b'aicore exception' (status 507015)", False, None), o


# -- issue 20: a strict wire, bounded output, the contract's small print -------------------------
from suite.run import protocol  # noqa: E402
from suite.run.calls import Outcome, words
from suite.run.child import _outcome_header  # noqa: E402


ONE = [("out", "float64", (1,))]         # the written output of _good's first outcome


def _good():
    return [_outcome_header(Outcome(arrays={"out": np.zeros(1)}), {"out": 0}), _outcome_header(Outcome(status=161002), None)]


def _with(i, **fields):
    heads = _good()
    heads[i] = {**heads[i], **fields}
    return ("done", 7, heads)


MALFORMED = {
    "not a tuple": ["done", 7, _good()],
    "short tuple": ("done", 7),
    "wrong word": ("ready", 7, _good()),
    "another request's reply": ("done", 6, _good()),
    "bool sequence number": ("done", True, _good()),
    "too few outcomes": ("done", 7, _good()[:1]),
    "outcomes not a list": ("done", 7, tuple(_good())),
    "an outcome not a dict": ("done", 7, [_good()[0], ["status", 1]]),
    "an extra key": _with(1, extra=None),
    "a missing key": ("done", 7, [_good()[0], {k: v for k, v in _good()[1].items() if k != "violation"}]),
    "float status": _with(1, status=161002.0),
    "bool status": _with(1, status=True),
    "str status": _with(1, status="161002"),
    "index out of range": _with(0, array={"out": 1}),
    "negative index": _with(0, array={"out": -1}),
    "bool index": _with(0, array={"out": False}),
    "a bare index": _with(0, array=0),
    "index reused": ("done", 7, [_good()[0], _good()[0]]),
    "an array no outcome uses": _with(0, array=None, status=0),
    "bytes where text goes": _with(1, status=None, raised=b"x"),
    "a text too long": _with(1, status=None, raised="x" * (protocol.MAX_TEXT + 1)),
    "two results in one outcome": _with(1, raised="x"),
    "no result": _with(1, status=None),
    "device_lost not a bool": _with(1, status=None, device_fault="x", device_lost=1),
    "device_lost without a fault": _with(1, device_lost=True),
    "aliased without an array": _with(1, aliased="input self"),
}


def test_a_well_formed_reply_passes_the_checks():
    outs = protocol.done(("done", 7, _good()), 7, 2, 1, ONE, [np.zeros(1)])
    assert [o["array"] for o in outs] == [{"out": 0}, None] and outs[1]["status"] == 161002


@pytest.mark.parametrize("name", MALFORMED)
def test_every_field_of_a_reply_is_checked(name):
    with pytest.raises(protocol.ProtocolError):
        protocol.done(MALFORMED[name], 7, 2, 1, ONE, [np.zeros(1)])


class Counting:
    """Each call's result is full of the number of calls made so far: two calls, two answers."""
    name = "counting"

    def __init__(self):
        self.n = 0

    def run(self, call):
        self.n += 1
        return np.full(call.out_shape, self.n, dtype=call.out_dtype)


def test_each_outcome_of_a_repeated_call_gets_its_own_array():
    """The header's array index is what tells the two results of a determinism case apart: both
    pointing at the first would compare a result with itself."""
    h = Hosted("tests.test_run_host:Counting", {}, timeout=HANG_S)
    try:
        outs = h.run(_req((2, 3)), 2, HANG_S)
    finally:
        assert h.close() is None
    assert [o.arrays["out"].reshape(-1)[0] for o in outs] == [1, 2]


class JunkLater:
    """Answers, then writes junk to the suite's socket from a thread of its own, after the reply."""
    name = "junk-later"

    def run(self, call):
        from tests.misbehaving import after_the_reply, wire_socket

        def junk():
            with wire_socket() as s:
                s.sendall(b"junk" * 10)
        after_the_reply(junk)
        return np.zeros(call.out_shape, dtype=call.out_dtype)


def test_junk_between_calls_is_an_incident_and_the_next_call_runs_on_a_fresh_process():
    h = Hosted("tests.test_run_host:JunkLater", {}, timeout=HANG_S)
    [o] = h.run(_req((2, 3)), 1, HANG_S)
    until(lambda: pending(h._sock), "the backend's junk on the socket")
    [o] = h.run(_req((2, 3)), 1, HANG_S)
    assert o.arrays is not None and h.starts == 2
    assert "protocol violation: the backend's process wrote to the suite's socket between calls" in h.close()


def test_junk_in_a_reply_fails_that_call_as_a_protocol_fault_and_the_next_one_runs():
    h = Hosted("tests.misbehaving:SocketJunk", {}, timeout=HANG_S)
    req = _req((2, 3))
    mean = {**req, "op": "MseLossBackward", "attrs": {"reduction": 1},
            "inputs": {**req["inputs"], "target": req["inputs"]["self"]}}
    with pytest.raises(Fault) as e:
        h.run(mean, 1, HANG_S)
    assert e.value.kind == "protocol" and str(e.value).startswith("protocol violation: ")
    [o] = h.run({**mean, "attrs": {"reduction": 0}}, 1, HANG_S)
    assert o.arrays is not None and h.starts == 2 and h.close() is None


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no")


class Says:
    """Raises or returns what its `what` option names."""
    name = "says"

    def __init__(self, what):
        self.what = what

    def run(self, call):
        from suite import AclnnError, DeviceFault, Unsupported
        out = np.ones(call.out_shape, call.out_dtype)
        w = self.what
        if w == "unprintable":
            raise Unprintable()
        if w == "unprintable-unsupported":
            raise Unsupported(Unprintable())
        if w == "long":
            raise RuntimeError("x" * 10 ** 7)
        if w.startswith("status-"):
            e = AclnnError(161002)
            e.status = {"status-float": 161002.0, "status-bool": True, "status-str": "161002"}[w]
            raise e
        if w.startswith("recovered-"):
            raise DeviceFault("boom", 507015, recovered={"recovered-no": "no", "recovered-0": 0,
                                                         "recovered-true": True, "recovered-false": False}[w])
        if w == "matrix":
            return np.asmatrix(out)
        if w == "masked-none":
            return np.ma.masked_array(out)
        if w == "masked-one":
            return np.ma.masked_array(out, mask=np.eye(*out.shape, dtype=bool)[: out.shape[0]])
        raise AssertionError(w)


def _says(what):
    return InProcess(Says(what)).run(_req((2, 3)))[0]


def test_a_broken_str_costs_nothing():
    assert _says("unprintable").raised == "Unprintable: <unprintable Unprintable: its __str__ raised RuntimeError>"
    assert _says("unprintable-unsupported").unsupported.startswith("<unprintable Unsupported")
    assert len(_says("long").raised) < 3000 and "more characters" in _says("long").raised
    assert words(b"x") == "b'x'" and words("x") == "x"


def test_a_broken_str_in_the_backends_process_costs_only_its_case():
    h = Hosted("tests.test_run_host:Says", {"what": "unprintable"}, timeout=HANG_S)
    [o] = h.run(_req((2, 3)), 1, HANG_S)
    [o2] = h.run(_req((2, 3)), 1, HANG_S)
    assert o.raised.startswith("Unprintable: <unprintable") and o2.raised == o.raised and h.starts == 1
    assert h.close() is None


@pytest.mark.parametrize("what", ["status-float", "status-bool", "status-str"])
def test_a_status_that_is_not_an_int_is_a_contract_violation(what):
    o = _says(what)
    assert o.status is None and "AclnnError's status is" in o.violation and "not an int" in o.violation


@pytest.mark.parametrize("what, lost", [("recovered-no", True), ("recovered-0", True),
                                        ("recovered-true", False), ("recovered-false", True)])
def test_recovered_must_be_a_real_bool(what, lost):
    o = _says(what)
    assert o.device_fault.startswith("boom (status 507015)") and o.device_lost is lost
    assert ("is not a bool" in o.device_fault) == (what in ("recovered-no", "recovered-0"))


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")  # the test makes one on purpose
def test_numpy_subclasses_are_judged_by_value_or_refused():
    for what in ("matrix", "masked-none"):
        o = _says(what)
        assert type(o.arrays["out"]) is np.ndarray and o.arrays["out"].tolist() == [[1.0] * 3] * 2, what
    o = _says("masked-one")
    assert o.arrays is None and "MaskedArray with 2 masked elements" in o.violation
    h = Hosted("tests.test_run_host:Says", {"what": "matrix"}, timeout=HANG_S)
    [o] = h.run(_req((2, 3)), 1, HANG_S)
    assert o.arrays["out"].tolist() == [[1.0] * 3] * 2 and h.close() is None


class Loud:
    """Prints `n` bytes a call through Python and as many straight to fd 1 and 2 (native writes)."""
    name = "loud"

    def __init__(self, n="300000"):
        self.n = int(n)
        self.calls = 0
        print("LOUD-AT-START")

    def run(self, call):
        import os
        self.calls += 1
        print(f"CALL-{self.calls}-PY " + "p" * self.n, end="")
        os.write(1, b"N" * self.n + f" CALL-{self.calls}-FD1".encode())
        os.write(2, f" CALL-{self.calls}-FD2-END\n".encode())
        return np.zeros(call.out_shape, dtype=call.out_dtype)


def test_the_backends_output_is_kept_per_call_head_and_tail_and_counted():
    h = Hosted("tests.test_run_host:Loud", {}, timeout=HANG_S)
    h.start()
    try:
        logs = []
        for _ in range(2):
            h.run(_req((2, 3)), 1, HANG_S)
            logs.append(h.take_output())
    finally:
        assert h.close() is None
    first, second = logs
    head, tail = bytes(first.head), bytes(first.tail)
    assert head.startswith(b"LOUD-AT-START\nCALL-1-PY ppp") and len(head) == len(tail) == 4096
    assert tail.endswith(b"N CALL-1-FD1 CALL-1-FD2-END\n")
    assert first.total == len("LOUD-AT-START\n") + 2 * 300000 + len("CALL-1-PY  CALL-1-FD1 CALL-1-FD2-END\n")
    assert bytes(second.head).startswith(b"CALL-2-PY ") and b"CALL-1" not in bytes(second.head) + bytes(second.tail)
    text = "\n".join(first.lines())
    assert f"{first.total - 8192} bytes left out between them" in text and "    | LOUD-AT-START" in text


class Pid:
    """Answers with its process id."""
    name = "pid"

    def run(self, call):
        import os
        return np.full(call.out_shape, os.getpid(), dtype=np.float32)


def test_the_twin_is_another_process_of_the_same_backend_and_closes_with_the_first():
    h = Hosted("tests.test_run_host:Pid", {}, timeout=HANG_S)
    h.start()
    twin = h.twin()
    assert h.twin() is twin
    [a] = h.run(_req((2, 3)), 1, HANG_S)
    [b] = twin.run(_req((2, 3)), 1, HANG_S)
    assert a.arrays["out"].reshape(-1)[0] != b.arrays["out"].reshape(-1)[0] and twin.info == h.info
    assert h.close() is None and twin._proc is None
    h = Hosted("tests.misbehaving:ExitInClose", {}, timeout=HANG_S)
    h.start()
    h.twin().run(_req((2, 3)), 1, HANG_S)
    found = h.close()
    assert found.count("during close() or its exit handlers") == 2 and "the backend's second process: " in found, found


# -- NotImplementedError is a crash, not a skip (issue 20, item 10e) -----------------------------
def test_not_implemented_is_a_crash_of_the_backends_never_unsupported():
    """Only suite.Unsupported skips a case. A backend that raises NotImplementedError computes
    nothing; if that were a skip, a backend with no kernel at all would make a run of skips."""
    o, raw = call_once(Unfinished(), _req((2, 3)), [])
    assert raw is None and o.unsupported is None and o.arrays is None
    assert o.raised == "NotImplementedError: not written yet"


def test_not_implemented_fails_each_kind_of_case_in_the_runner():
    """The verdict the plugin turns into pass/fail/skip: every kind of check of a backend that
    raises NotImplementedError is a CaseFailure naming it, none a CaseSkip."""
    root = Path(__file__).resolve().parents[1]
    cases, _ = load_cases([root / "cases" / "mse_loss_backward.yaml"])
    host = InProcess(Unfinished())
    runner = Runner(host, host.info, GoldenStore(root / "golden"), load_table(root / "cases" / "tolerances.yaml"))
    picked = {}
    for c in cases:
        if c.tier == "default" and c.product == "atlas-a2" and c.layout == "contiguous" and "float32" in c.id:
            for k in kinds_of(c):
                picked.setdefault(k, c)
    assert set(picked) == set(Kind)
    for kind, case in picked.items():
        with pytest.raises(CaseFailure) as e:
            try:
                runner.check(kind, case, f"suite/conformance/test_{kind.value}.py::t[{case.id}]")
            except CaseSkip as skip:                      # the defect: reported, not raised past pytest.raises
                pytest.fail(f"{kind.value}: skipped ({skip.reason}), not failed")
        assert "the backend crashed: NotImplementedError: not written yet" in str(e.value), (kind, str(e.value))


class _Raises:
    name = "raises"

    def __init__(self, e: BaseException) -> None:
        self.e = e

    def run(self, call):
        raise self.e


def _device(message="boom", status=None, recovered=True, then=None):
    e = DeviceFault(message, status, recovered)
    for k, v in (then or {}).items():              # what a backend may set after making it
        setattr(e, k, v)
    return e


class _BareFault(DeviceFault):
    """A subclass that never calls DeviceFault.__init__: no message, status or recovered of its own."""

    def __init__(self) -> None:
        Exception.__init__(self, "bare words")


@pytest.mark.parametrize("e, fault, lost, violation", [
    (_device(), "boom", False, None),                                   # no status: nothing appended
    (_device(status=7), "boom (status 7)", False, None),
    (_device("rc 507015: AI core", 507015), "rc 507015: AI core", False, None),   # already named
    (_device(recovered=False), "boom", True, None),
    (_device(recovered="no"), "boom [recovered='no' is not a bool: the device is taken as not recovered]", True, None),
    (_device(status=7, then={"status": "7"}), None, False, "DeviceFault's status is '7' (str), not an int"),
    (_device("own", then={"message": "aclGetRecentErrMsg text"}), "aclGetRecentErrMsg text", False, None),
    (_BareFault(), "bare words", False, None),                          # recovered defaults to True
], ids=["no-status", "status", "status-in-message", "lost", "recovered-not-bool", "status-str",
        "message-attribute", "bare-subclass"])
def test_a_device_fault_is_classified_exactly(e, fault, lost, violation):
    """What a DeviceFault comes to decides the case (a device fault) and the run (lost: it stops)."""
    o, raw = call_once(_Raises(e), _req((2, 3)), [])
    assert raw is None and o.raised is None and o.arrays is None
    assert (o.device_fault, o.device_lost, o.violation) == (fault, lost, violation)


# -- the parent's small parts, in this process (issue 21, mutr) ----------------------------------
from suite.run import host as host_mod  # noqa: E402


@pytest.mark.parametrize("code, said", [
    (None, ("closed its connection", "closed")),
    (0, ("exited with code 0", "exit 0")),
    (7, ("exited with code 7", "exit 7")),
    (-11, ("was killed by signal 11 (SIGSEGV)", "signal 11 (SIGSEGV)")),
    (-9, ("was killed by signal 9 (SIGKILL)", "signal 9 (SIGKILL)")),
    (-200, ("was killed by signal 200 (unknown)", "signal 200 (unknown)")),
])
def test_each_way_a_process_ends_is_told_in_words_and_for_records(code, said):
    assert host_mod._exit_text(code) == said


def test_a_requests_inputs_are_sent_as_indices_into_the_arrays():
    a, b = np.zeros(1), np.ones(2)
    names, arrays = host_mod._indexed({"gradOutput": a, "weight": None, "self": b, "target": None})
    assert names == {"gradOutput": 0, "weight": None, "self": 1, "target": None}
    assert len(arrays) == 2 and arrays[0] is a and arrays[1] is b
    assert host_mod._indexed({}) == ({}, [])


def test_make_host_in_pytest_s_process_or_started_in_its_own(monkeypatch):
    h = host_mod.make_host("tests.test_run_host:Pid", {}, isolation="none", timeout=5, restarts=1, policy=None)
    assert isinstance(h, InProcess) and isinstance(h.backend, Pid)
    started = []
    monkeypatch.setattr(Hosted, "start", lambda self: started.append(self))
    policy = object()
    h = host_mod.make_host("tests.test_run_host:Pid", {"a": "1"}, isolation="process", timeout=5, restarts=3,
                           policy=policy)
    assert started == [h] and isinstance(h, Hosted)
    assert (h.spec, h.opts, h.timeout, h.restarts, h.policy) == ("tests.test_run_host:Pid", {"a": "1"}, 5, 3, policy)


def test_a_hosted_backend_starts_with_nothing_running():
    opts = {"a": "1"}
    h = Hosted("x:y", opts)
    assert (h.timeout, h.restarts, h.backend, h.info, h.in_row, h.starts, h.incidents, h.last_fault) == \
        (60.0, 8, None, None, 0, 0, [], None)
    assert h.opts == opts and h.opts is not opts and h.copies == 1 and Hosted.policy is None
    assert h.take_output() is None and h.close() is None


# -- the parent against a process played by a thread of this one (issue 21, mutr) -----------------
# A backend's process may send anything; these play it, step by step, over the same socket pair
# Hosted makes, so that what the parent does with each reply is seen here, in pytest's process.
import threading  # noqa: E402

from suite.run import wire as wire_mod  # noqa: E402

READY = ("ready", {"name": "scripted", "capabilities": [], "products": ["atlas-a2"], "deterministic": True,
                   "working_memory": 2.0})


class _Played:
    """starter.Child's part Hosted uses, the process being `play(sock, out)` in a thread:
    alive until play returns (its return value the exit code), killed by closing its sockets."""

    def __init__(self, play, fds):
        self.play, self.pid, self.exitcode, self.kills = play, None, None, 0
        # the parent closes its copies of these
        self.sock, self.out = (socket.socket(fileno=os.dup(fd)) for fd in fds)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()

    def _run(self):
        try:
            code = self.play(self.sock, self.out)
        except (OSError, EOFError, wire_mod.ProtocolError):
            code = -9 if self.kills else 1
        if self.exitcode is None:
            self.exitcode = 0 if code is None else code
        for s in (self.sock, self.out):
            s.close()

    def is_alive(self):
        return self.exitcode is None

    def kill(self):
        self.kills += 1
        if self.exitcode is None:
            self.exitcode = -9
        for s in (self.sock, self.out):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def join(self, wait=None):
        self.thread.join(wait)


def _played(monkeypatch, *plays):
    """Hosted's processes, in order, each one of `plays`; returns the list of those started."""
    started, todo = [], list(plays)

    def start(args, fds):
        assert len(args) == 4 and len(fds) == 2
        p = _Played(todo.pop(0), fds)
        started.append(p)
        p.start()
        return p
    monkeypatch.setattr(host_mod.starter, "start", start)
    return started


def _ready_then(*steps, ready=READY, code=0):
    """A process that says `ready`, then answers each request with the next step: a reply header
    and its arrays, or a callable(sock, header, arrays) that does what it likes."""
    def play(sock, out):
        if ready is not None:
            send(sock, ready)
        for step in steps:
            header, arrays = recv(sock)
            if callable(step):
                r = step(sock, header, arrays)
                if r == "exit":
                    return code
                continue
            send(sock, step[0], step[1] if len(step) > 1 else [])
        try:
            header, _ = recv(sock)                     # the parent's next request: close, or its end
        except (EOFError, OSError):
            return code
        assert header == ("close",), header
        send(sock, ("closed", None))
        return code
    return play


def _ok(seq, n=1):
    return (("done", seq, [_outcome_header(Outcome(arrays={"out": np.zeros(1)}), {"out": i}) for i in range(n)]),
            [np.full((2, 3), 5, np.float32) for _ in range(n)])


def _closed(incident=None):
    return (("closed", incident),)


def test_a_process_that_never_says_ready_is_not_waited_for_past_its_allowance(monkeypatch):
    monkeypatch.setattr(host_mod, "STARTUP_FLOOR", 0.3)
    started = _played(monkeypatch, _ready_then(ready=None))
    h = Hosted("x:y", {}, timeout=0.05)
    with pytest.raises(BackendError) as e:
        h.start()
    assert str(e.value) == ("backend 'x:y' did not start within 0.3 s (--case-timeout sets the start-up "
                            "allowance too)") and e.value.__suppress_context__
    assert started[0].kills == 1 and h._proc is None and h._sock is None and h.starts == 1


def test_the_start_up_allowance_is_three_deadlines_or_the_floor(monkeypatch):
    monkeypatch.setattr(host_mod, "STARTUP_FLOOR", 0.1)
    _played(monkeypatch, _ready_then(ready=None))
    h = Hosted(None, {}, timeout=0.1)
    t0 = time.monotonic()
    with pytest.raises(BackendError, match=r"^backend 'reference' did not start within 0.3 s"):
        h.start()
    assert time.monotonic() - t0 >= 0.3


@pytest.mark.parametrize("spec,named", [("x:y", "'x:y'"), (None, "'reference'")])
def test_a_start_up_reply_that_is_not_one_kills_the_process(monkeypatch, spec, named):
    started = _played(monkeypatch, _ready_then(ready=("ready", {"name": "x"})))
    h = Hosted(spec, {}, timeout=5)
    with pytest.raises(BackendError) as e:
        h.start()
    assert str(e.value) == f"backend {named}: protocol violation while starting: start-up fields {{'name': 'x'}}"
    assert e.value.__suppress_context__ and started[0].kills == 1 and h._proc is None


def test_a_start_up_reply_over_1_mib_is_refused_before_it_is_read(monkeypatch):
    def play(sock, out):
        send(sock, ("ready", {**READY[1], "name": "x" * (1 << 20)}))
        recv(sock)
    _played(monkeypatch, play)
    with pytest.raises(BackendError, match=r"^backend .x:y.: protocol violation while starting: a header of \d+ bytes with 0 arrays$"):
        Hosted("x:y", {}, timeout=5).start()


def test_a_start_up_reply_with_arrays_is_refused(monkeypatch):
    def play(sock, out):
        send(sock, READY, [np.zeros(1, np.float32)])
        recv(sock)
    _played(monkeypatch, play)
    with pytest.raises(BackendError, match=r"^backend .x:y.: protocol violation while starting: a header of \d+ bytes with 1 arrays$"):
        Hosted("x:y", {}, timeout=5).start()


def test_a_process_that_ends_while_starting_is_told_by_its_exit(monkeypatch):
    started = _played(monkeypatch, lambda sock, out: 3, lambda sock, out: None)
    h = Hosted("x:y", {}, timeout=5)
    with pytest.raises(BackendError) as e:
        h.start()
    assert str(e.value) == "backend 'x:y': its process exited with code 3 while starting"
    assert e.value.__suppress_context__ and started[0].kills == 0 and h._proc is None
    with pytest.raises(BackendError, match=r"^backend 'reference': its process exited with code 0 while starting$"):
        Hosted(None, {}, timeout=5).start()


def test_a_backend_that_cannot_be_made_says_why_in_its_own_words(monkeypatch):
    started = _played(monkeypatch, _ready_then(ready=("error", "no device 0")))
    h = Hosted("x:y", {}, timeout=5)
    with pytest.raises(BackendError) as e:
        h.start()
    assert str(e.value) == "no device 0" and h._proc is None and started[0].kills == 0 and h.info is None


def test_a_started_backend_is_what_its_ready_says(monkeypatch):
    ready = ("ready", {"name": "n", "capabilities": ["status", "timing"], "products": ["atlas-a2", "atlas-a3"],
                       "deterministic": False, "working_memory": 4.5})
    _played(monkeypatch, _ready_then(ready=ready))
    h = Hosted("x:y", {}, timeout=5)
    info = h.start()
    assert h.info is info and info == host_mod.BackendInfo(name="n", capabilities=frozenset({"status", "timing"}),
                                                            products=("atlas-a2", "atlas-a3"), deterministic=False,
                                                            working_memory=4.5)
    assert h.starts == 1 and h._timed is None and h.close() is None


def test_a_backend_that_restarts_as_another_is_refused(monkeypatch):
    other = ("ready", {**READY[1], "name": "other"})
    started = _played(monkeypatch, _ready_then(), _ready_then(ready=other))
    h = Hosted("x:y", {}, timeout=5)
    first = h.start()
    h._kill()
    with pytest.raises(BackendError) as e:
        h.start()
    other_info = host_mod.BackendInfo(name="other", capabilities=frozenset(), products=("atlas-a2",),
                                      deterministic=True, working_memory=2.0)
    assert str(e.value) == f"backend restarted as {other_info}, not as it first started ({first})"
    assert started[1].kills == 1 and h.info is first and h._proc is None


def test_a_start_without_a_deadline_waits_for_ready(monkeypatch):
    def slow(sock, out):
        time.sleep(0.3)
        return _ready_then()(sock, out)
    _played(monkeypatch, slow)
    h = Hosted("x:y", {}, timeout=0)
    assert h.start().name == "scripted" and h.close() is None


def _hang(sock, header, arrays):
    """A call that never returns: the process waits until it is killed."""
    try:
        recv(sock)
    except (EOFError, OSError):
        pass
    return "exit"


def test_a_run_sends_its_request_numbered_and_takes_each_outcome(monkeypatch):
    asked = []

    def answer(n):
        def step(sock, header, arrays):
            asked.append((header, [a.tolist() for a in arrays]))
            reply, results = _ok(header[1], header[3])
            send(sock, reply, results)
        return step
    _played(monkeypatch, _ready_then(answer(1), answer(2)))
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    req = _req((2, 3))
    outs = h.run(req, 1, 5)
    assert [o.arrays["out"].tolist() for o in outs] == [[[5.0] * 3] * 2] and h.in_row == 0 and h._busy is False
    outs = h.run(req, 2, 5)
    assert len(outs) == 2 and outs[0].arrays["out"] is not outs[1].arrays["out"]
    (h1, a1), (h2, a2) = asked
    assert h1 == ("run", 1, {**req, "inputs": {"gradOutput": 0, "self": 1, "target": None}}, 1)
    assert h2[:2] == ("run", 2) and h2[3] == 2
    assert a1 == [req["inputs"]["gradOutput"].tolist(), req["inputs"]["self"].tolist()]
    assert h.close() is None


def test_a_reply_with_more_arrays_than_the_calls_is_refused(monkeypatch):
    def step(sock, header, arrays):
        reply, results = _ok(header[1], 1)
        send(sock, reply, results * 2)
    _played(monkeypatch, _ready_then(step), _ready_then())
    h = Hosted("x:y", {}, timeout=5)
    with pytest.raises(Fault) as e:
        h.run(_req((2, 3)), 1, 5)
    assert e.value.kind == "protocol" and "a header of" in str(e.value) and "with 2 arrays" in str(e.value)


def test_a_result_with_no_out_to_write_is_refused(monkeypatch):
    """out_shape None: the call writes nothing, so no array may come back."""
    _played(monkeypatch, _ready_then(lambda sock, header, arrays: send(sock, *_ok(header[1]))))
    h = Hosted("x:y", {}, timeout=5)
    with pytest.raises(Fault, match="not asked for"):
        h.run({**_req((2, 3)), "out_shape": None}, 1, 5)
    _played(monkeypatch, _ready_then(lambda sock, header, arrays: send(sock, *_ok(header[1]))))
    h = Hosted("x:y", {}, timeout=5)
    with pytest.raises(Fault, match="not asked for"):
        h.run({**_req((2, 3)), "out_dtype": None}, 1, 5)


def test_a_call_with_several_outputs_takes_each_written_output_by_name(monkeypatch):
    seen = []

    def step(sock, header, arrays):
        seen.append(header[2]["outputs"])
        heads = [_outcome_header(Outcome(status=None, arrays={"out": np.zeros(1)}), {"out": 1, "totalWeightOut": 0})]
        send(sock, ("done", header[1], heads), [np.full((), 3, np.float32), np.full((2,), 4, np.float32)])
    _played(monkeypatch, _ready_then(step))
    h = Hosted("x:y", {}, timeout=5)
    req = {**_req((2, 3)), "out_shape": None, "out_dtype": None,
           "outputs": [["out", [2], "float32"], ["totalWeightOut", [], "float32"], ["w", None, None]],
           "written": ["out", "totalWeightOut"]}
    [o] = h.run(req, 1, 5)
    assert {n: a.tolist() for n, a in o.arrays.items()} == {"out": [4.0, 4.0], "totalWeightOut": 3.0}
    assert h.close() is None


def test_an_unwritten_output_is_not_asked_for(monkeypatch):
    def step(sock, header, arrays):
        heads = [_outcome_header(Outcome(arrays={"out": np.zeros(1)}), {"out": 0})]
        send(sock, ("done", header[1], heads), [np.full((), 3, np.float32)])
    _played(monkeypatch, _ready_then(step), _ready_then())
    h = Hosted("x:y", {}, timeout=5)
    req = {**_req((2, 3)), "outputs": [["out", [2], "float32"], ["totalWeightOut", [], "float32"]],
           "written": ["out"]}
    with pytest.raises(Fault) as e:
        h.run(req, 1, 5)
    assert e.value.kind == "protocol" and "float32 shape () that was not asked for" in str(e.value)


def test_a_call_that_overruns_its_deadline_is_killed_and_costs_its_case(monkeypatch):
    started = _played(monkeypatch, _ready_then(_hang), _ready_then(lambda s, h, a: send(s, *_ok(h[1]))))
    h = Hosted("x:y", {}, timeout=5, restarts=3)
    t0 = time.monotonic()
    with pytest.raises(Fault) as e:
        h.run(_req((2, 3)), 2, 0.1)
    assert time.monotonic() - t0 >= 0.2
    assert e.value.kind == "deadline" and str(e.value) == (
        "the call overran its deadline of 0.2 s (--case-timeout); the backend's process was killed; a fresh "
        "backend process serves the next case")
    assert started[0].kills == 1 and h._proc is None and h.in_row == 1 and h._busy is False
    assert h.last_fault == "(the call overran its deadline of 0.2 s (--case-timeout); the backend's process was killed)"
    [o] = h.run(_req((2, 3)), 1, 5)
    assert o.arrays is not None and h.in_row == 0 and h.starts == 2


def test_a_call_without_a_deadline_waits(monkeypatch):
    def slow(sock, header, arrays):
        time.sleep(0.3)
        send(sock, *_ok(header[1]))
    _played(monkeypatch, _ready_then(slow))
    h = Hosted("x:y", {}, timeout=5)
    [o] = h.run(_req((2, 3)), 1, None)
    assert o.arrays is not None and h.close() is None


def test_a_process_that_ends_in_a_call_costs_its_case_by_its_exit(monkeypatch):
    started = _played(monkeypatch, _ready_then(lambda s, h, a: "exit", code=11))
    h = Hosted("x:y", {}, timeout=5, restarts=0)
    with pytest.raises(Fault) as e:
        h.run(_req((2, 3)), 1, 5)
    assert e.value.kind == "exit 11" and str(e.value) == (
        "the backend's process exited with code 11 during the call; that is 1 faults in a row, so it is not "
        "restarted (--backend-restarts 0) and every remaining case fails")
    assert started[0].kills == 0 and h._proc is None
    with pytest.raises(Fault) as e:
        h.run(_req((2, 3)), 1, 5)
    assert e.value.kind == "gave up" and str(e.value) == (
        "not run: the backend faulted on 1 cases in a row, the last (the backend's process exited with code 11 "
        "during the call); it is not restarted again (--backend-restarts 0)")
    assert len(started) == 1


def test_a_malformed_reply_kills_the_process_and_costs_its_case(monkeypatch):
    started = _played(monkeypatch, _ready_then(lambda s, h, a: send(s, ("done", 5, []))))
    h = Hosted("x:y", {}, timeout=5)
    with pytest.raises(Fault) as e:
        h.run(_req((2, 3)), 1, 5)
    assert e.value.kind == "protocol" and str(e.value) == (
        "protocol violation: the backend's process sent a malformed reply (a reply to request 5, not to this one "
        "(1)); it was killed; a fresh backend process serves the next case")
    assert started[0].kills == 1 and h._busy is False


def test_a_backend_that_cannot_be_restarted_costs_the_case(monkeypatch):
    _played(monkeypatch, _ready_then(lambda s, h, a: "exit", code=2), _ready_then(ready=("error", "no device")))
    h = Hosted("x:y", {}, timeout=5)
    with pytest.raises(Fault):
        h.run(_req((2, 3)), 1, 5)
    with pytest.raises(Fault) as e:
        h.run(_req((2, 3)), 1, 5)
    assert e.value.kind == "restart failed" and str(e.value) == (
        "the backend could not be restarted: no device; a fresh backend process serves the next case")
    assert h.in_row == 2


def test_faults_up_to_the_restarts_are_restarted_and_one_more_gives_up(monkeypatch):
    crash = _ready_then(lambda s, h, a: "exit", code=3)
    started = _played(monkeypatch, crash, crash, crash)
    h = Hosted("x:y", {}, timeout=5, restarts=2)
    kinds = []
    for _ in range(4):
        with pytest.raises(Fault) as e:
            h.run(_req((2, 3)), 1, 5)
        kinds.append((e.value.kind, str(e.value).split("; ")[-1]))
    assert kinds == [("exit 3", "a fresh backend process serves the next case")] * 2 + [
        ("exit 3", "that is 3 faults in a row, so it is not restarted (--backend-restarts 2) and every remaining "
                   "case fails"),
        ("gave up", "it is not restarted again (--backend-restarts 2)")]
    assert len(started) == 3


def test_a_process_that_ended_between_calls_is_restarted_with_an_incident(monkeypatch):
    started = _played(monkeypatch, _ready_then(lambda s, h, a: send(s, *_ok(h[1])) or "exit", code=4),
                      _ready_then(lambda s, h, a: send(s, *_ok(h[1]))))
    h = Hosted("x:y", {}, timeout=5)
    h.run(_req((2, 3)), 1, 5)
    started[0].thread.join(5)
    [o] = h.run(_req((2, 3)), 1, 5)
    assert o.arrays is not None and h.starts == 2 and h.in_row == 0
    assert h.incidents == ["the backend's process exited with code 4 between calls, after a call had returned; "
                           "it was restarted"]
    assert h.close() == h.incidents[0]


def test_bytes_between_calls_kill_the_process_with_an_incident(monkeypatch):
    def junk(sock, header, arrays):
        send(sock, *_ok(header[1]))
        sock.sendall(b"junk")
    started = _played(monkeypatch, _ready_then(junk), _ready_then(lambda s, h, a: send(s, *_ok(h[1]))))
    h = Hosted("x:y", {}, timeout=5)
    h.run(_req((2, 3)), 1, 5)
    until(lambda: pending(h._sock), "the junk on the socket")
    h.run(_req((2, 3)), 1, 5)
    assert started[0].kills == 1 and h.starts == 2
    assert h.incidents == ["protocol violation: the backend's process wrote to the suite's socket between calls; "
                           "it was killed and restarted"]
    assert h.close() == h.incidents[0]


GOOD_TIMING = {"clock": "device", "source": "played", "seconds": [1.0, 2.0], "wall_s": 3.0}


def test_a_timing_round_sends_the_call_once_and_takes_the_answer(monkeypatch):
    asked = []

    def step(sock, header, arrays):
        asked.append((header, len(arrays)))
        send(sock, ("timed", header[1], GOOD_TIMING))
    _played(monkeypatch, _ready_then(step, step, step))
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    req = _req((2, 3))
    assert h.time(req, 2, True, 5) == GOOD_TIMING and h._timed is req and h.in_row == 0 and h._busy is False
    assert h.time(req, 2, 0) == GOOD_TIMING
    other = dict(req)
    h.time(other, 2, False, 5)
    (a, na), (b, nb), (c, nc) = asked
    assert a == ("time", 1, {**req, "inputs": {"gradOutput": 0, "self": 1, "target": None}}, 2, True) and na == 2
    assert b == ("time", 2, None, 2, False) and nb == 0
    assert c[:3] == ("time", 3, {**req, "inputs": {"gradOutput": 0, "self": 1, "target": None}}) and nc == 2
    assert h.close() is None


@pytest.mark.parametrize("play, kind, said", [
    (_ready_then(_hang), "deadline", "timing overran its deadline of 0.2 s; the process was killed"),
    (_ready_then(lambda s, h, a: "exit", code=3), "exit 3", "the backend's process exited with code 3 during timing"),
    (_ready_then(lambda s, h, a: send(s, ("timed", h[1], {"not_timed": 1}))), "protocol",
     "protocol violation: a malformed timing reply (a not-timed reason 1); the process was killed"),
    (_ready_then(lambda s, h, a: send(s, ("timed", h[1], GOOD_TIMING), [np.zeros(1, np.float32)])), "protocol",
     None),
    # a reply's header is held to 1 MiB (a few fields of bounded text), not to the wire's 64 MiB
    (_ready_then(lambda s, h, a: send(s, ("timed", h[1], {"not_timed": "x" * (1 << 20)}))), "protocol", None),
], ids=["deadline", "exit", "protocol", "arrays", "oversized"])
def test_a_timing_round_that_fails_is_a_fault(monkeypatch, play, kind, said):
    started = _played(monkeypatch, play)
    h = Hosted("x:y", {}, timeout=5)
    req = _req((2, 3))
    with pytest.raises(Fault) as e:
        h.time(req, 2, True, 0.2)
    assert e.value.kind == kind and h._timed is None and h.in_row == 1 and h._busy is False
    if said:
        assert str(e.value) == said + "; a fresh backend process serves the next case"
    else:
        assert str(e.value).startswith("protocol violation: a malformed timing reply (a header of ")
    assert started[0].kills == (0 if kind.startswith("exit") else 1)


def test_a_run_without_a_repeat_is_one_call(monkeypatch):
    """run()'s repeat defaults to 1, as InProcess's does (the Host seam, suite/run/calls.py)."""
    asked = []

    def one(sock, header, arrays):
        asked.append(header[3])
        send(sock, *_ok(header[1]))
    _played(monkeypatch, _ready_then(one))
    h = Hosted("x:y", {}, timeout=5)
    [o] = h.run(_req((2, 3)))
    assert o.arrays["out"].tolist() == [[5.0] * 3] * 2 and asked == [1]
    assert h.close() is None


def _until_killed(sock):
    """Wait (at most 30 s) for _Played.kill's shutdown of `sock`, reading nothing from it."""
    poll = select.poll()
    poll.register(sock, 0)                                # POLLHUP only: the kill's shutdown
    for _ in range(600):
        if poll.poll(50):
            return None
    return 1


def _deaf(sock, out):
    """A process that says it is ready and then never reads a byte, until it is killed."""
    send(sock, READY)
    return _until_killed(sock)


def _returns_within(seconds, fn, played, said):
    """fn() in a thread, which must end within `seconds`; what it returned or raised. A thread still
    waiting is let go (its process killed) before the test fails with `said`."""
    got = []

    def go():
        try:
            got.append(fn())
        except BaseException as e:
            got.append(e)
    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    stuck = t.is_alive()
    if stuck:
        played.kill()
        t.join(5)
    assert not stuck, said
    [result] = got
    return result


@pytest.mark.parametrize("round", ["call", "timing"])
def test_a_request_the_process_never_reads_is_held_to_the_deadline_too(monkeypatch, round):
    """The deadline covers sending the request, not only waiting for the reply: arrays larger than
    the socket's buffers into a process that reads nothing end as a deadline fault, not a hang."""
    started = _played(monkeypatch, _deaf)
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    big = np.zeros((2048, 2048), np.float32)              # 2 x 16 MiB, the buffers are 4 MiB
    req = {**_req((2, 3)), "inputs": {"gradOutput": big, "self": big, "target": None}, "out_shape": big.shape}
    e = _returns_within(20, lambda: h.run(req, 1, 0.3) if round == "call" else h.time(req, 2, True, 0.3),
                        started[0], "the request's send waited past its deadline")
    assert isinstance(e, Fault) and e.kind == "deadline" and started[0].kills == 1
    said = ("the call overran its deadline of 0.3 s (--case-timeout); the backend's process was killed"
            if round == "call" else "timing overran its deadline of 0.3 s; the process was killed")
    assert str(e) == said + "; a fresh backend process serves the next case"


def test_output_that_comes_after_the_process_ended_is_waited_for(monkeypatch):
    """A process of the backend's own may hold the output socket after the backend's process died:
    what it writes before it lets go is still that call's output (take_output waits for the end)."""
    def play(sock, out):
        send(sock, READY)
        recv(sock)
        out.sendall(b"dying")
        left = out.dup()

        def its_child():
            time.sleep(0.3)
            left.sendall(b", and its child's last words")
            left.close()
        threading.Thread(target=its_child, daemon=True).start()
        return 3
    _played(monkeypatch, play)
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    with pytest.raises(Fault, match="exited with code 3 during the call"):
        h.run(_req((2, 3)), 1, 5)
    assert bytes(h.take_output().head) == b"dying, and its child's last words"
    h.close()


def test_take_output_waits_at_most_a_second_and_only_for_an_ended_process(monkeypatch):
    """The wait is bounded (a process of the backend's own may hold the socket for ever: a run waits
    1 s for it per take, not longer), and a live process's output is taken without waiting."""
    waits = []
    monkeypatch.setattr(host_mod.Drain, "take", lambda self, wait=0.0: waits.append(wait))
    _played(monkeypatch, _ready_then(_hang))
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    h.take_output()
    h._proc.exitcode = 0                                  # ended, not yet reaped
    h.take_output()
    h._kill()                                             # reaped: no process, its output still to take
    assert h._proc is None and h._drain is not None
    h.take_output()
    assert waits == [0.0, 1.0, 1.0]
    h.close()


def test_a_fresh_process_keeps_no_timed_call(monkeypatch):
    asked = []

    def step(sock, header, arrays):
        asked.append(header[2] is None)
        send(sock, ("timed", header[1], GOOD_TIMING))
    _played(monkeypatch, _ready_then(step), _ready_then(step))
    h = Hosted("x:y", {}, timeout=5)
    req = _req((2, 3))
    h.time(req, 2, True, 5)
    h._kill()
    h.time(req, 2, True, 5)
    assert asked == [False, False]


# -- close ---------------------------------------------------------------------------------------
def test_close_asks_the_process_and_returns_its_incident(monkeypatch):
    def closing(incident, code):
        def play(sock, out):
            send(sock, READY)
            assert recv(sock)[0] == ("close",)
            send(sock, ("closed", incident))
            return code
        return play
    for incident, code, said in [(None, 0, None), ("the backend's close() raised X: y", 0,
                                                   "the backend's close() raised X: y"),
                                 (None, 5, "the backend's process exited with code 5 after close()"),
                                 ("close() raised", 5, "close() raised"),
                                 (None, -11, "the backend's process was killed by signal 11 (SIGSEGV) after close()")]:
        _played(monkeypatch, closing(incident, code))
        h = Hosted("x:y", {}, timeout=5)
        h.start()
        assert h.close() == said and h._proc is None and h._drain is None


@pytest.mark.parametrize("play, said", [
    (_ready_then(_hang), "the backend's close() did not return within 0.2 s; its process was killed"),
    (_ready_then(lambda s, h, a: send(s, ("closed", 3)) or _hang(s, h, a)),
     "protocol violation: the backend's process sent a malformed reply to close (a reply ('closed', 3) to close); "
     "it was killed"),
    (_ready_then(lambda s, h, a: "exit", code=6), "the backend's process exited with code 6 during close() or its "
                                                  "exit handlers"),
], ids=["hangs", "malformed", "exits"])
def test_a_close_that_fails_is_one_incident(monkeypatch, play, said):
    monkeypatch.setattr(host_mod, "CLOSE_GRACE", 0.2)
    started = _played(monkeypatch, play)
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    assert h.close() == said and h._proc is None
    assert started[0].kills == (0 if "exited" in said else 1)


def test_close_during_a_call_only_kills(monkeypatch):
    started = _played(monkeypatch, _ready_then(_hang))
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    h._busy = True                                   # the run was interrupted inside a call
    assert h.close() is None and started[0].kills == 1 and h._proc is None


def test_close_adds_the_incidents_and_the_second_process(monkeypatch):
    _played(monkeypatch, _ready_then(), _ready_then(lambda s, h, a: "exit", code=2))
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    h.incidents.append("earlier")
    twin = h.twin()
    assert (twin.spec, twin.opts, twin.timeout, twin.restarts, twin.info) == (h.spec, h.opts, h.timeout, h.restarts,
                                                                              h.info)
    twin.start()
    assert h.close() == ("earlier; the backend's second process: the backend's process exited with code 2 during "
                         "close() or its exit handlers")
    assert h._twin is None


def test_what_the_process_printed_is_taken_per_call(monkeypatch):
    def play(sock, out):
        out.sendall(b"hello")
        send(sock, READY)
        header, _ = recv(sock)
        out.sendall(b" world")
        send(sock, *_ok(header[1]))
        header, _ = recv(sock)
        out.sendall(b"bye")
        return 0
    _played(monkeypatch, play)
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    h.run(_req((2, 3)), 1, 5)
    assert bytes(h.take_output().head) == b"hello world"
    assert h.close().startswith("the backend's process exited with code 0 during close()")
    assert h.take_output() is None


def test_the_process_is_made_with_the_backend_its_options_and_policy_and_is_reaped(monkeypatch):
    made, adopted, released = [], [], []

    def start(args, fds):
        made.append(args)
        p = _Played(_ready_then(), fds)
        p.pid = 4242
        p.start()
        return p
    monkeypatch.setattr(host_mod.starter, "start", start)
    monkeypatch.setattr(host_mod.reaper, "adopt", adopted.append)
    monkeypatch.setattr(host_mod.reaper, "release", released.append)
    from suite.run.confine import Policy
    policy = Policy(["/x"], 7)
    h = Hosted("x:y", {"device": "1"}, timeout=5)
    h.policy = policy
    h.start()
    (spec, opts, given, tmpdir), = made
    assert (spec, opts, adopted, released) == ("x:y", {"device": "1"}, [4242], [])
    # the process's own TMPDIR, made for it, confined as the session's policy says; gone with it
    assert given == Policy(["/x"], 7, tmpdir=tmpdir) and os.path.isdir(tmpdir) and policy.tmpdir is None
    assert h.close() is None and released == [4242] and not os.path.exists(tmpdir)


def test_each_backend_process_has_its_own_tmpdir_and_it_goes_with_the_process(tmp_path):
    """No cache on disk in TMPDIR makes the determinism tests' two processes agree, and a restart
    does not find what the process before it left (issue 43)."""
    h = Hosted("tests.test_run_host:Tmp", {}, timeout=HANG_S)
    try:
        h.start()
        first = _tmp_of(h)
        twin = h.twin()
        twin.start()
        second = _tmp_of(twin)
        assert first != second and os.path.isdir(first) and os.path.isdir(second)
        h._kill()
        assert not os.path.exists(first) and os.path.isdir(second)
        h.start()
        assert _tmp_of(h) not in (first, second)
    finally:
        h.close()
    assert not os.path.exists(second)


class Tmp:
    """Says, by raising, which temporary folder its process writes to."""
    name = "tmp"

    def run(self, call):
        import tempfile
        raise RuntimeError(f"tmp=<{tempfile.gettempdir()}>")


def _tmp_of(h):
    [o] = h.run(_req((2, 3)), 1, HANG_S)
    return re.search(r"tmp=<(.*?)>", o.raised)[1]


@pytest.mark.parametrize("round", ["call", "timing"])
def test_a_run_interrupted_inside_a_call_leaves_the_process_busy_and_close_only_kills(monkeypatch, round):
    started = _played(monkeypatch, _ready_then(_hang))
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    real = host_mod.recv

    def interrupted(sock, deadline=None, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(host_mod, "recv", interrupted)
    with pytest.raises(KeyboardInterrupt):
        if round == "call":
            h.run(_req((2, 3)), 1, 5)
        else:
            h.time(_req((2, 3)), 2, True, 5)
    monkeypatch.setattr(host_mod, "recv", real)
    assert h._busy is True
    assert h.close() is None and started[0].kills == 1


def test_the_twin_is_confined_as_the_first(monkeypatch):
    h = Hosted("x:y", {"a": "1"}, timeout=7, restarts=2)
    h.policy = object()
    twin = h.twin()
    assert twin.policy is h.policy and (twin.spec, twin.opts, twin.timeout, twin.restarts) == ("x:y", {"a": "1"}, 7, 2)
    assert twin is not h and h.twin() is twin


# -- a killed run leaves no backend behind ---------------------------------------------------------
class DaemonThenHang:
    """Starts a daemon (double fork, a session of its own) that writes its pid to `pidfile` and
    sleeps, then hangs in the call: what a killed run must not leave behind."""
    name = "daemon-then-hang"

    def __init__(self, pidfile):
        self.pidfile = pidfile

    def run(self, call):
        if os.fork() == 0:
            os.setsid()
            if os.fork():
                os._exit(0)
            Path(self.pidfile + ".tmp").write_text(str(os.getpid()))
            os.rename(self.pidfile + ".tmp", self.pidfile)
            time.sleep(3600)
            os._exit(0)
        time.sleep(3600)


_KILLED_PARENT = r'''
import sys
from suite.run import starter
from suite.run.host import Hosted
from tests.test_run_host import _req
h = Hosted("tests.test_run_host:DaemonThenHang", {"pidfile": sys.argv[1]}, timeout=600)
h.start()
print(h._proc.pid, starter.launcher().proc.pid, flush=True)
h.run(_req((2, 3)), 1, 600)
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")
def test_a_run_killed_while_its_backend_hangs_leaves_no_process_of_it_behind(tmp_path):
    """SIGKILL gives the run no chance to clean up: the kernel and the launcher must end the
    backend's process, the daemon it started and the launcher (suite/run/launcher.py). (With
    multiprocessing's forkserver, before issue 43, the forkserver stayed alive while the backend held
    its "alive" pipe, so the backend's parent-death signal never fired and the hung backend, and its
    device, outlived the run for ever.)"""
    root = Path(__file__).resolve().parents[1]
    pidfile = tmp_path / "daemon.pid"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_PARENT, str(pidfile)], cwd=root, stdout=subprocess.PIPE,
                            text=True)
    pids = []
    try:
        pids = [int(x) for x in proc.stdout.readline().split()]
        assert len(pids) == 2, pids
        end = time.monotonic() + 30
        while not pidfile.exists() and time.monotonic() < end:
            time.sleep(0.05)
        pids.append(int(pidfile.read_text()))
        assert all(map(alive, pids))
        proc.kill()
        proc.wait(HANG_S)
        end = time.monotonic() + 20
        while any(map(alive, pids)) and time.monotonic() < end:
            time.sleep(0.05)
        assert [p for p in pids if alive(p)] == [], f"outlived the killed run (backend, launcher, daemon: {pids})"
    finally:
        proc.kill()
        proc.stdout.close()
        for p in pids:
            if alive(p):
                os.kill(p, signal.SIGKILL)


# -- issue 21's rerun of host.py with the harness fix: start-up, reaping, replies held to their size
@pytest.mark.parametrize("timeout", [None, 0])
def test_without_a_case_timeout_the_start_up_is_not_limited_either(monkeypatch, timeout):
    """--case-timeout 0 (or none) turns every limit off, the start-up's floor too: a backend that
    takes longer than the floor to start is waited for."""
    monkeypatch.setattr(host_mod, "STARTUP_FLOOR", 0.1)

    def slow(sock, out):
        time.sleep(0.5)
        return _ready_then()(sock, out)
    _played(monkeypatch, slow)
    h = Hosted("x:y", {}, timeout=timeout)
    assert h.start().name == "scripted"
    assert h.close() is None


def test_reaping_a_process_that_let_its_socket_go_but_lives_on_waits_only_as_long_as_asked(monkeypatch):
    def deaf_after_close(sock, out):
        send(sock, READY)
        sock.close()
        return _until_killed(out)                         # the kill shuts its output down too
    started = _played(monkeypatch, deaf_after_close)
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    assert _returns_within(10, lambda: h._reap(0.3), started[0], "the reap waited past its 0.3 s") is None
    assert started[0].kills == 1 and h._proc is None


def test_a_reply_over_1_mib_or_with_arrays_to_close_is_a_protocol_violation(monkeypatch):
    """A call's reply header is held to 1 MiB (a few outcomes of bounded text), and close's reply
    carries no array: neither is read as far as the wire's own limits."""
    monkeypatch.setattr(host_mod, "CLOSE_GRACE", 0.5)

    def big_outcome(s, h, a):
        send(s, ("done", h[1], [_outcome_header(Outcome(raised="x" * (1 << 20)), None)]), [np.zeros((2, 3), np.float32)])
    _played(monkeypatch, _ready_then(big_outcome),
            _ready_then(lambda s, h, a: send(s, ("closed", "y" * (1 << 20))) or _hang(s, h, a)),
            _ready_then(lambda s, h, a: send(s, ("closed", None), [np.zeros(1, np.float32)]) or _hang(s, h, a)))
    h = Hosted("x:y", {}, timeout=5)
    with pytest.raises(Fault) as e:
        h.run(_req((2, 3)), 1, 5)
    assert e.value.kind == "protocol" and re.search(r"malformed reply \(a header of \d+ bytes with 1 arrays\)", str(e.value))
    h.start()
    said = h.close()
    assert re.fullmatch(r"protocol violation: the backend's process sent a malformed reply to close "
                        r"\(a header of \d+ bytes with 0 arrays\); it was killed", said), said
    h.start()
    said = h.close()
    assert re.fullmatch(r"protocol violation: the backend's process sent a malformed reply to close "
                        r"\(a header of \d+ bytes with 1 arrays\); it was killed", said), said


def test_each_output_of_a_call_with_several_keeps_what_the_outcome_said(monkeypatch):
    def step(sock, header, arrays):
        heads = [_outcome_header(Outcome(aliased="input self"), {"out": 0, "totalWeightOut": 1})]
        send(sock, ("done", header[1], heads), [np.zeros(2, np.float32), np.full((), 3, np.float32)])
    _played(monkeypatch, _ready_then(step))
    h = Hosted("x:y", {}, timeout=5)
    req = {**_req((2, 3)), "outputs": [["out", [2], "float32"], ["totalWeightOut", [], "float32"]],
           "written": ["out", "totalWeightOut"]}
    [o] = h.run(req, 1, 5)
    assert o.aliased == "input self"
    assert sorted(o.arrays) == ["out", "totalWeightOut"] and float(o.arrays["totalWeightOut"]) == 3.0
    assert h.close() is None


def test_close_joins_both_processes_incidents(monkeypatch):
    _played(monkeypatch, _ready_then(lambda s, h, a: "exit", code=6), _ready_then(lambda s, h, a: "exit", code=2))
    h = Hosted("x:y", {}, timeout=5)
    h.start()
    h.twin().start()
    assert h.close() == ("the backend's process exited with code 6 during close() or its exit handlers; the backend's "
                         "second process: the backend's process exited with code 2 during close() or its exit handlers")
