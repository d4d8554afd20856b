"""What the backend's process may send back, field by field (docs/backend-contract.md, "A process
of its own"). The backend shares that process with the suite's own serving code: a backend that
writes to the wrong descriptor, or a bug in the serving code, must not turn into a traceback in
pytest, a garbage reason, or a wrong answer to a later case. So every reply is checked whole,
by type and range, before anything of it is used; any departure is a ProtocolError, and the
host kills the process (its next reply could not be trusted either)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from suite.run.wire import ProtocolError

# Each outcome of a call, as its header carries it (suite.run.calls.Outcome, with `array` each
# written output's index into the message's arrays, by name). Exactly one of RESULTS is set;
# `aliased` only with arrays, `device_lost` only with a device fault, `trace` (the backend's own
# frames) only with `raised`.
RESULTS = ("array", "status", "unsupported", "raised", "returned", "violation", "device_fault")
TEXTS = ("unsupported", "raised", "trace", "returned", "aliased", "violation", "device_fault")
KEYS = frozenset(RESULTS + TEXTS + ("device_lost",))
MAX_TEXT = 1 << 16                  # the child cuts a backend's own words far below this


def _int(v: Any) -> bool:
    return type(v) is int            # bool is an int subclass, and no status


def _text(v: Any) -> bool:
    return type(v) is str and len(v) <= MAX_TEXT


Written = Sequence[Tuple[str, str, tuple]]     # a call's written outputs: (name, dtype name, shape)


def outcome(head: Any, n_arrays: int, written: Written) -> Dict[str, Any]:
    """One outcome's fields, checked (ProtocolError names the first one that is wrong). `written`:
    the call's written outputs, whose `array` is a dict of each one's index by name."""
    if type(head) is not dict:
        raise ProtocolError(f"an outcome that is a {type(head).__name__}, not a dict")
    if set(head) != KEYS:
        extra, missing = sorted(map(repr, set(head) - KEYS)), sorted(KEYS - set(head))
        raise ProtocolError(f"an outcome with keys {', '.join(extra) or 'none'} too many and "
                            f"{', '.join(missing) or 'none'} missing")
    i = head["array"]
    if i is not None:
        names = [n for n, _, _ in written]
        if type(i) is not dict or sorted(i, key=str) != sorted(names):
            raise ProtocolError(f"arrays {_short(i)} for the outputs {', '.join(names)}")
        for k, v in i.items():
            if not (_int(v) and 0 <= v < n_arrays):
                raise ProtocolError(f"array index {v!r} of {k} (the reply carries {n_arrays} arrays)")
    if head["status"] is not None and not _int(head["status"]):
        raise ProtocolError(f"status {head['status']!r}: not an int")
    for k in TEXTS:
        if head[k] is not None and not _text(head[k]):
            raise ProtocolError(f"{k} {type(head[k]).__name__}: not a str of at most {MAX_TEXT} characters")
    if type(head["device_lost"]) is not bool:
        raise ProtocolError(f"device_lost {head['device_lost']!r}: not a bool")
    set_ = [k for k in RESULTS if head[k] is not None]
    if len(set_) != 1:
        raise ProtocolError(f"an outcome with {len(set_)} results ({', '.join(set_) or 'none'}), not one")
    if head["aliased"] is not None and i is None:
        raise ProtocolError("aliased without an array")
    if head["trace"] is not None and head["raised"] is None:
        raise ProtocolError("trace without an exception raised")
    if head["device_lost"] and head["device_fault"] is None:
        raise ProtocolError("device_lost without a device fault")
    return dict(head)


def done(reply: Any, seq: int, repeat: int, n_arrays: int, written: Written,
         arrays: Sequence[Any] = ()) -> List[Dict[str, Any]]:
    """The outcomes of a 'run' request numbered `seq` that made `repeat` calls: ('done', seq,
    [outcome] * repeat), each array of the message used by exactly one outcome. `written`: each
    outcome's arrays name exactly these outputs, each of its own dtype and shape among the
    message's `arrays`."""
    if type(reply) is not tuple or len(reply) != 3 or reply[0] != "done":
        raise ProtocolError(f"a reply {_short(reply)}, not ('done', {seq}, outcomes)")
    if reply[1] != seq or not _int(reply[1]):
        raise ProtocolError(f"a reply to request {_short(reply[1])}, not to this one ({seq})")
    heads = reply[2]
    if type(heads) is not list or len(heads) != repeat:
        raise ProtocolError(f"{_short(heads)} as the outcomes of {repeat} calls")
    outs = [outcome(h, n_arrays, written) for h in heads]
    spec = {n: (d, tuple(s)) for n, d, s in written}
    for o in outs:
        for n, k in (o["array"] or {}).items():
            a = arrays[k]
            if (_dtype_name(a), tuple(a.shape)) != spec[n]:
                raise ProtocolError(f"{n} as dtype {_dtype_name(a)} shape {tuple(a.shape)}, not "
                                    f"{spec[n][0]} {spec[n][1]}")
    used = [k for o in outs for k in (o["array"] or {}).values()]
    if sorted(used) != list(range(n_arrays)):
        raise ProtocolError(f"array indices {used} for the {n_arrays} arrays carried")
    return outs


def _dtype_name(a: Any) -> str:
    from suite.common import dtypes
    return dtypes.name_of(a.dtype)


READY = {"name": str, "capabilities": list, "products": list, "deterministic": bool, "working_memory": float}


def ready(reply: Any) -> Tuple[str, Any]:
    """The start-up reply, checked: ('ready', fields) with exactly READY's fields and types, or
    ('error', text) when the backend could not be made."""
    if type(reply) is tuple and len(reply) == 2 and reply[0] == "error" and _text(reply[1]):
        return reply
    if type(reply) is not tuple or len(reply) != 2 or reply[0] != "ready" or type(reply[1]) is not dict:
        raise ProtocolError(f"a start-up reply {_short(reply)}")
    fields = reply[1]
    if set(fields) != set(READY) or any(type(fields[k]) is not t for k, t in READY.items()):
        raise ProtocolError(f"start-up fields {_short(fields)}")
    if not all(_text(c) for c in fields["capabilities"] + fields["products"]) or not _text(fields["name"]):
        raise ProtocolError(f"start-up fields {_short(fields)}")
    return reply


def timed(reply: Any, seq: int, launches: int) -> Dict[str, Any]:
    """The reply to a timing round numbered `seq` (suite/run/calls.py time_hook): ('timed', seq, answer),
    the answer {"not_timed": text} or {"clock", "source", "seconds", "wall_s"} with `launches`
    floats (their values are the protocol's to judge, suite/perf/protocol.py)."""
    if type(reply) is not tuple or len(reply) != 3 or reply[0] != "timed" or type(reply[2]) is not dict:
        raise ProtocolError(f"a reply {_short(reply)}, not ('timed', {seq}, answer)")
    if not _int(reply[1]) or reply[1] != seq:
        raise ProtocolError(f"a timing reply to request {_short(reply[1])}, not to this one ({seq})")
    a = reply[2]
    if set(a) == {"not_timed"}:
        if not _text(a["not_timed"]):
            raise ProtocolError(f"a not-timed reason {_short(a['not_timed'])}")
        return dict(a)
    if set(a) != {"clock", "source", "seconds", "wall_s"}:
        raise ProtocolError(f"timing fields {_short(sorted(map(str, a)))}")
    if not (_text(a["clock"]) and _text(a["source"]) and type(a["wall_s"]) is float):
        raise ProtocolError(f"timing fields {_short(a)}")
    secs = a["seconds"]
    if type(secs) is not list or len(secs) != launches or any(type(x) is not float for x in secs):
        raise ProtocolError(f"{_short(secs)} as the seconds of {launches} launches")
    return dict(a)


def closed(reply: Any) -> Optional[str]:
    """The reply to 'close': ('closed', incident or None)."""
    if type(reply) is not tuple or len(reply) != 2 or reply[0] != "closed" or not (
            reply[1] is None or _text(reply[1])):
        raise ProtocolError(f"a reply {_short(reply)} to close")
    return reply[1]


def _short(v: Any) -> str:
    """A bounded, printable description of whatever came (never its whole repr)."""
    try:
        text = repr(v)
    except Exception:                 # a plain value's repr does not raise; be sure anyway
        text = f"<{type(v).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."
