"""The `aclnn` backend, proven against the host emulator (tests/emulator).

What this proves: the backend's marshalling (views, dtypes, NULLs, workspace, stream sync, copy
back), its statuses, its resource hygiene and its failure reporting. What it cannot prove: that
real Ascend kernels conform; that needs an Ascend machine.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from suite import AclnnError, DeviceFault, OpCall, Unsupported, ops
from suite.backends import _aclnn_marshal as marshal
from suite.backends import aclnn as aclnn_mod
from suite.backends.aclnn import AclnnBackend, AclRuntimeError, product_for_soc
from suite.contract import PRODUCTS
from tests import aclnn_checks as C
from tests.emulator import build as emulator_build
from tests.emulator.build import build, find_compiler
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[1]


def _need_compiler() -> None:
    if find_compiler() is None:
        pytest.skip("no C compiler (looked for $CC, cc, gcc, clang on PATH): cannot build the emulator")


# emu_dir (the emulator with the probe compiled in) is tests/conftest.py's: one build per process,
# shared with tests/test_backends_aclnn_multi.py (two builds cannot share one process).


@pytest.fixture(autouse=True)
def declarations(monkeypatch):
    """The registry as these calls need it, for each test only: the C signatures of operators whose
    modules have not landed (their pages'), and the probe's (tests/aclnn_checks.py)."""
    for name, op in C.stand_ins().items():
        monkeypatch.setitem(ops.OPERATORS, name, op)


@pytest.fixture
def soc(monkeypatch):
    """Set the SoC the emulator reports (default Ascend910B3, an Atlas A2)."""
    monkeypatch.setenv("ACLNN_EMU_SOC", "Ascend910B3")
    return lambda name: monkeypatch.setenv("ACLNN_EMU_SOC", name)


def live(backend: AclnnBackend) -> tuple:
    counts = [ctypes.c_int64() for _ in range(4)]
    backend.libraries.runtime.handle.aclemuLiveCounts(*[ctypes.byref(c) for c in counts])
    return tuple(c.value for c in counts)  # buffers, tensors, executors, streams


@pytest.fixture
def backend(emu_dir, soc):
    """A fresh backend per test; after close() nothing it created may remain alive."""
    b = AclnnBackend(lib_dir=emu_dir)
    assert b.unavailable is None, b.unavailable
    yield b
    b.close()
    assert live(b) == (0, 0, 0, 0), "leaked emulator resources"


# ---- numerics ------------------------------------------------------------------------------------
NUMERIC = C.numeric_calls()


@pytest.mark.parametrize("label,call", NUMERIC, ids=[c[0] for c in NUMERIC])
def test_numerics_match_float64_reference(backend, label, call):
    C.assert_close(backend.run(call), call, label)
    assert live(backend)[:3] == (0, 0, 0)


def test_non_contiguous_out_is_written_through_its_strides(emu_dir, soc):
    b = AclnnBackend(lib_dir=emu_dir, _out_layout="fortran")
    try:
        for label, call in C.numeric_calls(seed=5):
            C.assert_close(b.run(call), call, label)
    finally:
        b.close()


@pytest.mark.parametrize("dtype", [C.F16, C.BF16], ids=["float16", "bfloat16"])
def test_float32_to_narrow_rounding_is_exact_rne(backend, dtype):
    call = C.exact_cast_call(dtype)
    C.assert_exact_cast(backend.run(call), call)


def test_float16_overflow_gives_inf(backend):
    s = np.array([4e4, -4e4, 1.0], np.float32)
    call = OpCall("MseLossBackward", {"gradOutput": np.ones(3, np.float32), "self": s, "target": np.zeros(3, np.float32)},
                  {"reduction": 0}, (3,), np.dtype(np.float16), "atlas-a2")
    out = backend.run(call)
    assert np.isinf(out[0]) and out[0] > 0 and np.isinf(out[1]) and out[1] < 0 and out[2] == 2
    C.assert_close(out, call)


def test_deterministic(backend):
    call = dict(C.numeric_calls())["kl sum 50 terms"]
    first = backend.run(call)
    assert np.array_equal(first.view(np.uint32), backend.run(call).view(np.uint32))


def test_empty_out_is_empty_array_of_out_dtype(backend):
    call = dict(NUMERIC)["mse empty"]
    out = backend.run(call)
    assert out.shape == (0, 3) and out.dtype == np.float32


# ---- statuses ------------------------------------------------------------------------------------
@pytest.mark.parametrize("label,call,status", C.status_calls("atlas-a2"), ids=[c[0] for c in C.status_calls("atlas-a2")])
def test_rejections_raise_their_status(backend, label, call, status):
    C.check_status(backend, call, status, label)
    assert live(backend)[:3] == (0, 0, 0)


TRAINING = C.status_calls("atlas-training")


@pytest.mark.parametrize("label,call,status", TRAINING, ids=[c[0] for c in TRAINING])
def test_rejections_on_a_product_without_bfloat16(emu_dir, soc, label, call, status):
    soc("Ascend910A")
    b = AclnnBackend(lib_dir=emu_dir)
    try:
        assert b.products == ("atlas-training",)
        C.check_status(b, call, status, label)
    finally:
        b.close()


@pytest.mark.parametrize("label,call", C.accepted_controls(), ids=[c[0] for c in C.accepted_controls()])
def test_accepted_neighbours_of_rejections(backend, label, call):
    C.assert_close(backend.run(call), call, label)


# ---- views, inputs, negative strides ---------------------------------------------------------------
def test_inputs_are_not_modified_and_read_only_inputs_work(backend):
    def root(a):
        while isinstance(a.base, np.ndarray):
            a = a.base
        return a
    for label, call in C.numeric_calls(seed=9):
        arrays = {k: v for k, v in call.inputs.items() if v is not None}
        before = {k: (root(v).tobytes(), v.strides) for k, v in arrays.items()}  # whole parent, gaps too
        for v in arrays.values():
            v.flags.writeable = False
        backend.run(call)
        for k, v in arrays.items():
            assert v.strides == before[k][1] and not v.flags.writeable
            assert root(v).tobytes() == before[k][0], f"{label}: {k} modified"


def test_sliced_view_reaches_operator_with_storage_offset(backend, monkeypatch):
    seen = []
    real = backend._fn["aclCreateTensor"]
    monkeypatch.setitem(backend._fn, "aclCreateTensor", lambda *a: (seen.append((a[3][0], a[4])), real(*a))[1])
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base[1:, 2:]  # offset 8 elements into base, strides (6, 1)
    call = OpCall("MseLossBackward", {"gradOutput": np.ones((3, 4), np.float32), "self": view,
                                      "target": np.zeros((3, 4), np.float32)}, {"reduction": 0}, (3, 4),
                  np.dtype(np.float32), "atlas-a2")
    C.assert_close(backend.run(call), call)
    assert seen[1] == (6, 8), "self must travel as (strides (6, 1), offset 8)"


def test_negative_strides_skip_by_default_with_reason(backend):
    call = dict(C.numeric_calls())["mse same float32 r0"]
    call = OpCall(call.op, {**call.inputs, "self": C.view(call.inputs["self"], "n", None)}, call.attrs,
                  call.out_shape, call.out_dtype, call.product)
    with pytest.raises(Unsupported, match="CANN cannot take negative-stride views"):
        backend.run(call)
    assert live(backend)[:3] == (0, 0, 0)


def test_negative_strides_pass_when_asked(emu_dir, soc):
    """As on CANN: aclCreateTensor takes the view, phase 1's view check accepts it (every element it
    reaches lies in its storage), and the kernel reads it through its strides."""
    b = AclnnBackend(lib_dir=emu_dir, negative_strides="pass")
    rng = np.random.default_rng(4)
    try:
        call = C.mse(rng, ((3, 5),) * 3, C.F16, reduction=1, layouts="ntn")
        assert call.inputs["gradOutput"].strides[0] < 0
        C.assert_close(b.run(call), call)
        assert live(b)[:3] == (0, 0, 0)
    finally:
        b.close()


# ---- phase 1's view check, as strict as CANN's ---------------------------------------------------------
class _ShortStorage(AclnnBackend):
    """A copy of the marshaller with the commonest real bug: the storage dims are the view's own
    shape, not its extent. Right for a contiguous view, short for a strided or offset one."""

    def _tensor(self, layout, name, tensors, buffers):
        numel = int(np.prod(layout.dims, dtype=np.int64)) if layout.dims else 1
        short = marshal.Layout(layout.dims, layout.strides, layout.offset, layout.storage, layout.code)
        original = aclnn_mod._int64s

        def storage_dims(values):  # only the storage dims argument is a 1-element list
            return original([numel] if list(values) == [layout.storage.size] else values)
        aclnn_mod._int64s = storage_dims
        try:
            return super()._tensor(short, name, tensors, buffers)
        finally:
            aclnn_mod._int64s = original


def test_view_check_catches_storage_dims_that_do_not_cover_the_view(emu_dir, soc):
    """CANN rejects, in phase 1, a view that reaches past its storage dims (161002, "ViewShape
    overlap"); so does the emulator, so a marshaller that gets the storage wrong fails here."""
    b = _ShortStorage(lib_dir=emu_dir)
    rng = np.random.default_rng(5)
    try:
        contiguous = C.mse(rng, ((3, 5),) * 3, C.F32, reduction=0, layouts="ccc")
        C.assert_close(b.run(contiguous), contiguous)  # the bug is invisible here
        for layouts in ("csc", "coc"):  # strided (a gap after every element), sliced (a storage offset)
            call = C.mse(rng, ((3, 5),) * 3, C.F32, reduction=0, layouts=layouts)
            with pytest.raises(AclnnError) as err:
                b.run(call)
            assert err.value.status == 161002, layouts
        C.assert_close(AclnnBackend.run(b, contiguous), contiguous)
    finally:
        b.close()
    assert live(b) == (0, 0, 0, 0)


def test_view_check_boundaries(emu_dir, soc):
    """At, inside and outside the storage: the last element exactly at the end passes; one element
    short, or a negative stride reaching below the buffer's start, is 161002."""
    b = AclnnBackend(lib_dir=emu_dir)
    f = b._fn
    try:
        b._ensure_ready()
        ptr = ctypes.c_void_p()
        assert f["aclrtMalloc"](ctypes.byref(ptr), 4096, 0) == 0
        op = b._ops["MseLossBackward"]
        ok = 0

        def status(dims, strides, offset, storage):
            t = [f["aclCreateTensor"](aclnn_mod._int64s(dims), len(dims), 0, aclnn_mod._int64s(strides), offset,
                                      2, aclnn_mod._int64s([storage]), 1, ptr) for _ in range(3)]
            numel = int(np.prod(dims))
            out = f["aclCreateTensor"](aclnn_mod._int64s(dims), 2, 0, aclnn_mod._int64s([dims[1], 1]), 0, 2,
                                       aclnn_mod._int64s([numel]), 1, ptr)
            assert all(t) and out, "aclCreateTensor refused a view: CANN's never does"
            ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
            st = op[0](t[0], t[1], t[2], ctypes.c_int64(0), out, ctypes.byref(ws), ctypes.byref(ex))
            if st == 0:
                f["aclDestroyAclOpExecutor"](ex)
            for x in (*t, out):
                f["aclDestroyTensor"](x)
            return st
        # a (3, 4) view with row stride 5: reaches offset + 2*5 + 3 = offset + 13
        assert status([3, 4], [5, 1], 0, 14) == ok          # exactly covered
        assert status([3, 4], [5, 1], 0, 13) == 161002      # one element short
        assert status([3, 4], [5, 1], 2, 16) == ok          # offset counted: 2 + 13 + 1 = 16
        assert status([3, 4], [5, 1], 2, 15) == 161002
        assert status([3, 4], [-5, 1], 10, 14) == ok        # negative stride: lowest element at 10 - 10 = 0
        assert status([3, 4], [-5, 1], 9, 14) == 161002     # ... or at -1: below the buffer
        assert status([0, 4], [5, 1], 0, 0) == ok           # an empty view reaches nothing
        assert status([0, 4], [5, 1], 7, 0) == ok
        f["aclrtFree"](ptr)
    finally:
        b.close()
    assert live(b) == (0, 0, 0, 0)


# ---- device faults: one case, then a reset device -------------------------------------------------------
def _kernels_run(b: AclnnBackend) -> int:
    fn = b.libraries.runtime.handle.aclemuKernelsRun
    fn.restype = ctypes.c_int64
    return fn()


def test_ai_core_fault_costs_one_call_and_the_device_recovers(emu_dir, soc, monkeypatch):
    """The emulator's planted AI-core fault poisons the device as CANN's does (every later runtime call
    fails until a reset). The backend frees the call, resets the device and raises DeviceFault with the
    status and the runtime's message; the calls after it pass."""
    b = AclnnBackend(lib_dir=emu_dir)
    calls = [c for _, c in C.numeric_calls(seed=21) if c.out_shape and int(np.prod(c.out_shape)) > 0][:4]
    try:
        C.assert_close(b.run(calls[0]), calls[0])
        monkeypatch.setenv("ACLNN_EMU_AICORE_FAULT_AT", str(_kernels_run(b) + 1))
        with pytest.raises(DeviceFault) as err:
            b.run(calls[1])
        e = err.value
        assert e.status == 507015 and e.recovered
        assert "aclrtSynchronizeStream failed with 507015" in e.message and "aicore exception" in e.message
        assert "reset" in e.message
        assert live(b)[:3] == (0, 0, 0)  # the faulting call's buffers, tensors and executor were released
        for call in calls[1:]:  # the same call again, and more: a healthy device
            C.assert_close(b.run(call), call)
    finally:
        b.close()
    assert live(b) == (0, 0, 0, 0)


def test_unrecoverable_device_fault_says_so(emu_dir, soc, monkeypatch):
    """A device that stays poisoned after the reset: DeviceFault(recovered=False) naming what failed,
    and from then on the backend is unavailable with that reason (the suite stops the run)."""
    b = AclnnBackend(lib_dir=emu_dir)
    call = dict(NUMERIC)["mse same float32 r0"]
    try:
        C.assert_close(b.run(call), call)
        monkeypatch.setenv("ACLNN_EMU_RESET_FAILS", "1")
        monkeypatch.setenv("ACLNN_EMU_AICORE_FAULT_AT", str(_kernels_run(b) + 1))
        with pytest.raises(DeviceFault) as err:
            b.run(call)
        assert not err.value.recovered and "recovery failed: aclrtCreateStream failed with aclError 507899" \
            in err.value.message
        with pytest.raises(Unsupported, match="could not be recovered"):
            b.run(call)
    finally:
        b.close()
        monkeypatch.delenv("ACLNN_EMU_RESET_FAILS")
        # leave the emulator healthy for the tests after this one: a real reset (its last reference)
        b._fn["aclrtSetDevice"](b.device)
        b._fn["aclrtResetDevice"](b.device)


# ---- resources ---------------------------------------------------------------------------------------
def test_nothing_leaks_over_many_calls_including_errors(backend, monkeypatch):
    calls = C.numeric_calls(seed=11)
    for _ in range(3):
        for label, call in calls:
            backend.run(call)
        for label, call, status in C.status_calls():
            with pytest.raises(AclnnError):
                backend.run(call)
    neg = dict(calls)["mse views f32"]
    with pytest.raises(Unsupported):
        backend.run(OpCall(neg.op, {**neg.inputs, "target": neg.inputs["target"][::-1]}, neg.attrs,
                           neg.out_shape, neg.out_dtype, neg.product))
    assert live(backend) == (0, 0, 0, 1)


def test_workspace_allocation_failure_releases_everything(backend, monkeypatch):
    n = 256  # KL with self (n, 1), target (1, n): workspace n*4 bytes, every tensor n*2 bytes
    call = C.kl(np.random.default_rng(2), ((), (n, 1), (1, n)), (C.F16,) * 3, C.F16, reduction=0)
    assert backend.run(call) is not None
    monkeypatch.setenv("ACLNN_EMU_MALLOC_LIMIT", str(3 * n))
    with pytest.raises(AclRuntimeError, match="aclrtMalloc"):
        backend.run(call)
    assert live(backend)[:3] == (0, 0, 0), "executor, tensors or buffers left behind"


def test_leak_counter_detects_a_leak(backend, monkeypatch):
    kept = []
    monkeypatch.setitem(backend._fn, "aclDestroyTensor", lambda t: kept.append(t) or 0)
    backend.run(dict(NUMERIC)["mse same float32 r0"])
    assert live(backend)[1] == 4
    monkeypatch.undo()
    for t in kept:
        backend.libraries.tensor.handle.aclDestroyTensor(ctypes.c_void_p(t))
    assert live(backend)[1] == 0


def test_reading_out_without_synchronising_is_caught(backend, monkeypatch):
    monkeypatch.setitem(backend._fn, "aclrtSynchronizeStream", lambda s: 0)
    call = dict(NUMERIC)["mse same float32 r0"]
    with pytest.raises(AssertionError, match="NaN positions"):
        C.assert_close(backend.run(call), call)


def test_initialisation_is_lazy_and_close_is_idempotent(emu_dir, soc):
    b = AclnnBackend(lib_dir=emu_dir)
    assert live(b)[3] == 0, "no stream before first use"
    assert b.products == ("atlas-a2",)
    assert live(b)[3] == 1
    b.close()
    b.close()
    assert live(b) == (0, 0, 0, 0)


def test_two_backends_in_one_process(emu_dir, soc):
    first, second = AclnnBackend(lib_dir=emu_dir), AclnnBackend(lib_dir=emu_dir)
    call = dict(NUMERIC)["mse same float16 r1"]
    try:
        C.assert_close(first.run(call), call)
        C.assert_close(second.run(call), call)  # aclInit answers "already initialised": tolerated
        second.close()
        C.assert_close(first.run(call), call)
    finally:
        first.close()
        second.close()
    assert live(first) == (0, 0, 0, 0)


# ---- products, options ------------------------------------------------------------------------------
@pytest.mark.parametrize("name,product", [
    ("Ascend910B", "atlas-training"), ("Ascend910B3", "atlas-a2"), ("Ascend910_9391", "atlas-a3"),
    ("Ascend310P3", "atlas-inference"), ("Ascend910", None), ("Ascend910ProA", "atlas-training"),
    ("Ascend910PremiumA", "atlas-training"), ("Ascend310B1", "atlas-200i-500-a2"), ("Ascend950PR_9599", "ascend-950"),
    ("", None)])
def test_product_for_soc(name, product):
    """The backend's detection is suite/backends/soc.py's table (tests/test_backends_soc.py holds it name by name)."""
    assert product_for_soc(name) == product


@pytest.mark.parametrize("name,why", [("Ascend960PR", "not a SoC name"), ("Ascend910Bx", "not a SoC name"),
                                      ("Ascend910", "not a SoC name")])
def test_unknown_soc_is_refused_with_its_name(emu_dir, soc, name, why):
    """Never a guessed family: made-up names make the backend unavailable, naming the SoC (the 950 and
    the 310B are families of their own since issue 44: tests/test_backends_soc.py)."""
    soc(name)
    b = AclnnBackend(lib_dir=emu_dir)
    try:
        assert b.products == PRODUCTS and b.unavailable
        assert repr(name) in b.unavailable and why in b.unavailable and "product=" in b.unavailable
    finally:
        b.close()
    assert live(b) == (0, 0, 0, 0)


def test_bare_910b_is_held_to_atlas_training_and_rejects_bfloat16(emu_dir, soc):
    """The runtime's bare "Ascend910B" is a first-generation 910: atlas-training, whose operators
    reject bfloat16 with 161002 (the mistake a prefix rule made: it was held to A2)."""
    soc("Ascend910B")
    b = AclnnBackend(lib_dir=emu_dir)
    try:
        assert b.products == ("atlas-training",)
        call = dict(NUMERIC)["mse same bfloat16 r1"]
        with pytest.raises(AclnnError) as err:
            b.run(OpCall(call.op, call.inputs, call.attrs, call.out_shape, call.out_dtype, "atlas-training"))
        assert err.value.status == 161002
    finally:
        b.close()


def _on(call: OpCall, product: str) -> OpCall:
    return OpCall(call.op, call.inputs, call.attrs, call.out_shape, call.out_dtype, product, call.outputs)


@pytest.mark.parametrize("name", ["Ascend950PR_9599", "Ascend950DT_95A"])
def test_an_ascend_950_is_its_own_family_and_takes_bfloat16(emu_dir, soc, name):
    """Issue 44: the 950 (a regbase chip) gets the operators' three-dtype list, as A2 does, and the
    emulator, told its SoC, computes a bfloat16 call there as the reference does."""
    soc(name)
    b = AclnnBackend(lib_dir=emu_dir)
    try:
        assert b.products == ("ascend-950",) and not b.unavailable
        for label in ("mse same bfloat16 r1", "kl same bfloat16 r2 lt0"):
            call = _on(dict(NUMERIC)[label], "ascend-950")
            C.assert_close(b.run(call), call, label)
    finally:
        b.close()


def test_an_atlas_200i_500_a2_rejects_every_kl_div_backward_call(emu_dir, soc):
    """Issue 44: on Ascend310B (Atlas 200I/500 A2) KlDivBackward's op API lists no dtype, so every
    call is 161002 after the NULL checks; float32 and float16, which the other families take,
    included. The backend's family is the SoC's (the suite runs only what serves it)."""
    soc("Ascend310B1")
    b = AclnnBackend(lib_dir=emu_dir)
    try:
        assert b.products == ("atlas-200i-500-a2",) and not b.unavailable
        for label in ("kl same float32 r0 lt0", "kl same float16 r1 lt0"):
            with pytest.raises(AclnnError) as err:
                b.run(_on(dict(NUMERIC)[label], "atlas-200i-500-a2"))
            assert err.value.status == 161002, label
    finally:
        b.close()
    soc("Ascend910B3")                           # the same calls on an A2: accepted (the control)
    b = AclnnBackend(lib_dir=emu_dir)
    try:
        call = dict(NUMERIC)["kl same float32 r0 lt0"]
        C.assert_close(b.run(call), call)
    finally:
        b.close()


@pytest.mark.parametrize("name,product", [("Ascend910B4", "atlas-a2"), ("Ascend910_9392", "atlas-a3"),
                                          ("Ascend310P1", "atlas-inference"), ("Ascend910A", "atlas-training")])
def test_products_detected_from_runtime_soc(emu_dir, soc, name, product):
    soc(name)
    b = AclnnBackend(lib_dir=emu_dir)
    try:
        assert b.products == (product,) and b.soc_name == name
    finally:
        b.close()


def test_unknown_soc_makes_backend_unavailable_with_reason(emu_dir, soc):
    soc("Ascend999X")
    b = AclnnBackend(lib_dir=emu_dir)
    assert b.products == PRODUCTS
    assert "Ascend999X" in b.unavailable and "product=" in b.unavailable
    with pytest.raises(Unsupported, match="Ascend999X"):
        b.run(dict(NUMERIC)["mse same float32 r0"])
    b.close()
    assert live(b) == (0, 0, 0, 0)


def test_product_option_overrides_and_other_products_are_unsupported(emu_dir, soc):
    soc("Ascend999X")
    b = AclnnBackend(lib_dir=emu_dir, product="atlas-a3")
    try:
        assert b.products == ("atlas-a3",)
        call = dict(NUMERIC)["mse same bfloat16 r1"]
        with pytest.raises(Unsupported, match="stands for atlas-a3"):
            b.run(call)
        soc("Ascend910_9391")
        C.assert_close(b.run(OpCall(call.op, call.inputs, call.attrs, call.out_shape, call.out_dtype, "atlas-a3")), call)
    finally:
        b.close()


def test_bad_device_is_reported_not_crashed(emu_dir, soc):
    b = AclnnBackend(lib_dir=emu_dir, device="9")
    assert b.products == PRODUCTS and "aclrtSetDevice(9)" in b.unavailable
    with pytest.raises(Unsupported, match=r"aclrtSetDevice\(9\)"):
        b.run(dict(NUMERIC)["mse same float32 r0"])
    b.close()
    good = AclnnBackend(lib_dir=emu_dir)  # the failed attempt left the runtime finalised
    assert good.products == ("atlas-a2",)
    good.close()


def test_options(emu_dir):
    with pytest.raises(TypeError):
        AclnnBackend(lib_dir=emu_dir, colour="red")
    with pytest.raises(ValueError, match="product"):
        AclnnBackend(lib_dir=emu_dir, product="atlas-z")
    with pytest.raises(ValueError, match="negative_strides"):
        AclnnBackend(lib_dir=emu_dir, negative_strides="copy")
    b = AclnnBackend(lib_dir=emu_dir, device="0", product="atlas-a2", negative_strides="pass")
    assert (b.device, b.name, b.capabilities) == (0, "aclnn", {"status"})


def test_entry_point_names_this_class():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'aclnn = "suite.backends.aclnn:AclnnBackend"' in text
    assert aclnn_mod.AclnnBackend is AclnnBackend


# ---- missing libraries and symbols --------------------------------------------------------------------
def test_missing_runtime_library_is_a_skip_reason(tmp_path):
    b = AclnnBackend(lib_dir=str(tmp_path))
    assert "libascendcl.so" in b.unavailable and str(tmp_path) in b.unavailable
    assert b.products == PRODUCTS
    assert AclnnBackend(lib_dir=str(tmp_path), product="atlas-a2").products == PRODUCTS
    with pytest.raises(Unsupported) as info:
        b.run(dict(NUMERIC)["mse same float32 r0"])
    assert str(info.value) == b.unavailable
    b.close()


@pytest.mark.parametrize("present,missing", [(["libascendcl.so"], "libnnopbase.so"),
                                             (["libascendcl.so", "libnnopbase.so"], "libopapi")])
def test_missing_library_names_what_and_where(emu_dir, tmp_path, present, missing):
    for name in present:
        (tmp_path / name).symlink_to(Path(emu_dir) / name)
    b = AclnnBackend(lib_dir=str(tmp_path))
    assert missing in b.unavailable and str(tmp_path) in b.unavailable, b.unavailable
    with pytest.raises(Unsupported, match=missing):
        b.run(dict(NUMERIC)["mse same float32 r0"])


def test_toolkit_variables_find_the_libraries(emu_dir, soc, tmp_path, monkeypatch):
    toolkit = tmp_path / "ascend-toolkit" / "latest"
    toolkit.mkdir(parents=True)
    (toolkit / "lib64").symlink_to(emu_dir)
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH"):
        monkeypatch.delenv(var, raising=False)
    for var, value in (("ASCEND_HOME_PATH", toolkit), ("ASCEND_OPP_PATH", toolkit / "opp")):
        monkeypatch.setenv(var, str(value))
        b = AclnnBackend()
        try:
            assert b.unavailable is None, b.unavailable
            assert b.libraries.runtime.path == str(toolkit / "lib64" / "libascendcl.so")
            call = dict(NUMERIC)["kl self broadcast dim0"]
            C.assert_close(b.run(call), call)
        finally:
            b.close()
        monkeypatch.delenv(var)


def _python(code: str, env_extra: dict) -> dict:
    """Run code in a fresh interpreter (libraries loaded there cannot clash with this process's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_")}
    env.update(PYTHONPATH=str(ROOT), **env_extra)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_nothing_configured_names_every_place_looked(tmp_path):
    got = _python("""
        import json
        from suite.backends.aclnn import AclnnBackend
        print(json.dumps(AclnnBackend().unavailable))
    """, {"LD_LIBRARY_PATH": str(tmp_path)})
    assert "libascendcl.so" in got and "dynamic loader" in got and str(tmp_path) in got


def test_missing_runtime_symbol_is_named(tmp_path):
    _need_compiler()
    src = tmp_path / "stub.c"
    src.write_text("int aclInit(const char *c) { (void)c; return 0; }\n")
    subprocess.run([find_compiler(), "-shared", "-fPIC", str(src), "-o", str(tmp_path / "libascendcl.so")], check=True)
    got = _python(f"""
        import json
        from suite.backends.aclnn import AclnnBackend
        b = AclnnBackend(lib_dir={str(tmp_path)!r})
        print(json.dumps([b.unavailable, list(b.products)]))
    """, {})
    assert "lacks symbol aclFinalize" in got[0] and str(tmp_path) in got[0]
    assert tuple(got[1]) == PRODUCTS


def test_missing_operator_symbol_skips_only_that_operator(tmp_path_factory):
    _need_compiler()
    lib_dir = build(tmp_path_factory.mktemp("nokl"), "no_kl_symbol")
    got = _python(f"""
        import json
        from suite import Unsupported
        from suite.backends.aclnn import AclnnBackend
        from tests import aclnn_checks as C
        b = AclnnBackend(lib_dir={str(lib_dir)!r})
        calls = dict(C.numeric_calls())
        C.assert_close(b.run(calls["mse same float32 r0"]), calls["mse same float32 r0"])
        try:
            b.run(calls["kl same float32 r0 lt0"])
            print(json.dumps("ran"))
        except Unsupported as exc:
            print(json.dumps(str(exc)))
        finally:
            b.close()
    """, {})
    assert "aclnnKlDivBackwardGetWorkspaceSize" in got and str(lib_dir / "libopapi.so") in got


# ---- planted faults -----------------------------------------------------------------------------
# fault -> batteries (tests/aclnn_fault_driver.py) that must fail, and a phrase one failure must contain
FAULTS = {
    "good": ({}, None),
    "ignore_strides": ({"numerics", "strided_out"}, "views"),
    "skip_last": ({"numerics", "strided_out", "exact_cast"}, "NaN positions"),
    "wrong_status": ({"status"}, "mse reduction 3: status 161001, expected 161002"),
    "accept_rank9": ({"status"}, "rank 9: accepted"),
    "mask_target": ({"numerics"}, "kl same"),
    "mean_n_b": ({"numerics"}, "mse broadcast all"),
    "l1_mean_numel_self": ({"numerics"}, "l1 mean divides by numel(B)"),
    "smooth_l1_no_eps": ({"numerics"}, "smooth_l1 beta 1e-3"),
    "bf16_code": ({"numerics", "exact_cast"}, "bfloat16"),
}
# Faults proven elsewhere: in this file, or (NLLLoss's entry, whose suite module has not landed) by
# tests/test_backends_aclnn_multi.py's own battery of two-output calls.
FAULTS_ELSEWHERE = {"no_kl_symbol": "test_missing_operator_symbol_skips_only_that_operator",
                    "nll_mean_by_count": "tests/test_backends_aclnn_multi.py::test_planted_fault_is_caught",
                    "nll_no_ignore": "tests/test_backends_aclnn_multi.py::test_planted_fault_is_caught"}


def operator_faults_without_battery():
    """Faults an operator's own emulator file declares that no battery here plants: each is proven
    by tests/test_backends_aclnn_suite.py::test_operator_fault_is_caught (the operator's own cases), so a new
    operator's fault needs no entry in this file."""
    return sorted(f.name for f in emulator_build.FAULTS.values()
                  if f.module is not None and f.name not in FAULTS and f.name not in FAULTS_ELSEWHERE)


def test_every_declared_fault_is_proven():
    """A fault a source declares (@fault) and no test plants is dead weight, or a check nobody runs."""
    declared = set(emulator_build.FAULTS)
    proven = set(FAULTS) | set(FAULTS_ELSEWHERE) | set(operator_faults_without_battery())
    assert declared <= proven, sorted(declared - proven)
    assert (set(FAULTS) | set(FAULTS_ELSEWHERE)) - {"good", "bf16_code"} <= declared


@pytest.fixture(scope="session")
def fault_results(tmp_path_factory, emu_dir) -> dict:
    """Every planted fault run through every battery, each in its own process, two at a time."""
    def one(name):
        if name == "bf16_code":  # the backend declares bfloat16 as ACL_FLOAT16 (1)
            lib_dir, extra = emu_dir, ["--bf16-code", "1"]
        else:
            lib_dir, extra = build(tmp_path_factory.mktemp(name), None if name == "good" else name), []
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, "-m", "tests.aclnn_fault_driver", str(lib_dir), *extra],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_S)
        assert proc.returncode == 0, proc.stderr
        return name, json.loads(proc.stdout)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, FAULTS))


@pytest.mark.parametrize("fault", list(FAULTS))
def test_planted_fault_is_detected(fault_results, fault):
    expected, phrase = FAULTS[fault]
    res = fault_results[fault]
    failed = {k for k, v in res.items() if v}
    assert not res["setup"] and not res["leaks"], res
    if fault == "good":
        assert failed == set(), res  # the control: the batteries pass on a correct build
        return
    assert set(expected) <= failed, f"{fault} not caught by {set(expected) - failed}: {res}"
    assert any(phrase in msg for k in expected for msg in res[k]), res


# ---- the core, through the made-up probe operator: NULL optional tensors, scalar attributes ---------
def _dyadic(rng, shape, dtype=C.F32):
    """Multiples of 1/8 in [-4, 4]: exact in every dtype, so float32 arithmetic on them is predictable."""
    return (rng.integers(-32, 33, size=shape) / 8.0).astype(dtype)


def probe(x, y, w, *, mode=0, negate=False, scale=1.0, out_dtype=C.F32):
    out_shape = np.broadcast_shapes(*[a.shape for a in (x, y, w) if a is not None]) if mode == 0 else x.shape
    return C.positional(C.PROBE.name, (x, y, w), (mode, negate, scale), out_shape, out_dtype)


def probe_expected(call) -> np.ndarray:
    """The probe's float32 arithmetic in numpy, in its order (sums sequential in C order of B)."""
    (x, y, w), (mode, negate, scale) = C.args_of(call)
    arrays = [a for a in (x, y, w) if a is not None]
    B = np.broadcast_shapes(*[a.shape for a in arrays])
    r = (np.broadcast_to(x, B).astype(np.float32) - np.broadcast_to(y, B).astype(np.float32)) * np.float32(scale)
    if w is not None:
        r = r * np.broadcast_to(w, B).astype(np.float32)
    r = -r if negate else r
    if mode == 0:
        return r.astype(call.out_dtype)
    acc = np.zeros(call.out_shape, np.float32)
    xb = np.broadcast_to(np.arange(acc.size).reshape(acc.shape), B)  # which out element each term feeds
    for k, v in zip(xb.reshape(-1), r.reshape(-1)):
        acc.reshape(-1)[k] += v
    return acc.astype(call.out_dtype)


@pytest.mark.parametrize("mode", [0, 1], ids=["elementwise", "summed back to x"])
def test_null_optional_tensor_reaches_the_kernel_as_null(backend, mode):
    rng = np.random.default_rng(21)
    x, y = _dyadic(rng, (3, 1, 4)), _dyadic(rng, (5, 4))
    without = probe(x, y, None, mode=mode, scale=0.5)
    assert without.inputs["weight"] is None
    got = backend.run(without)
    assert np.array_equal(got, probe_expected(without)), (got, probe_expected(without))
    ones = backend.run(probe(x, y, np.ones((5, 1), np.float32), mode=mode, scale=0.5))
    assert np.array_equal(got, ones), "a NULL weight must act as ones"
    assert live(backend)[:3] == (0, 0, 0)


@pytest.mark.parametrize("mode", [0, 1], ids=["elementwise", "summed back to x"])
def test_present_optional_tensor_is_read(backend, mode):
    rng = np.random.default_rng(22)
    x, y, w = _dyadic(rng, (3, 1, 4)), _dyadic(rng, (5, 4)), C.view(_dyadic(rng, (5, 1)), "o", rng)
    call = probe(x, y, w, mode=mode, negate=True, scale=0.25)
    got = backend.run(call)
    assert np.array_equal(got, probe_expected(call)), (got, probe_expected(call))
    assert not np.array_equal(got, backend.run(probe(x, y, None, mode=mode, negate=True, scale=0.25)))


def test_null_required_tensors_are_still_rejected(backend):
    rng = np.random.default_rng(23)
    call = probe(_dyadic(rng, (2, 3)), _dyadic(rng, (2, 3)), None)
    for i in (0, 1):
        C.check_status(backend, C.with_tensor(call, i, None), 161001, f"NULL tensor {i}")
    C.check_status(backend, C._replace(call, out_shape=None), 161001, "NULL out")
    C.check_status(backend, C.with_tensor(call, 2, _dyadic(rng, (2, 3), C.F64)), 161002, "float64 weight")
    C.check_status(backend, C.with_tensor(call, 2, _dyadic(rng, (4, 3))), 161002, "weight does not broadcast")
    assert live(backend)[:3] == (0, 0, 0)


def test_scalar_attributes_travel_as_their_c_types(backend):
    rng = np.random.default_rng(24)
    x, y = _dyadic(rng, (4, 6)), _dyadic(rng, (4, 6))
    for scale in (0.1, 1 / 3, 1e-40, 3e38):  # rounded once to float32: 1e-40 a subnormal
        call = probe(x, y, None, scale=scale)
        with np.errstate(over="ignore"):
            want = probe_expected(call)
        assert np.array_equal(backend.run(call), want, equal_nan=True), scale
    C.check_status(backend, probe(x, y, None, scale=float("nan")), 161002, "NaN scale")
    assert np.array_equal(backend.run(probe(x, y, None, negate=True)), -(x - y)), "bool attribute lost"
    C.check_status(backend, probe(x, y, None, mode=2), 161002, "int64 attribute")
    with pytest.raises(ValueError, match="does not fit the C int64_t"):
        backend.run(probe(x, y, None, mode=2 ** 63))
    assert live(backend)[:3] == (0, 0, 0)


def test_an_input_the_declaration_lacks_is_an_error_not_dropped(backend):
    rng = np.random.default_rng(25)
    call = probe(_dyadic(rng, (2, 3)), _dyadic(rng, (2, 3)), None)
    with pytest.raises(ValueError, match=r"\['z'\] are not among its declared C tensor parameters"):
        backend.run(C._replace(call, {"z": call.inputs["x"]}))


def test_operators_are_bound_from_the_registry_at_load_time(emu_dir, soc, monkeypatch):
    """A declaration registered after import is bound; one whose C types are unknown is refused."""
    assert isinstance(AclnnBackend(lib_dir=emu_dir)._ops[C.PROBE.name], tuple)
    monkeypatch.setitem(ops.OPERATORS, "EmuProbe", C.Declared("EmuProbe", C.PROBE.c_params[:-1] + (("scale", "double", 1.0),)))
    with pytest.raises(ValueError, match="'double'"):
        AclnnBackend(lib_dir=emu_dir)


# ---- the promoting operators' details (their pages), by direct calls ------------------------------
@pytest.mark.parametrize("dtype", [C.F32, C.F16, C.BF16], ids=lambda d: d.name)
def test_l1_sign_comes_from_comparisons(backend, dtype):
    """sign(0) = 0 for +0 against -0 and for equal infinities; +-1 otherwise (even where the
    difference overflows the dtype)."""
    big = 65504.0 if dtype == C.F16 else 3e38
    s = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, 2.0, big, 5.0], dtype)
    t = np.array([-0.0, 0.0, np.inf, -np.inf, 2.0, 1.0, -big, 5.0], dtype)
    g = np.full(s.shape, 3.0, dtype)
    out = backend.run(C.positional("L1LossBackward", (g, s, t), (0,), s.shape, dtype))
    assert np.array_equal(C.f64(out), [0, 0, 0, 0, -3, 3, 3, 0]), out


@pytest.mark.parametrize("op,scalars", [("L1LossBackward", (1,)), ("SmoothL1LossBackward", (1, 3.0))])
@pytest.mark.parametrize("through,out_dtype", [(C.F16, C.F32), (C.BF16, C.F32), (C.BF16, C.F16)],
                         ids=["f16-to-f32", "bf16-to-f32", "bf16-to-f16"])
def test_result_is_rounded_to_the_promoted_dtype_before_out(backend, op, scalars, through, out_dtype):
    """The kernel returns the promoted dtype P; the Cast to out comes after: a float16 P in a float32
    out carries float16 precision (mean over 3 x 7 elements: 1/21 is inexact in every dtype)."""
    rng = np.random.default_rng(26)
    g, s, t = (C.values(rng, (3, 7), through) for _ in range(3))
    call = C.positional(op, (g, s, t), scalars, (3, 7), out_dtype)
    out = backend.run(call)
    off = C.f64(out) != C.f64(out.astype(through).astype(out_dtype))
    assert not off.any(), f"{op}: {out[off][0]!r} is not a {through.name} value: not rounded to P first"
    exp = C.reference(call)[0]
    twice = exp.astype(np.float32).astype(through).astype(out_dtype)  # what P-then-out gives (1 ulp of P)
    assert np.max(np.abs(C.f64(out) - C.f64(twice)) / C.ulp(exp, through)) <= 1, (out, twice)
    C.assert_close(out, call)


def test_smooth_l1_boundary_epsilon_and_nan(backend):
    f32 = np.float32
    beta = 0.5
    s = np.array([1.5, 1.0, 1.25, 1.0, 0.75], np.float32)
    t = np.array([1.0, 1.5, 1.0, 1.0, 1.0], np.float32)
    g = np.ones(s.shape, np.float32)
    out = backend.run(C.positional("SmoothL1LossBackward", (g, s, t), (0, beta), s.shape, C.F32))
    be = f32(beta) + f32(1e-6)
    want = np.array([1.0, -1.0, f32(0.25) / be, 0.0, f32(-0.25) / be], np.float32)  # |d| == beta: +-1
    assert np.array_equal(out, want), (out, want)
    # beta arrives as a C float: d = float32(0.1) meets it exactly (a double 0.1 would not)
    d = np.array([np.float32(0.1)], np.float32)
    out = backend.run(C.positional("SmoothL1LossBackward", (np.ones(1, np.float32), d, np.zeros(1, np.float32)),
                                   (0, 0.1), (1,), C.F32))
    assert out[0] == 1.0, out
    # tiny beta: d / (beta + 1e-6), not d / beta
    s, t = np.array([5e-4], np.float32), np.zeros(1, np.float32)
    out = backend.run(C.positional("SmoothL1LossBackward", (np.ones(1, np.float32), s, t), (0, 1e-3), (1,), C.F32))
    assert out[0] == s[0] / (f32(1e-3) + f32(1e-6)) and out[0] != s[0] / f32(1e-3), out
    # NaN difference: NaN with beta > 0, 0 with beta = 0 (the kernel clears NaN before comparing)
    s = np.array([np.nan, 1.0], np.float32)
    for b, first in ((1.0, np.nan), (0.0, 0.0)):
        out = backend.run(C.positional("SmoothL1LossBackward", (np.ones(2, np.float32), s, np.zeros(2, np.float32)),
                                       (0, b), (2,), C.F32))
        assert np.array_equal(out, np.array([first, 1.0], np.float32), equal_nan=True), (b, out)


# ---- the emulator's bfloat16 rule is suite/backends/soc.py's table ------------------------------------------------
def test_emulator_bfloat16_rule_follows_the_soc_table(emu_dir, monkeypatch):
    """A bfloat16 call on every name tests/test_backends_soc.py lists, each prefix variant and the unknown
    ones: the emulator (whose C table the build generates from suite/backends/soc.py) accepts it exactly where
    soc.has_bfloat16 says, and rejects it with 161002 elsewhere."""
    from suite.backends import soc as soc_table
    from tests.test_backends_soc import LISTED, UNKNOWN, VARIANTS
    op = next(o for o in ops.OPERATORS.values() if "bfloat16" in o.product_dtypes.get("atlas-a2", ()))
    inputs = {n: np.full((2, 3), 0.5, dtype=ml_dtypes.bfloat16) for n in op.inputs}
    out_shape = op.out_shape({n: (2, 3) for n in op.inputs}, {"reduction": 0})
    b = AclnnBackend(lib_dir=emu_dir, product="atlas-a2")  # the override: the SoC name alone decides bfloat16
    wrong = []
    try:
        for name in [n for n in [*LISTED, *VARIANTS, *UNKNOWN] if n]:  # "" is the emulator's default
            monkeypatch.setenv("ACLNN_EMU_SOC", name)
            call = OpCall(op.name, inputs, {"reduction": 0}, out_shape, np.dtype(ml_dtypes.bfloat16), "atlas-a2")
            try:
                b.run(call)
                took = True
            except AclnnError as e:
                assert e.status == 161002, (name, e)
                took = False
            if took is not soc_table.has_bfloat16(name):
                wrong.append(f"{name}: emulator {'takes' if took else 'rejects'} bfloat16")
    finally:
        b.close()
    assert not wrong, wrong
    assert live(b) == (0, 0, 0, 0)
