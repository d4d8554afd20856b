"""The CANN probe, in a child process (a `python -c` with a timeout): a native library that crashes or
hangs in aclInit or aclrtSetDevice costs one line naming the call, not the doctor's report."""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from suite import ops
from suite.backends import _aclnn_lib as lib
from suite.common.home import CHECKOUT


ACL_ERROR_REPEAT_INITIALIZE = 100002

# -- the CANN probe, in a child process ----------------------------------------------------------
def _loaded_path(name: str) -> Optional[str]:
    """Where the dynamic loader found `name` (Linux: this process's memory map)."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split(None, 5)[-1].strip() if line.count(" ") >= 5 else ""
                if path.endswith("/" + name):
                    return path
    except OSError:
        pass
    return None


def _probe_child(argv: Sequence[str]) -> None:
    """The probe's body, in its own process. It writes one JSON line per finding on the original
    stdout; before each native call that may crash or hang it writes what it is about to do, so the
    parent can name the call the child died in. The native libraries' own stdout goes to stderr."""
    args = json.loads(argv[0])
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def emit(kind: str, **fields: Any) -> None:
        proto.write(json.dumps({"kind": kind, **fields}) + "\n")
        proto.flush()

    lib_dir = args.get("lib_dir")
    dirs = lib.search_dirs(lib_dir, os.environ)
    loader = not lib_dir
    emit("dirs", dirs=[f"{d} ({why})" for d, why in dirs], loader=loader)
    handles: Dict[str, Any] = {}
    for name in (lib.RUNTIME_LIB, lib.TENSOR_LIB, *lib.OP_LIBS):
        emit("doing", what=f"loading {name}")
        try:
            located = lib.load_one(name, dirs, loader)
        except lib.LibraryError as e:
            emit("library", name=name, found=False, error=str(e))
            continue
        handles[name] = located.handle
        emit("library", name=name, found=True, path=located.path or _loaded_path(name),
             via="loader" if located.path is None else "search")
    runtime = handles.get(lib.RUNTIME_LIB)
    if runtime is not None:
        wanted = [*lib.RUNTIME_SYMBOLS, "aclrtGetDeviceCount"]
        emit("symbols", library=lib.RUNTIME_LIB, missing=[s for s in wanted if not hasattr(runtime, s)],
             emulator=hasattr(runtime, "aclemu_soc"))
    if lib.TENSOR_LIB in handles:
        emit("symbols", library=lib.TENSOR_LIB,
             missing=[s for s in lib.TENSOR_SYMBOLS if not hasattr(handles[lib.TENSOR_LIB], s)])
    op_libs = [(n, handles[n]) for n in lib.OP_LIBS if n in handles]
    for name in ops.OPERATORS:
        # The backend's naming of an operator's two entry points (suite/backends/_aclnn_lib.py).
        symbols = [f"aclnn{name}GetWorkspaceSize", f"aclnn{name}"]
        where = next((n for n, h in op_libs if all(hasattr(h, s) for s in symbols)), None)
        emit("operator", op=name, symbols=symbols, library=where, searched=[n for n, _ in op_libs])
    if runtime is None or any(not hasattr(runtime, s) for s in
                              ("aclInit", "aclrtGetDeviceCount", "aclrtSetDevice", "aclrtGetSocName", "aclrtResetDevice")):
        emit("done")
        return
    _probe_devices(runtime, emit)
    emit("done")


def _probe_devices(runtime: Any, emit: Callable[..., None]) -> None:
    """aclInit, aclrtGetDeviceCount, then per device aclrtSetDevice, aclrtGetSocName, aclrtResetDevice."""
    runtime.aclInit.restype, runtime.aclInit.argtypes = ctypes.c_int, [ctypes.c_char_p]
    runtime.aclrtGetDeviceCount.restype = ctypes.c_int
    runtime.aclrtGetDeviceCount.argtypes = [ctypes.POINTER(ctypes.c_uint32)]
    runtime.aclrtSetDevice.restype, runtime.aclrtSetDevice.argtypes = ctypes.c_int, [ctypes.c_int32]
    runtime.aclrtResetDevice.restype, runtime.aclrtResetDevice.argtypes = ctypes.c_int, [ctypes.c_int32]
    runtime.aclrtGetSocName.restype, runtime.aclrtGetSocName.argtypes = ctypes.c_char_p, []

    def last_error() -> str:
        fn = getattr(runtime, "aclGetRecentErrMsg", None)
        if fn is None:
            return ""
        fn.restype, fn.argtypes = ctypes.c_char_p, []
        msg = fn()
        return f": {msg.decode(errors='replace')}" if msg else ""

    emit("doing", what="aclInit(NULL)")
    rc = runtime.aclInit(None)
    if rc not in (0, ACL_ERROR_REPEAT_INITIALIZE):
        emit("devices", error=f"aclInit failed with aclError {rc}{last_error()}")
        return
    owns = rc == 0
    emit("doing", what="aclrtGetDeviceCount")
    count = ctypes.c_uint32(0)
    rc = runtime.aclrtGetDeviceCount(ctypes.byref(count))
    if rc:
        emit("devices", error=f"aclrtGetDeviceCount failed with aclError {rc}{last_error()}")
    else:
        emit("devices", count=int(count.value))
        for i in range(int(count.value)):
            emit("doing", what=f"aclrtSetDevice({i})")
            rc = runtime.aclrtSetDevice(i)
            if rc:
                emit("device", id=i, error=f"aclrtSetDevice({i}) failed with aclError {rc}{last_error()}")
                continue
            emit("doing", what=f"aclrtGetSocName() on device {i}")
            name = runtime.aclrtGetSocName()
            emit("doing", what=f"aclrtResetDevice({i})")
            reset = runtime.aclrtResetDevice(i)
            emit("device", id=i, soc=None if name is None else name.decode(errors="replace"),
                 reset_error=f"aclrtResetDevice({i}) failed with aclError {reset}" if reset else None)
    if owns and hasattr(runtime, "aclFinalize"):
        emit("doing", what="aclFinalize")
        runtime.aclFinalize.restype, runtime.aclFinalize.argtypes = ctypes.c_int, []
        runtime.aclFinalize()


def _exit_words(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


STARTUP_FLOOR = 120.0        # seconds Python may take to start the probe, before its first line
CLOSE_WAIT = 10.0            # seconds the probe's output is read for after it ended


def _run_from_first_line(cmd: Sequence[str], timeout: float) -> Tuple[str, str, Optional[int], bool]:
    """Run the probe: (stdout, stderr, exit code, hung). `timeout` counts from its first line, so a
    loaded machine's slow Python start-up is not taken for a hang in CANN (start-up itself gets
    STARTUP_FLOOR or the timeout, whichever is longer); then the child is killed."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    lines: List[str] = []
    errs: List[str] = []
    first = threading.Event()

    def pump() -> None:
        for line in proc.stdout:
            lines.append(line)
            first.set()
        first.set()
    readers = [threading.Thread(target=pump, daemon=True),
               threading.Thread(target=lambda: errs.append(proc.stderr.read()), daemon=True)]
    for t in readers:
        t.start()
    first.wait(max(STARTUP_FLOOR, timeout))
    try:
        rc, hung = proc.wait(timeout), False
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc, hung = None, True
    for t in readers:
        t.join(CLOSE_WAIT)                # a descendant of the child may hold its pipes open
    return "".join(lines), "".join(errs), rc, hung


def probe_cann(lib_dir: Optional[str], timeout: float) -> Dict[str, Any]:
    """Run the probe in a child and gather its lines. A crash, an exit or a hang becomes `error`,
    naming the call it happened in; what the child found before it stays in the result."""
    root = str(CHECKOUT)
    code = (f"import sys; sys.path.insert(0, {root!r}); from suite.cli.doctor_probe import _probe_child; "
            f"_probe_child(sys.argv[1:])")
    cmd = [sys.executable, "-c", code, json.dumps({"lib_dir": lib_dir})]
    result: Dict[str, Any] = {"libraries": {}, "symbols": {}, "operators": [], "devices": None,
                              "device_error": None, "emulator": False, "dirs": [], "loader": not lib_dir,
                              "error": None}
    start = time.perf_counter()
    out, err, rc, hung = _run_from_first_line(cmd, timeout)
    result["seconds"] = round(time.perf_counter() - start, 3)
    doing, done = None, False
    for line in out.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        kind = item.pop("kind", None)
        if kind == "doing":
            doing = item["what"]
            continue
        doing = None
        if kind == "dirs":
            result["dirs"], result["loader"] = item["dirs"], item["loader"]
        elif kind == "library":
            result["libraries"][item["name"]] = item
        elif kind == "symbols":
            result["symbols"][item["library"]] = item["missing"]
            result["emulator"] = result["emulator"] or bool(item.get("emulator"))
        elif kind == "operator":
            result["operators"].append(item)
        elif kind == "devices":
            if "error" in item:
                result["device_error"] = item["error"]
            else:
                result["devices"] = {"count": item["count"], "list": []}
        elif kind == "device" and result["devices"] is not None:
            result["devices"]["list"].append(item)
        elif kind == "done":
            done = True
    if not done:
        where = f" in {doing}" if doing else ""
        how = f"did not finish within {timeout:g} s" if hung else _exit_words(rc if rc is not None else 0)
        tail = " | ".join(err.strip().splitlines()[-3:])
        result["error"] = f"the CANN probe (a child process) {how}{where}" + (f"; its last words: {tail}" if tail else "")
    return result
