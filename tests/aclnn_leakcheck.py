"""A pytest plugin that reports the host emulator's live resources around the aclnn backend's close().

    pytest --backend aclnn --backend-opt lib_dir=EMU -p tests.aclnn_leakcheck --aclnn-live-counts=FILE

Why a plugin: the suite closes its backend in pytest_unconfigure, after every test has run, so
only code inside the pytest process can see what is still alive once close() has returned; the
backend must run in pytest's process for that (--isolation none). Each
process that made a backend (the one process without xdist, every worker with it; the xdist
controller makes none) appends one JSON line to FILE:

    {"process": "main" | "gw0" ..., "products": [...], "soc": ...,
     "at_session_end": {"buffers": n, "tensors": n, "executors": n, "streams": n, "events": n},
     "after_close": {...}}

`at_session_end` is read before close() (per-call resources must already be gone; the session's
stream is still alive, which shows the counters are read from the live emulator), `after_close`
after it (everything must be gone), once `products` has been asked again (asking must not
re-initialise the device). A backend that is not the emulator yields {"error": ...}.
"""
from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Dict, Optional

import pytest

KINDS = ("buffers", "tensors", "executors", "streams")
_SESSION_END = pytest.StashKey[Dict[str, Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("aclnn-conformance").addoption(
        "--aclnn-live-counts", default=None, metavar="FILE",
        help="append the host emulator's live resource counts (before and after the backend's close()) "
             "to FILE as one JSON line per process (tests.aclnn_leakcheck)")


def live_counts(backend: Any) -> Dict[str, int]:
    """The emulator's live buffers, tensors, executors, streams and events (those its timing made);
    raises LookupError if not the emulator."""
    libs = getattr(backend, "libraries", None)
    fn = getattr(libs.runtime.handle, "aclemuLiveCounts", None) if libs is not None else None
    if fn is None:
        raise LookupError(f"backend {getattr(backend, 'name', type(backend).__name__)!r} does not run on "
                          f"the host emulator (no aclemuLiveCounts): {getattr(backend, 'unavailable', None)}")
    counts = [ctypes.c_int64() for _ in KINDS]
    fn(*[ctypes.byref(c) for c in counts])
    events = libs.runtime.handle.aclemuLiveEvents
    events.restype = ctypes.c_int64
    return {**{k: c.value for k, c in zip(KINDS, counts)}, "events": events()}


def _backend(config: pytest.Config) -> Optional[Any]:
    from suite.plugin import STATE  # not at import: -p loads this before conftest registers suite.plugin

    state = config.stash.get(STATE, None)
    return state.backend if state is not None else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session: pytest.Session):
    """After the last test, before the suite closes its backend (in its pytest_sessionfinish)."""
    yield
    config = session.config
    backend = _backend(config)
    if config.option.aclnn_live_counts is None or backend is None:
        return
    try:
        config.stash[_SESSION_END] = {"at_session_end": live_counts(backend)}
    except LookupError as exc:
        config.stash[_SESSION_END] = {"error": str(exc)}


@pytest.hookimpl(trylast=True)  # after suite.plugin has closed the backend (its pytest_sessionfinish)
def pytest_unconfigure(config: pytest.Config) -> None:
    path, backend = config.option.aclnn_live_counts, _backend(config)
    if path is None or backend is None:
        return
    record: Dict[str, Any] = {"process": getattr(config, "workerinput", {}).get("workerid", "main")}
    record.update(config.stash.get(_SESSION_END, {}))
    if "error" not in record:
        try:
            # Asked after close(), as a terminal reporter might: that must not bring the device back.
            record["products"] = list(backend.products)
            record["soc"] = getattr(backend, "soc_name", None)
            record["after_close"] = live_counts(backend)
        except LookupError as exc:
            record["error"] = str(exc)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())  # one write per line: safe across workers
    finally:
        os.close(fd)
