"""The backend's process (suite/run/host.py): a backend sees across the boundary exactly what it sees
in-process, arrays of every dtype and rank cross it intact, and each way a process can end is told
apart."""
from __future__ import annotations

import socket
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
from suite.run.wire import recv, send
from suite.run.wire import ProtocolError
from tests.careless_backends import Unfinished

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
    h = Hosted("tests.test_run_host:ViewEcho", {}, timeout=30)
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
    assert theirs.array.dtype == mine.array.dtype and theirs.array.shape == mine.array.shape == shape
    assert dtypes.to_bits(theirs.array).tolist() == dtypes.to_bits(mine.array).tolist()


def test_the_wrong_answer_is_described_not_carried(hosted):
    """A result of the wrong shape never crosses: the parent allocates only what it asked for."""
    [o] = hosted.run(_req((2, 3), out_shape=(3, 2)), 1, 30)
    assert o.array is None and o.returned == "shape (2, 3) dtype float32"


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
    h = Hosted("tests.test_run_host:Forgetful", {}, timeout=30)
    h.start()
    try:
        got = [h.run(_req((2, 3)), 1, 30)[0].array for _ in range(3)]
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
    h = Hosted("tests.misbehaving:RaisingInit", {}, timeout=30)
    with pytest.raises(BackendError, match="failed to start: RuntimeError: no device 0"):
        h.start()
    h = Hosted("tests.misbehaving:NoSuchThing", {}, timeout=30)
    with pytest.raises(BackendError, match="has no attribute 'NoSuchThing'"):
        h.start()


def test_faults_in_a_row_stop_the_restarts():
    h = Hosted("tests.misbehaving:CrashAlways", {}, timeout=30, restarts=1)
    h.start()
    kinds = []
    for _ in range(4):
        with pytest.raises(Fault) as e:
            h.run(_req((2, 3)), 1, 30)
        kinds.append(e.value.kind)
    assert kinds == ["exit 7", "exit 7", "gave up", "gave up"] and h.starts == 2


def test_a_process_that_ends_between_calls_is_an_incident_not_a_failed_case():
    """Its last call had returned: no case fails, the next call gets a fresh backend, and the run
    gets an incident (which fails it)."""
    h = Hosted("tests.misbehaving:ExitAfterReturning", {}, timeout=30)
    h.start()
    req = _req((2, 3))
    mean = {**req, "op": "MseLossBackward", "attrs": {"reduction": 1},
            "inputs": {**req["inputs"], "target": req["inputs"]["self"]}}
    [o] = h.run(mean, 1, 30)
    assert o.array is not None and o.raised is None
    time.sleep(0.5)
    [o] = h.run({**mean, "attrs": {"reduction": 0}}, 1, 30)
    assert o.array is not None and h.starts == 2
    assert h.close() == "the backend's process exited with code 0 between calls, after a call had returned; it was restarted"
    h = Hosted("tests.misbehaving:ExitAfterReturning", {}, timeout=30)
    h.start()
    h.run(mean, 1, 30)
    time.sleep(0.5)
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


def _good():
    return [_outcome_header(Outcome(array=np.zeros(1)), 0), _outcome_header(Outcome(status=161002), None)]


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
    "index out of range": _with(0, array=1),
    "negative index": _with(0, array=-1),
    "bool index": _with(0, array=False),
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
    outs = protocol.done(("done", 7, _good()), 7, 2, 1)
    assert [o["array"] for o in outs] == [0, None] and outs[1]["status"] == 161002


@pytest.mark.parametrize("name", MALFORMED)
def test_every_field_of_a_reply_is_checked(name):
    with pytest.raises(protocol.ProtocolError):
        protocol.done(MALFORMED[name], 7, 2, 1)


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
    h = Hosted("tests.test_run_host:Counting", {}, timeout=30)
    try:
        outs = h.run(_req((2, 3)), 2, 30)
    finally:
        assert h.close() is None
    assert [o.array.reshape(-1)[0] for o in outs] == [1, 2]


class JunkLater:
    """Answers, then writes junk to the suite's socket from a thread of its own, after the reply."""
    name = "junk-later"

    def run(self, call):
        import threading
        from tests.misbehaving import wire_socket

        def junk():
            with wire_socket() as s:
                s.sendall(b"junk" * 10)
        threading.Timer(0.05, junk).start()
        return np.zeros(call.out_shape, dtype=call.out_dtype)


def test_junk_between_calls_is_an_incident_and_the_next_call_runs_on_a_fresh_process():
    h = Hosted("tests.test_run_host:JunkLater", {}, timeout=30)
    [o] = h.run(_req((2, 3)), 1, 30)
    time.sleep(0.5)
    [o] = h.run(_req((2, 3)), 1, 30)
    assert o.array is not None and h.starts == 2
    assert "protocol violation: the backend's process wrote to the suite's socket between calls" in h.close()


def test_junk_in_a_reply_fails_that_call_as_a_protocol_fault_and_the_next_one_runs():
    h = Hosted("tests.misbehaving:SocketJunk", {}, timeout=30)
    req = _req((2, 3))
    mean = {**req, "op": "MseLossBackward", "attrs": {"reduction": 1},
            "inputs": {**req["inputs"], "target": req["inputs"]["self"]}}
    with pytest.raises(Fault) as e:
        h.run(mean, 1, 30)
    assert e.value.kind == "protocol" and str(e.value).startswith("protocol violation: ")
    [o] = h.run({**mean, "attrs": {"reduction": 0}}, 1, 30)
    assert o.array is not None and h.starts == 2 and h.close() is None


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
    h = Hosted("tests.test_run_host:Says", {"what": "unprintable"}, timeout=30)
    [o] = h.run(_req((2, 3)), 1, 30)
    [o2] = h.run(_req((2, 3)), 1, 30)
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


def test_numpy_subclasses_are_judged_by_value_or_refused():
    for what in ("matrix", "masked-none"):
        o = _says(what)
        assert type(o.array) is np.ndarray and o.array.tolist() == [[1.0] * 3] * 2, what
    o = _says("masked-one")
    assert o.array is None and "MaskedArray with 2 masked elements" in o.violation
    h = Hosted("tests.test_run_host:Says", {"what": "matrix"}, timeout=30)
    [o] = h.run(_req((2, 3)), 1, 30)
    assert o.array.tolist() == [[1.0] * 3] * 2 and h.close() is None


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
    h = Hosted("tests.test_run_host:Loud", {}, timeout=30)
    h.start()
    try:
        logs = []
        for _ in range(2):
            h.run(_req((2, 3)), 1, 30)
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
    h = Hosted("tests.test_run_host:Pid", {}, timeout=30)
    h.start()
    twin = h.twin()
    assert h.twin() is twin
    [a] = h.run(_req((2, 3)), 1, 30)
    [b] = twin.run(_req((2, 3)), 1, 30)
    assert a.array.reshape(-1)[0] != b.array.reshape(-1)[0] and twin.info == h.info
    assert h.close() is None and twin._proc is None
    h = Hosted("tests.misbehaving:ExitInClose", {}, timeout=30)
    h.start()
    h.twin().run(_req((2, 3)), 1, 30)
    found = h.close()
    assert found.count("during close() or its exit handlers") == 2 and "the backend's second process: " in found, found


# -- NotImplementedError is a crash, not a skip (issue 20, item 10e) -----------------------------
def test_not_implemented_is_a_crash_of_the_backends_never_unsupported():
    """Only suite.Unsupported skips a case. A backend that raises NotImplementedError computes
    nothing; if that were a skip, a backend with no kernel at all would make a run of skips."""
    o, raw = call_once(Unfinished(), _req((2, 3)), [])
    assert raw is None and o.unsupported is None and o.array is None
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
    assert raw is None and o.raised is None and o.array is None
    assert (o.device_fault, o.device_lost, o.violation) == (fault, lost, violation)
