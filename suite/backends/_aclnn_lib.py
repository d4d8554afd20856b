"""Finding and binding the CANN libraries for the `aclnn` backend.

Kept apart from the backend so that a missing toolkit becomes one readable message (what was
looked for, where) instead of an OSError deep in a test.

Where CANN puts them: the toolkit's set_env.sh exports ASCEND_HOME_PATH and ASCEND_TOOLKIT_HOME
(e.g. /usr/local/Ascend/ascend-toolkit/latest) and ASCEND_OPP_PATH (<that>/opp); the libraries
live in <toolkit>/lib64 (also reachable as <toolkit>/<arch>-linux/lib64). Operators are in
libopapi.so (older CANN) or split libraries such as libopapi_nn.so (newer CANN).
"""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from suite import ops
from suite.backends.cann import RUNTIME_LIB, library_dirs

TENSOR_LIB = "libnnopbase.so"
OP_LIBS = ("libopapi_nn.so", "libopapi.so")  # searched in this order for each operator

c_int, c_int32, c_int64, c_uint64, c_size_t = ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64, ctypes.c_size_t
c_void_p, c_char_p, c_bool, c_float = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_bool, ctypes.c_float
P_int64, P_uint64, P_void_p = ctypes.POINTER(c_int64), ctypes.POINTER(c_uint64), ctypes.POINTER(c_void_p)

# name -> (restype, argtypes)
RUNTIME_SYMBOLS = {
    "aclInit": (c_int, [c_char_p]),
    "aclFinalize": (c_int, []),
    "aclrtSetDevice": (c_int, [c_int32]),
    "aclrtResetDevice": (c_int, [c_int32]),
    "aclrtCreateStream": (c_int, [P_void_p]),
    "aclrtDestroyStream": (c_int, [c_void_p]),
    "aclrtSynchronizeStream": (c_int, [c_void_p]),
    "aclrtMalloc": (c_int, [P_void_p, c_size_t, c_int]),
    "aclrtFree": (c_int, [c_void_p]),
    "aclrtMemcpy": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t, c_int]),
    "aclrtGetSocName": (c_char_p, []),
}
TENSOR_SYMBOLS = {
    "aclCreateTensor": (c_void_p, [P_int64, c_uint64, c_int, P_int64, c_int64, c_int, P_int64, c_uint64, c_void_p]),
    "aclDestroyTensor": (c_int, [c_void_p]),
}
OPTIONAL_TENSOR_SYMBOLS = {"aclDestroyAclOpExecutor": (c_int, [c_void_p])}
# The runtime's last error in its own words (acl_base.h; absent from old runtimes).
OPTIONAL_RUNTIME_SYMBOLS = {"aclGetRecentErrMsg": (c_char_p, [])}
# What time_launches needs (docs/timing.md cites each signature); optional, so a runtime without them
# makes only timing Unsupported, never the backend unavailable.
TIMING_SYMBOLS = {
    "aclrtCreateEventWithFlag": (c_int, [P_void_p, ctypes.c_uint32]),
    "aclrtRecordEvent": (c_int, [c_void_p, c_void_p]),
    "aclrtEventElapsedTime": (c_int, [ctypes.POINTER(c_float), c_void_p, c_void_p]),
    "aclrtDestroyEvent": (c_int, [c_void_p]),
    "aclrtMemsetAsync": (c_int, [c_void_p, c_size_t, c_int32, c_size_t, c_void_p]),
}
OPTIONAL_TIMING_SYMBOLS = {"aclGetDeviceCapability": (c_int, [ctypes.c_uint32, c_int, P_int64])}
OPTIONAL_EXECUTOR_SYMBOLS = {"aclSetAclOpExecutorRepeatable": (c_int, [c_void_p])}

_TAIL = [P_uint64, P_void_p]  # workspaceSize, executor
# The C types an operator's declared parameters (Operator.c_params) may have. A `float` is a C float
# (32 bits): ctypes rounds the Python value to float32 once, to nearest even.
C_TYPES = {"tensor": c_void_p, "int64": c_int64, "bool": c_bool, "float": c_float}
PHASE2_ARGS = [c_void_p, c_uint64, c_void_p, c_void_p]
INT64_RANGE = (-2 ** 63, 2 ** 63 - 1)


def phase1_argtypes(op) -> list:
    """aclnn<op>GetWorkspaceSize's argument types, from the operator's declaration alone: its C
    parameters in order, then one aclTensor* per declared output (Operator.outputs, in order: `out`
    alone for all but an operator that declares several), then
    workspaceSize and executor."""
    bad = [f"{name}: {kind!r}" for name, kind, _ in op.c_params if kind not in C_TYPES]
    if bad:
        raise ValueError(f"{op.name}: C parameter types must be one of {', '.join(C_TYPES)}; got {', '.join(bad)}")
    nout = max(1, len(getattr(op, "outputs", ("out",))))
    return [C_TYPES[kind] for _, kind, _ in op.c_params] + [c_void_p] * nout + _TAIL


def scalar(kind: str, name: str, value):
    """One non-tensor argument as its C type: int64 (range-checked, never wrapped), bool, or C float."""
    if kind == "int64":
        v = int(value)
        if not INT64_RANGE[0] <= v <= INT64_RANGE[1]:
            raise ValueError(f"{name}={value!r} does not fit the C int64_t parameter")
        return c_int64(v)
    if kind == "bool":
        return c_bool(bool(value))
    if kind == "float":
        return c_float(float(value))
    raise ValueError(f"{name}: C parameter type {kind!r} is not a scalar type (int64, bool, float)")


class LibraryError(Exception):
    """A CANN library or symbol could not be found; the message says what and where."""


def search_dirs(lib_dir: Optional[str], environ: Mapping[str, str]) -> List[Tuple[str, str]]:
    """Directories to search, each with why: lib_dir alone if given, else the toolkit variables
    (suite/backends/cann.py's library_dirs, the search the doctor reports too)."""
    return [(d.dir, d.why) for d in library_dirs(lib_dir, environ)]


@dataclass
class Located:
    """Where one library was found (path None: only the dynamic loader's own search path was left)."""
    name: str
    path: Optional[str]
    handle: ctypes.CDLL


@dataclass
class Libraries:
    runtime: Located
    tensor: Located
    ops: List[Located]
    # op name -> (phase 1, phase 2) or the reason it is missing
    operators: Dict[str, object] = field(default_factory=dict)


def _where(dirs: Sequence[Tuple[str, str]], loader: bool) -> str:
    places = [f"{d} ({why})" for d, why in dirs]
    if loader:
        ld = os.environ.get("LD_LIBRARY_PATH", "")
        places.append(f"the dynamic loader's search path (LD_LIBRARY_PATH={ld!r})")
    return "; ".join(places) if places else "nowhere (no lib_dir, no ASCEND_* variables)"


def load_one(name: str, dirs: Sequence[Tuple[str, str]], loader: bool) -> Located:
    """Load `name` from the first directory holding it, else (if allowed) by bare name."""
    failures = []
    for d, _ in dirs:
        path = os.path.join(d, name)
        if os.path.isfile(path):
            try:
                return Located(name, path, ctypes.CDLL(path))
            except OSError as exc:
                failures.append(f"{path} exists but does not load: {exc}")
    if loader:
        try:
            return Located(name, None, ctypes.CDLL(name))
        except OSError:
            pass
    extra = f" ({'; '.join(failures)})" if failures else ""
    raise LibraryError(f"CANN library {name} not found; looked in {_where(dirs, loader)}{extra}. "
                       "Source the toolkit's set_env.sh or pass --backend-opt lib_dir=DIR.")


def bind(lib: Located, symbols: Mapping[str, tuple], optional: bool = False) -> Dict[str, object]:
    """ctypes functions for `symbols`; a missing required symbol raises LibraryError."""
    out = {}
    for sym, (restype, argtypes) in symbols.items():
        try:
            fn = getattr(lib.handle, sym)
        except AttributeError:
            if optional:
                continue
            raise LibraryError(f"{lib.name} at {lib.path or 'the loader path'} lacks symbol {sym}") from None
        fn.restype, fn.argtypes = restype, argtypes
        out[sym] = fn
    return out


def load(lib_dir: Optional[str], environ: Mapping[str, str] = os.environ) -> Tuple[Libraries, Dict[str, object]]:
    """Load runtime, tensor and operator libraries; return them and every bound function."""
    dirs = search_dirs(lib_dir, environ)
    loader = not lib_dir  # an explicit lib_dir is taken literally
    runtime = load_one(RUNTIME_LIB, dirs, loader)
    fns = bind(runtime, RUNTIME_SYMBOLS)
    fns.update(bind(runtime, OPTIONAL_RUNTIME_SYMBOLS, optional=True))
    fns.update(bind(runtime, {**TIMING_SYMBOLS, **OPTIONAL_TIMING_SYMBOLS}, optional=True))
    tensor = load_one(TENSOR_LIB, dirs, loader)
    fns.update(bind(tensor, TENSOR_SYMBOLS))
    fns.update(bind(tensor, {**OPTIONAL_TENSOR_SYMBOLS, **OPTIONAL_EXECUTOR_SYMBOLS}, optional=True))
    op_libs, failures = [], []
    for name in OP_LIBS:
        try:
            op_libs.append(load_one(name, dirs, loader))
        except LibraryError as exc:
            failures.append(str(exc))
    if not op_libs:
        raise LibraryError(f"no CANN operator library found ({' or '.join(OP_LIBS)}); "
                           f"looked in {_where(dirs, loader)}")
    libs = Libraries(runtime, tensor, op_libs)
    # Every operator the registry holds now, each bound from its own declaration.
    for name, op in ops.OPERATORS.items():
        libs.operators[name] = _bind_operator(name, phase1_argtypes(op), op_libs)
    return libs, fns


def _bind_operator(op: str, argtypes: list, ops: Sequence[Located]):
    names = (f"aclnn{op}GetWorkspaceSize", f"aclnn{op}")
    for lib in ops:
        try:
            phase1, phase2 = (getattr(lib.handle, n) for n in names)
        except AttributeError:
            continue
        phase1.restype, phase1.argtypes = c_int, argtypes
        phase2.restype, phase2.argtypes = c_int, PHASE2_ARGS
        return phase1, phase2
    searched = ", ".join(f"{lib.name} ({lib.path or 'loader path'})" for lib in ops)
    return f"symbol {names[0]} / {names[1]} not found in {searched}"
