"""The backend's process (suite/host.py): a backend sees across the boundary exactly what it sees
in-process, arrays of every dtype and rank cross it intact, and each way a process can end is told
apart."""
from __future__ import annotations

import socket
import time
import weakref

import numpy as np
import pytest

from suite import dtypes, layout
from suite.backend import BackendError
from suite.host import Fault, Hosted, InProcess, recv, send

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
            out.reshape(-1)[0] = sig % 1000
        return out


@pytest.fixture(scope="module")
def hosted():
    h = Hosted("tests.test_host:ViewEcho", {}, timeout=30)
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
    h = Hosted("tests.test_host:Forgetful", {}, timeout=30)
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
    a.sendall(struct.pack("<QQQ", len(head), 0, 0) + head)
    with pytest.raises(pickle.UnpicklingError, match="may not name"):
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
