"""The wire between the suite and the backend's process (suite/run/host.py): a message is a header of
plain values (pickled without any class: a reply is unpickled with no globals allowed) and raw
array bytes read straight into the receiving arrays: one copy each way and no /dev/shm."""
from __future__ import annotations

import io
import math
import pickle
import select
import socket
import struct
import time
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from suite.common import dtypes


# -- the wire ---------------------------------------------------------------------------------
# A message: a fixed part (a magic word, header length, number of arrays, their total bytes), the
# header, then the arrays' bytes. A small message goes in one write and is read in two; a large one
# is read straight into its arrays. The magic word makes bytes that are not a message (a backend
# writing to a descriptor it should not) fail at once as malformed, not wait for a deadline.
_MAGIC = b"ACN1"
_HEAD = struct.Struct("<4sQQQ")
_MAX_HEADER = 1 << 26
_MAX_ARRAYS = 64
_CHUNK = 1 << 24
_SMALL = 1 << 20
_SOCKET_BUFFER = 4 << 20       # the kernel's default (~200 kB) makes large transfers 7x slower


class _Plain(pickle.Unpickler):
    """Containers, strings and numbers only: a reply naming any class is malformed."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a reply may not name {module}.{name}")


class _Timeout(Exception):
    pass


class ProtocolError(ValueError):
    """The bytes that came are not a well-formed message (or not the reply that was asked for): the
    sender broke the wire protocol. Anything a malformed header makes the unpickler or the checks
    raise becomes this, with one line saying what was wrong."""


def _deadline_left(deadline: Optional[float]) -> Optional[float]:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Timeout()
    return left


def socket_pair() -> Tuple[socket.socket, socket.socket]:
    pair = socket.socketpair()
    for sock in pair:
        for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, _SOCKET_BUFFER)
            except OSError:                  # capped or refused: slower, not wrong
                pass
    return pair


def send(sock: socket.socket, header: Any, arrays: Sequence[np.ndarray] = (),
         deadline: Optional[float] = None) -> None:
    metas, raws = [], []
    for a in arrays:
        a = a if a.flags.c_contiguous else np.array(a, order="C")      # (ascontiguousarray makes 0-d 1-d)
        metas.append((dtypes.name_of(a.dtype), tuple(int(n) for n in a.shape)))
        if a.size:
            raws.append(memoryview(a.reshape(-1).view(np.uint8)))
    head = pickle.dumps((header, metas), protocol=4)
    total = sum(len(r) for r in raws)
    fixed = _HEAD.pack(_MAGIC, len(head), len(metas), total)
    if total <= _SMALL:
        chunks = [b"".join([fixed, head, *raws])]
    else:
        chunks = [fixed + head] + [r[i:i + _CHUNK] for r in raws for i in range(0, len(r), _CHUNK)]
    try:
        for chunk in chunks:
            sock.settimeout(_deadline_left(deadline))
            sock.sendall(chunk)
    except socket.timeout:
        raise _Timeout() from None


def _read_into(sock: socket.socket, view: memoryview, deadline: Optional[float]) -> None:
    pos, n = 0, len(view)
    while pos < n:
        sock.settimeout(_deadline_left(deadline))
        try:
            got = sock.recv_into(view[pos:], min(n - pos, _CHUNK))
        except socket.timeout:
            raise _Timeout() from None
        if got == 0:
            raise EOFError("the connection closed")
        pos += got


def _dtype(name: Any) -> np.dtype:
    if not isinstance(name, str):
        raise ValueError(f"dtype {name!r}")
    try:
        return dtypes.dtype_of(name)
    except KeyError:
        raise ValueError(f"unexpected dtype {name!r}") from None


def _metas(metas: Any, count: int, total: int, expect: Optional[List[Tuple[str, tuple]]]) -> List[Tuple[np.dtype, tuple, int]]:
    if not isinstance(metas, list) or len(metas) != count:
        raise ValueError("array list does not match the header")
    out, size = [], 0
    for meta in metas:
        if not isinstance(meta, tuple) or len(meta) != 2:
            raise ValueError(f"array description {meta!r}")
        name, shape = meta
        if expect is not None and (name, tuple(shape)) not in expect:
            raise ValueError(f"an array of dtype {name} shape {shape} that was not asked for")
        if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
            raise ValueError(f"shape {shape!r}")
        dt = _dtype(name)
        nbytes = math.prod(shape) * dt.itemsize      # exact: an int64 product could wrap to the total
        out.append((dt, shape, nbytes))
        size += nbytes
    if size != total:
        raise ValueError(f"arrays of {size} bytes announced as {total}")
    return out


def recv(sock: socket.socket, deadline: Optional[float] = None,
         expect: Optional[List[Tuple[str, tuple]]] = None, max_header: int = _MAX_HEADER,
         max_arrays: int = _MAX_ARRAYS) -> Tuple[Any, List[np.ndarray]]:
    """One message. Arrays are allocated from the header's dtype and shape, and must be among
    `expect` where given (the parent never allocates what it did not ask for), at most `max_arrays`
    of them. EOFError: the connection closed; ProtocolError: what came is not a message."""
    fixed = bytearray(_HEAD.size)
    _read_into(sock, memoryview(fixed), deadline)
    magic, hlen, count, total = _HEAD.unpack(fixed)
    if magic != _MAGIC:
        raise ProtocolError(f"bytes that are not a message: {bytes(fixed[:16])!r}...")
    if hlen > max_header or count > max_arrays:
        raise ProtocolError(f"a header of {hlen} bytes with {count} arrays")
    small = total <= _SMALL
    buf = bytearray(hlen + total if small else hlen)
    _read_into(sock, memoryview(buf), deadline)
    try:
        header, metas = _Plain(io.BytesIO(bytes(buf[:hlen]))).load()
        specs = _metas(metas, count, total, expect)
    except Exception as e:              # whatever the bytes made the unpickler or the checks do
        raise ProtocolError(f"a malformed header ({type(e).__name__}: {e})"[:300]) from None
    arrays, pos = [], hlen
    for dt, shape, nbytes in specs:
        if small:
            a = np.frombuffer(buf, dtype=dt, count=nbytes // dt.itemsize, offset=pos).reshape(shape)
            pos += nbytes
        else:
            a = np.empty(shape, dtype=dt)
            if a.size:
                _read_into(sock, memoryview(a.reshape(-1).view(np.uint8)), deadline)
        arrays.append(a)
    return header, arrays


def pending(sock: socket.socket) -> bool:
    """Whether bytes are waiting on `sock` now (between calls there must be none)."""
    # select, not MSG_DONTWAIT: a socket with a timeout waits for readability before any recv.
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and bool(sock.recv(1, socket.MSG_PEEK))
    except (OSError, ValueError):
        return False
