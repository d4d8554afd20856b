"""The wire between the suite and the backend's process (suite/run/wire.py), over a socket pair in
pytest's process: what crosses intact, and every way bytes that are not a message are refused
(ProtocolError, EOFError or the deadline), never a traceback of the unpickler or a wrong array."""
from __future__ import annotations

import pickle
import socket
import struct
import threading
import time
import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest

from suite.common import dtypes
from suite.run import wire
from suite.run.wire import ProtocolError, _Timeout, pending, recv, send
from tests.waiting import HANG_S


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def _raw(header, metas, count=None, total=0, magic=b"ACN1", body=b""):
    head = pickle.dumps((header, metas), protocol=4)
    return struct.pack("<4sQQQ", magic, len(head), len(metas) if count is None else count, total) + head + body


def _recv_in_thread(sock, **kw):
    """recv in a thread (a message larger than the socket's buffer is sent while it is read)."""
    got = {}

    def run():
        try:
            got["m"] = recv(sock, time.monotonic() + 30, **kw)
        except BaseException as e:                 # noqa: B036  (reported by the test)
            got["e"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, got


def _expect(arrays):
    return [(dtypes.name_of(a.dtype), tuple(a.shape)) for a in arrays]


def test_a_small_message_crosses_with_every_array_intact(pair):
    a, b = pair
    arrays = [np.arange(6, dtype=np.float16).reshape(2, 3)[:, ::-1], np.array(3.5, dtypes.bfloat16),
              np.zeros((0, 4), np.float32), np.arange(5, dtype=np.int64)]
    send(a, ("x", {"k": [1, 2.5, None]}), arrays)
    head, got = recv(b, None, expect=_expect(arrays))
    assert head == ("x", {"k": [1, 2.5, None]})
    assert [(g.dtype, g.shape) for g in got] == [(x.dtype, x.shape) for x in arrays]
    assert [dtypes.to_bits(g).tolist() for g in got] == [dtypes.to_bits(x).tolist() for x in arrays]
    assert not pending(b)                          # nothing of the message is left behind


@pytest.mark.parametrize("n", [(1 << 18) + 1, (1 << 22) + 3])
def test_a_large_message_is_read_straight_into_its_arrays(pair, n):
    """Above 1 MiB the arrays are read one by one (in 16 MiB chunks for a large one), each into
    its own fresh array, and the header still comes first."""
    a, b = pair
    x = np.arange(n, dtype=np.float32)
    y = np.arange(7, dtype=np.int8)[::-1]
    z = np.zeros((0,), np.float16)
    t, got = _recv_in_thread(b, expect=_expect([x, y, z]))
    send(a, ("big", n), [x, y, z], time.monotonic() + HANG_S)
    t.join(HANG_S)
    head, arrays = got["m"]
    assert head == ("big", n)
    assert arrays[0].flags.writeable and arrays[0].flags.owndata and arrays[0].tolist() == x.tolist()
    assert arrays[1].flags.owndata                 # each array its own memory, not a view of one buffer
    assert arrays[1].tolist() == [6, 5, 4, 3, 2, 1, 0] and arrays[2].shape == (0,)
    assert not pending(b)


def test_a_large_array_of_several_axes_is_read_whole(pair):
    """Read through a flat byte view: a view of the array's own shape would be read by its rows."""
    a, b = pair
    x = np.arange(1 << 19, dtype=np.float32).reshape(512, 1024)
    t, got = _recv_in_thread(b, expect=_expect([x]))
    send(a, ("2d",), [x], time.monotonic() + HANG_S)
    t.join(HANG_S)
    head, arrays = got["m"]
    assert head == ("2d",) and arrays[0].shape == (512, 1024) and np.array_equal(arrays[0], x)
    assert not pending(b)


def test_a_large_contiguous_array_is_sent_from_its_own_memory(pair):
    """A call's output can be gigabytes: sending it must not copy it (a second copy of every
    output would double the child's memory at scale). The reader discards into a buffer made
    before tracing, so what is traced is the sender's alone."""
    a, b = pair
    x = np.arange(1 << 23, dtype=np.float32)                # 32 MiB, contiguous
    sink = bytearray(1 << 20)
    done = threading.Event()

    def drain():
        view = memoryview(sink)
        while b.recv_into(view):
            pass
        done.set()
    t = threading.Thread(target=drain, daemon=True)
    t.start()
    tracemalloc.start()
    try:
        send(a, ("big",), [x], time.monotonic() + HANG_S)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    a.shutdown(socket.SHUT_WR)
    assert done.wait(30)
    assert peak < x.nbytes // 8, f"send allocated {peak} bytes for a {x.nbytes}-byte array"


def test_a_message_of_exactly_the_small_limit_is_read_in_one_piece(pair):
    a, b = pair
    x = np.zeros(wire._SMALL // 4, np.float32)
    x[-1] = 9
    t, got = _recv_in_thread(b, expect=_expect([x]))
    send(a, ("edge",), [x], time.monotonic() + HANG_S)
    t.join(HANG_S)
    head, [g] = got["m"]
    assert head == ("edge",) and g[-1] == 9 and g.shape == x.shape
    assert not g.flags.owndata and g.flags.writeable       # read with the header, in one buffer


def test_an_array_not_asked_for_is_refused(pair):
    a, b = pair
    send(a, ("y",), [np.ones(3, np.float32)])
    with pytest.raises(ProtocolError, match=r"float32 shape \(3,\) that was not asked for"):
        recv(b, None, expect=[("float32", (4,))])


def test_an_array_of_an_expected_shape_but_another_dtype_is_refused(pair):
    a, b = pair
    send(a, ("y",), [np.ones(3, np.float16)])
    with pytest.raises(ProtocolError, match="not asked for"):
        recv(b, None, expect=[("float32", (3,))])


def test_no_arrays_expected_refuses_any(pair):
    a, b = pair
    send(a, ("y",), [np.ones((), np.float32)])
    with pytest.raises(ProtocolError, match="not asked for"):
        recv(b, None, expect=[])


def test_a_reply_that_names_a_class_is_malformed_never_unpickled(pair):
    a, b = pair
    head = pickle.dumps((ValueError("x"), []), protocol=4)
    a.sendall(struct.pack("<4sQQQ", b"ACN1", len(head), 0, 0) + head)
    with pytest.raises(ProtocolError, match=r"a malformed header \(UnpicklingError: a reply may not name "
                                            r"builtins.ValueError\)"):
        recv(b, None)


def test_bytes_that_are_not_a_message_fail_at_once(pair):
    a, b = pair
    a.sendall(b"junk" * 10)
    with pytest.raises(ProtocolError, match=r"^bytes that are not a message: b'junkjunkjunkjunk'\.\.\.$"):
        recv(b, time.monotonic() + HANG_S)


@pytest.mark.parametrize("hlen, count, ok", [(1000, 3, True), (1001, 3, False), (1000, 4, False)])
def test_the_header_and_the_array_count_are_bounded(pair, hlen, count, ok):
    a, b = pair
    head = pickle.dumps((("h",), []), protocol=4)
    a.sendall(struct.pack("<4sQQQ", b"ACN1", hlen, count, 0) + head)
    if ok:                                  # within the bounds: the header is read (and then found short)
        with pytest.raises(_Timeout):
            recv(b, time.monotonic() + 0.3, max_header=1000, max_arrays=3)
    else:
        with pytest.raises(ProtocolError, match=f"^a header of {hlen} bytes with {count} arrays$"):
            recv(b, time.monotonic() + 5, max_header=1000, max_arrays=3)


def test_the_default_bounds(pair):
    a, b = pair
    a.sendall(struct.pack("<4sQQQ", b"ACN1", (1 << 26) + 1, 0, 0))
    with pytest.raises(ProtocolError, match="a header of 67108865 bytes with 0 arrays"):
        recv(b, time.monotonic() + HANG_S)
    a.sendall(struct.pack("<4sQQQ", b"ACN1", 10, 65, 0))
    with pytest.raises(ProtocolError, match="a header of 10 bytes with 65 arrays"):
        recv(b, time.monotonic() + HANG_S)


@pytest.mark.parametrize("metas, count, total, why", [
    ("not a list", 0, 0, "array list does not match the header"),
    ([("float32", (2,))], 2, 8, "array list does not match the header"),
    ([["float32", (2,)]], 1, 8, r"array description \['float32', \(2,\)\]"),
    ([("float32", (2,), 1)], 1, 8, r"array description \('float32', \(2,\), 1\)"),
    ([("float32", [2])], 1, 8, r"shape \[2\]"),
    ([("float32", (-2,))], 1, 0, r"shape \(-2,\)"),
    ([("float32", (2.0,))], 1, 8, r"shape \(2.0,\)"),
    ([("float32", (True,))], 1, 4, r"shape \(True,\)"),
    ([(7, (2,))], 1, 8, "dtype 7"),
    ([("complex64", (2,))], 1, 16, "unexpected dtype 'complex64'"),
    ([("float32", (2,))], 1, 12, "arrays of 8 bytes announced as 12"),
    ([("float32", (2,)), ("int8", (3,))], 2, 12, "arrays of 11 bytes announced as 12"),
    # 2**64 elements: a product in int64 wraps to 0 bytes, as announced, and the reshape then fails
    ([("float32", (1 << 32, 1 << 32))], 1, 0, f"arrays of {1 << 66} bytes announced as 0"),
])
def test_every_field_of_the_array_list_is_checked(pair, metas, count, total, why):
    a, b = pair
    a.sendall(_raw(("h",), metas, count=count, total=total, body=b"\0" * total))
    with pytest.raises(ProtocolError, match=r"^a malformed header \(ValueError: " + why):
        recv(b, time.monotonic() + HANG_S)


def test_a_malformed_header_is_said_in_at_most_300_characters(pair):
    a, b = pair
    name = "x" * 1000
    a.sendall(_raw(("h",), [(name, (1,))], total=4, body=b"\0" * 4))
    with pytest.raises(ProtocolError) as e:
        recv(b, time.monotonic() + HANG_S)
    assert len(str(e.value)) == 300 and str(e.value).startswith("a malformed header (ValueError: unexpected dtype 'xxx")
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_a_header_that_is_not_a_pair_is_malformed(pair):
    a, b = pair
    head = pickle.dumps(("only",), protocol=4)
    a.sendall(struct.pack("<4sQQQ", b"ACN1", len(head), 0, 0) + head)
    with pytest.raises(ProtocolError, match=r"^a malformed header \(ValueError: not enough values to unpack"):
        recv(b, time.monotonic() + HANG_S)


def test_a_connection_closed_mid_message_is_eof(pair):
    a, b = pair
    a.sendall(_raw(("h",), [("float32", (2,))], total=8, body=b"\0" * 4))
    a.close()
    with pytest.raises(EOFError, match="^the connection closed$"):
        recv(b, time.monotonic() + HANG_S)


def test_a_connection_closed_before_a_message_is_eof(pair):
    a, b = pair
    a.close()
    with pytest.raises(EOFError, match="^the connection closed$"):
        recv(b, None)


def test_a_message_that_does_not_come_in_time_is_a_timeout(pair):
    a, b = pair
    t0 = time.monotonic()
    with pytest.raises(_Timeout):
        recv(b, t0 + 0.2)
    assert time.monotonic() - t0 >= 0.2
    with pytest.raises(_Timeout):                 # a deadline already past: not even one read
        recv(b, t0 - 1)
    a.sendall(_raw(("h",), [("float32", (1 << 19,))], total=1 << 21, body=b"\0" * 100))
    with pytest.raises(_Timeout):                 # a large array that stops coming
        recv(b, time.monotonic() + 0.3)


def test_a_send_nobody_reads_is_a_timeout(pair):
    a, b = pair
    with pytest.raises(_Timeout):
        send(a, ("h",), [np.zeros(1 << 24, np.float32)], time.monotonic() + 0.3)
    with pytest.raises(_Timeout):
        send(a, ("h",), [], time.monotonic() - 1)


def test_a_send_within_its_deadline_leaves_the_socket_blocking_for_the_next(pair):
    a, b = pair
    send(a, ("h",), [], time.monotonic() + HANG_S)
    assert recv(b, time.monotonic() + HANG_S) == (("h",), [])
    send(a, ("h2",), [])
    assert a.gettimeout() is None and recv(b) == (("h2",), [])


def test_the_deadline_left():
    assert wire._deadline_left(None) is None
    left = wire._deadline_left(time.monotonic() + 10)
    assert 9 < left <= 10
    with pytest.raises(_Timeout):
        wire._deadline_left(time.monotonic())
    with pytest.raises(_Timeout):
        wire._deadline_left(time.monotonic() - 1)


def test_a_deadline_reached_exactly_is_a_timeout_not_a_zero_timeout(monkeypatch):
    """Nothing left is a timeout: settimeout(0) would make the next read non-blocking, and its
    BlockingIOError is no _Timeout."""
    monkeypatch.setattr(wire, "time", SimpleNamespace(monotonic=lambda: 100.0))
    with pytest.raises(_Timeout):
        wire._deadline_left(100.0)
    assert wire._deadline_left(100.5) == 0.5


def test_pending_says_whether_bytes_wait(pair):
    a, b = pair
    assert pending(b) is False
    a.sendall(b"x")
    assert pending(b) is True and pending(b) is True        # peeked, not read
    assert b.recv(1) == b"x" and pending(b) is False
    a.close()
    assert pending(b) is False                               # readable, but at the end: no bytes
    b.close()
    assert pending(b) is False                               # a closed socket: none


def test_the_socket_pair_asks_for_large_buffers(monkeypatch):
    asked = []

    class Sock:
        def __init__(self, refuse):
            self.refuse = refuse

        def setsockopt(self, level, opt, value):
            asked.append((self, level, opt, value))
            if self.refuse:
                raise OSError("capped")

    s1, s2 = Sock(True), Sock(False)
    monkeypatch.setattr(wire.socket, "socketpair", lambda: (s1, s2))
    assert wire.socket_pair() == (s1, s2)
    assert asked == [(s, socket.SOL_SOCKET, o, 4 << 20) for s in (s1, s2) for o in (socket.SO_SNDBUF,
                                                                                    socket.SO_RCVBUF)]


def test_a_real_socket_pair_carries_a_message():
    a, b = wire.socket_pair()
    try:
        assert a.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) > 300_000
        send(a, ("h",), [np.ones(3, np.float32)])
        assert recv(b, None, expect=[("float32", (3,))])[1][0].tolist() == [1.0] * 3
    finally:
        a.close()
        b.close()
