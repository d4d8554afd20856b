"""The direct aclnn backend: each call goes through aclnnXGetWorkspaceSize / aclnnX via ctypes.

Every call is marshalled from the operator's declaration alone (Operator.c_params, in order): a
tensor parameter is the call's input of that name, NULL when the call has None or leaves it out (an
optional input passed as NULL, or a NULL-pointer case); an int64, bool or C float parameter is the
call's attribute of that name, else the declared default. Then one out tensor per declared output
(Operator.outputs, in order: `out` alone, or every output an operator declares), each from the
call's shape and dtype for it (OpCall.outputs; out_shape and out_dtype for one output), NULL where
the call gives None; each gets its own buffer and layout and is copied back, and a call with several
outputs returns the mapping name -> array. Nothing here names an operator, an input or an output,
so a new operator needs no change to this backend.

    pytest --backend aclnn [--backend-opt device=0] [--backend-opt lib_dir=DIR]
           [--backend-opt product=atlas-a2] [--backend-opt negative_strides=skip|pass]

Libraries: `lib_dir` if given (that directory and its lib64/ only), else the directories named by
the variables the toolkit's set_env.sh exports (ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, each /lib64;
ASCEND_OPP_PATH/../lib64), else the dynamic loader's path. It loads libascendcl.so (runtime),
libnnopbase.so (aclCreateTensor) and the operators from libopapi_nn.so or libopapi.so.

Never crashes: if a library, a runtime symbol or device initialisation is missing, the
constructor still succeeds, `unavailable` holds the reason (what was looked for, where),
`products` lists all four families, and `run()` raises `suite.Unsupported(reason)`. The suite reads
`unavailable` when the backend starts (suite/run/backend.py, BackendInfo.of) and stops the run there
with that line, before any case. A missing operator symbol makes only that operator's calls
Unsupported (its cases skip, with the reason).

Product: detected from aclrtGetSocName() through suite/backends/soc.py's table (exact CANN platform names,
then a few prefix rules; the bare "Ascend910B" is a first-generation 910, atlas-training). An
unknown SoC makes the backend unavailable with a message naming the SoC, never a guessed family
(the Ascend 950 and Atlas 200I/500 A2 are families of their own: ascend-950, atlas-200i-500-a2); `product=` overrides detection, for emulators and
simulators. Initialisation (aclInit, aclrtSetDevice, aclrtCreateStream) happens once,
lazily, on first use; `close()` tears it down (nothing is registered globally: a process that never
calls close() simply exits).

Negative strides: CANN's aclCreateTensor reference (CANN 8.0.0 and 8.5.0 "aclCreateTensor",
hiascend.com .../aolapi/operatorlist_00019.html) says of `stride` "The value cannot be a negative
number" / "a non-negative integer" (offset likewise). So by default (`negative_strides=skip`) a
view with a negative stride raises Unsupported instead of being silently copied into a positive
layout, which would test something other than the case asks. What CANN itself does: aclCreateTensor
checks nothing about the view and never refuses one; phase 1's view check (opbase's op::Validate)
accepts negative strides when every element the view reaches lies inside the storage, which this
backend's layouts always do (the offset points at the first element). So `negative_strides=pass`
hands the view to the operator as it is, and the case shows whether the kernel honours it.

Device faults: when phase 2 or the stream synchronize fails (an AI-core exception leaves the stream,
and in CANN the whole device context, returning the same error to every later call), the call's
buffers are released, the stream destroyed, the device reset (aclrtResetDevice, then aclrtSetDevice
and a new stream), and `suite.DeviceFault` is raised with the status and aclGetRecentErrMsg's text:
only that case fails. If the reset itself fails, DeviceFault says so (recovered=False) and the
suite stops the run. The same holds for a fault while timing (time_launches: docs/timing.md).
"""
from __future__ import annotations

import contextlib
import ctypes
from dataclasses import dataclass
from typing import Dict, Iterator, List, Mapping, Optional, Union

import numpy as np

from suite import ops
from suite.backends import soc
from suite.backends import _aclnn_lib as lib
from suite.backends import _aclnn_marshal as marshal
from suite.backends import _aclnn_timing as timing
from suite.contract import PRODUCTS, AclnnError, DeviceFault, OpCall, Unsupported

ACL_FORMAT_ND, ACL_ERROR_REPEAT_INITIALIZE = 2, 100002
MEMCPY_HOST_TO_DEVICE, MEMCPY_DEVICE_TO_HOST = 1, 2


class AclRuntimeError(RuntimeError):
    """A runtime call (memory, stream, device) failed: an environment fault, not an aclnn status."""

    def __init__(self, func: str, code: int) -> None:
        super().__init__(f"{func} failed with aclError {code}")
        self.func, self.code = func, code


def product_for_soc(name: str) -> Optional[str]:
    """The product family of a SoC name as aclrtGetSocName reports it (None: unknown);
    suite.soc.family_of says why."""
    try:
        return soc.family_of(name)
    except soc.UnknownSoc:
        return None


class _Faulted(Exception):
    """Phase 2 or the synchronize failed: the device needs a reset once the call's memory is freed."""

    def __init__(self, func: str, code: int, message: Optional[str]) -> None:
        super().__init__(f"{func} failed with {code}" + (f": {message}" if message else ""))
        self.code = code


@dataclass
class Marshalled:
    """One call on the device: its two phases, phase 1's arguments, the non-NULL outputs (name, layout,
    buffer, dtype), the outputs declared, the buffers freed with the call (a workspace joins them)."""
    phase1: object
    phase2: object
    args: list
    outs: list
    nwanted: int
    buffers: List[int]


class AclnnBackend:
    """Drives the real aclnn two-phase API on an Ascend device (or anything exporting its ABI)."""

    name = "aclnn"
    capabilities = {"status"}

    def __init__(self, lib_dir: Optional[str] = None, device: str = "0", product: Optional[str] = None,
                 negative_strides: str = "skip", _bf16_code: Optional[str] = None,
                 _out_layout: str = "contiguous") -> None:
        # _bf16_code and _out_layout are test-only hooks (never for real runs), reachable from the
        # suite as --backend-opt: a mis-declared bfloat16 code (a planted fault, e.g. _bf16_code=1)
        # and a Fortran-ordered, offset out tensor (to prove strided writes reach the kernel).
        if product is not None and product not in PRODUCTS:
            raise ValueError(f"product={product!r}; expected one of {', '.join(PRODUCTS)}")
        if negative_strides not in ("skip", "pass"):
            raise ValueError(f"negative_strides={negative_strides!r}; expected skip or pass")
        if _out_layout not in ("contiguous", "fortran"):
            raise ValueError(f"_out_layout={_out_layout!r}")
        self.device = int(device)
        self.negative_strides = negative_strides
        self._product_override = product
        self._bf16_code = marshal.ACL_BF16 if _bf16_code is None else int(_bf16_code)
        self._out_layout = _out_layout
        self.unavailable: Optional[str] = None
        self.soc_name: Optional[str] = None
        self._detected: Optional[str] = None
        self._stream = None
        self._owns_init = False
        self._fn: Dict[str, object] = {}
        self._ops: Dict[str, object] = {}
        try:
            libs, self._fn = lib.load(lib_dir)
            self._ops = libs.operators
            self.libraries = libs
        except lib.LibraryError as exc:
            self.unavailable = str(exc)

    # ---- session life cycle -------------------------------------------------------------
    @property
    def products(self) -> tuple:
        if self.unavailable:
            return PRODUCTS  # the suite stops at `unavailable`; a caller of run() gets Unsupported
        if self._product_override:
            return (self._product_override,)
        if self._detected:
            return (self._detected,)  # known: asking again (e.g. after close()) must not re-initialise
        try:
            self._ensure_ready()
        except Unsupported:
            return PRODUCTS
        return (self._detected,)

    def _ensure_ready(self) -> None:
        if self.unavailable:
            raise Unsupported(self.unavailable)
        if self._stream is not None:
            return
        f = self._fn
        rc = f["aclInit"](None)
        if rc not in (0, ACL_ERROR_REPEAT_INITIALIZE):
            self._fail(f"aclInit failed with aclError {rc}")
        self._owns_init = rc == 0
        rc = f["aclrtSetDevice"](self.device)
        if rc:
            self._teardown_init()
            self._fail(f"aclrtSetDevice({self.device}) failed with aclError {rc}")
        if not self._product_override:
            name = f["aclrtGetSocName"]()
            self.soc_name = name.decode() if name else None
            try:
                self._detected = soc.family_of(self.soc_name or "")
            except soc.UnknownSoc as exc:
                self._teardown_device()
                self._fail(f"{exc} (aclrtGetSocName of device {self.device})")
        stream = ctypes.c_void_p()
        rc = f["aclrtCreateStream"](ctypes.byref(stream))
        if rc:
            self._teardown_device()
            self._fail(f"aclrtCreateStream failed with aclError {rc}")
        self._stream = stream

    def _fail(self, reason: str) -> None:
        self.unavailable = reason
        raise Unsupported(reason)

    def _teardown_device(self) -> None:
        self._fn["aclrtResetDevice"](self.device)
        self._teardown_init()

    def _teardown_init(self) -> None:
        if self._owns_init:
            self._fn["aclFinalize"]()
            self._owns_init = False

    def close(self) -> None:
        """Destroy the stream, reset the device, finalize (if this backend initialised ACL)."""
        if self._stream is None:
            return
        stream, self._stream = self._stream, None
        self._fn["aclrtDestroyStream"](stream)
        self._teardown_device()

    def _recent_error(self) -> Optional[str]:
        """The runtime's own account of its last error (aclGetRecentErrMsg), where it has one."""
        fn = self._fn.get("aclGetRecentErrMsg")
        text = fn() if fn is not None else None
        return text.decode(errors="replace").strip() or None if text else None

    def _recover(self) -> Optional[str]:
        """Destroy the stream, reset the device, set it again, make a new stream: None when that
        worked, else what failed (the device stays unusable and the backend says so from then on)."""
        f = self._fn
        stream, self._stream = self._stream, None
        if stream is not None:
            f["aclrtDestroyStream"](stream)  # its error (the same fault) changes nothing
        rc = f["aclrtResetDevice"](self.device)
        if rc:
            return f"aclrtResetDevice({self.device}) failed with aclError {rc}"
        rc = f["aclrtSetDevice"](self.device)
        if rc:
            return f"aclrtSetDevice({self.device}) failed with aclError {rc} after the reset"
        fresh = ctypes.c_void_p()
        rc = f["aclrtCreateStream"](ctypes.byref(fresh))
        if rc:
            f["aclrtResetDevice"](self.device)
            return f"aclrtCreateStream failed with aclError {rc} after the reset"
        self._stream = fresh
        return None

    # ---- one call ---------------------------------------------------------------------------
    def run(self, call: OpCall) -> Union[None, np.ndarray, Mapping[str, np.ndarray]]:
        try:
            return self._run(call)
        except _Faulted as fault:  # the call's tensors and buffers are already released
            raise self._after_fault(fault) from None

    def _after_fault(self, fault: "_Faulted") -> DeviceFault:
        """Recover the device after a fault (docstring above: "Device faults") and say how it went."""
        failed = self._recover()
        if failed is None:
            return DeviceFault(str(fault), fault.code)
        self.unavailable = f"the device could not be recovered after a fault ({fault}): {failed}"
        return DeviceFault(f"{fault}; recovery failed: {failed}", fault.code, recovered=False)

    timer = timing.EventTimer  # time_launches' (suite/backends/_aclnn_timing.py); tests plant faults in one

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> "suite.perf.record.Timing":
        """`launches` launches of one marshalled call, each between its own pair of aclrtEvents on the
        launch stream (suite/backends/_aclnn_timing.py says how and why; docs/timing.md)."""
        self._ensure_ready()  # an unavailable backend says why, not which event calls it lacks
        missing = timing.missing(self._fn)
        if missing:
            raise Unsupported(f"the CANN runtime lacks {', '.join(missing)}: no device-event timing")
        try:
            with self._marshalled(call) as m:
                return self.timer(self, m).run(launches, flush)
        except timing.LaunchFailed as e:  # the timer has synchronized and released what it made
            raise self._after_fault(_Faulted(e.func, e.code, self._recent_error())) from None

    @contextlib.contextmanager
    def _marshalled(self, call: OpCall) -> Iterator["Marshalled"]:
        """The call's tensors on the device, in the operator's C order, released on the way out:
        what one launch (run) or many (time_launches) needs before phase 1."""
        self._ensure_ready()
        if call.product not in self.products:
            raise Unsupported(f"this backend stands for {self.products[0]}, the case targets {call.product}")
        entry = self._ops.get(call.op)
        if entry is None:
            raise Unsupported(f"operator {call.op} is not known to the aclnn backend")
        if isinstance(entry, str):
            raise Unsupported(entry)
        op = ops.get(call.op)
        params = op.c_params
        wanted = marshal.outputs_of(call, op)
        declared = {name for name, kind, _ in params if kind == "tensor"}
        stray = [name for name in call.inputs if name not in declared]
        if stray:  # the call and the operator's declaration disagree: a suite defect, never a status
            raise ValueError(f"{call.op}: inputs {stray} are not among its declared C tensor parameters "
                             f"{sorted(declared)}")
        tensors: List[int] = []
        buffers: List[int] = []
        try:
            args = []
            for name, kind, default in params:
                if kind == "tensor":  # an absent or None input (a NULL optional tensor, or a NULL case)
                    args.append(self._tensor_in(call.inputs.get(name), name, tensors, buffers))
                else:
                    args.append(lib.scalar(kind, name, call.attrs.get(name, default)))
            order, lead = ("F", 3) if self._out_layout == "fortran" else ("C", 0)
            outs = []  # (name, layout, device buffer, dtype) of each non-NULL output, in C order
            for name, shape, dtype in wanted:
                if shape is None:
                    args.append(None)  # a NULL out tensor
                    continue
                layout = marshal.out_layout(shape, dtype, order, lead, self._bf16_code)
                args.append(self._tensor(layout, name, tensors, buffers))
                outs.append((name, layout, buffers[-1], dtype))
            yield Marshalled(entry[0], entry[1], args, outs, len(wanted), buffers)
        except marshal.LayoutError as exc:
            raise Unsupported(self._layout_reason(str(exc))) from None
        finally:
            for t in reversed(tensors):
                self._fn["aclDestroyTensor"](t)
            for b in reversed(buffers):
                self._fn["aclrtFree"](b)

    def _run(self, call: OpCall) -> Union[None, np.ndarray, Mapping[str, np.ndarray]]:
        with self._marshalled(call) as m:
            executor = ctypes.c_void_p()
            executor_pending = False
            try:
                workspace_size = ctypes.c_uint64(0)
                status = m.phase1(*m.args, ctypes.byref(workspace_size), ctypes.byref(executor))
                if status:
                    raise AclnnError(status)
                executor_pending = True
                workspace = self._malloc(workspace_size.value, m.buffers) if workspace_size.value else None
                executor_pending = False  # phase 2 owns the executor from here, whatever it returns
                status = m.phase2(workspace, workspace_size.value, executor, self._stream)
                if status:
                    raise _Faulted(f"aclnn{call.op} (phase 2)", status, self._recent_error())
                rc = self._fn["aclrtSynchronizeStream"](self._stream)
                if rc:
                    raise _Faulted("aclrtSynchronizeStream", rc, self._recent_error())
            finally:
                destroy_exec = self._fn.get("aclDestroyAclOpExecutor")
                if executor_pending and executor.value and destroy_exec is not None:
                    destroy_exec(executor)  # phase 2 never ran; best effort, the only release CANN offers
            if m.nwanted == 1:
                if not m.outs:
                    return None  # the operator accepted a NULL out: the suite will flag the missing status
                _, out, out_buf, dtype = m.outs[0]
                self._copy(out, out_buf, MEMCPY_DEVICE_TO_HOST)
                return marshal.gather_out(out, dtype)
            found = {}  # several outputs: every one allocated (one the call does not write holds 0xFF)
            for name, layout, buf, dtype in m.outs:
                self._copy(layout, buf, MEMCPY_DEVICE_TO_HOST)
                found[name] = marshal.gather_out(layout, dtype)
            return found

    def _layout_reason(self, what: str) -> str:
        if what == "negative stride":
            return ("CANN cannot take negative-stride views; aclCreateTensor's documented contract requires "
                    "non-negative strides (pass --backend-opt negative_strides=pass to try anyway)")
        return f"the view cannot be passed to aclCreateTensor: {what}"

    def _tensor_in(self, a: Optional[np.ndarray], name: str, tensors: list, buffers: list):
        if a is None:
            return None  # NULL tensor pointer
        layout = marshal.input_layout(np.asarray(a), self.negative_strides == "pass", self._bf16_code)
        return self._tensor(layout, name, tensors, buffers)

    def _tensor(self, layout: marshal.Layout, name: str, tensors: list, buffers: list) -> int:
        buf = self._malloc(layout.alloc_bytes, buffers)
        if layout.nbytes:
            self._copy(layout, buf, MEMCPY_HOST_TO_DEVICE, layout.alloc_bytes)
        dims = _int64s(layout.dims)
        strides = _int64s(layout.strides)
        storage = _int64s([layout.storage.size])
        t = self._fn["aclCreateTensor"](dims, len(layout.dims), layout.code, strides, layout.offset,
                                        ACL_FORMAT_ND, storage, 1, buf)
        if not t:
            raise RuntimeError(f"aclCreateTensor returned NULL for {name} (dims {layout.dims}, strides "
                               f"{layout.strides}, offset {layout.offset}, dtype code {layout.code})")
        tensors.append(t)
        return t

    def _malloc(self, nbytes: int, buffers: list) -> int:
        ptr = ctypes.c_void_p()
        size = max(marshal.ALIGN, -(-int(nbytes) // marshal.ALIGN) * marshal.ALIGN)
        self._check("aclrtMalloc", self._fn["aclrtMalloc"](ctypes.byref(ptr), size, 0))
        buffers.append(ptr.value)
        return ptr.value

    def _copy(self, layout: marshal.Layout, device_ptr: int, kind: int, dest_max: int = 0) -> None:
        if not layout.nbytes:
            return
        host = marshal.ptr(layout.storage)
        if kind == MEMCPY_HOST_TO_DEVICE:
            rc = self._fn["aclrtMemcpy"](device_ptr, dest_max, host, layout.nbytes, kind)
        else:
            rc = self._fn["aclrtMemcpy"](host, layout.nbytes, device_ptr, layout.nbytes, kind)
        self._check("aclrtMemcpy", rc)

    @staticmethod
    def _check(func: str, rc: int) -> None:
        if rc:
            raise AclRuntimeError(func, rc)


_int64s = marshal.int64s  # a module attribute: tests intercept the storage dims here
