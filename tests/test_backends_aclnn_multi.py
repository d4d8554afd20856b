"""Several out tensors through the `aclnn` backend and the host emulator, proven on aclnnNLLLoss
(docs/operators/NLLLoss.md): `out` and `totalWeightOut`, one aclTensor each, after the inputs and
attributes in the C signature's order.

suite/ops/nll_loss.py has not landed (issue 22), so the operator is declared here, for these tests
only, from its page's "API" section: all the backend reads of a declaration is its C parameters and
its outputs. The expectations are the page's "Result" in numpy, in the float32 order the page gives
for the four families' op API (per-sample products, sequential sums, one division for `mean`), not
the emulator's C code. Two builds of the emulator cannot share one process (tests/conftest.py's
emu_dir), so the planted faults run in a fresh interpreter each.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np
import pytest

from suite import AclnnError, OpCall, ops
from suite.backends import _aclnn_lib as lib
from suite.backends.aclnn import AclnnBackend
from suite.ops.base import Operator
from tests import aclnn_checks as C
from tests.emulator import build as emulator_build
from tests.test_backends_aclnn import live, soc  # noqa: F401 (soc: the SoC fixture, shared)
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[1]
F32, F16, BF16 = C.F32, C.F16, C.BF16
I64, I32, U8 = np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.uint8)


class NLLLossStandIn(Operator):
    """aclnnNLLLoss's C signature (docs/operators/NLLLoss.md "API"): self, target, weight,
    int64 reduction, int64 ignoreIndex, then out and totalWeightOut. Only these tests register it."""

    name = "NLLLoss"
    inputs = ("self", "target", "weight")
    c_params = (("self", "tensor", None), ("target", "tensor", None), ("weight", "tensor", None),
                ("reduction", "int64", 1), ("ignoreIndex", "int64", -100))
    outputs = ("out", "totalWeightOut")


STAND_IN = NLLLossStandIn()


def register() -> Optional[Operator]:
    """Put the stand-in in this process's registry; return what the registry held before."""
    before = ops.OPERATORS.get(STAND_IN.name)
    ops.OPERATORS[STAND_IN.name] = STAND_IN
    return before


@pytest.fixture
def nll(monkeypatch):
    """The stand-in, for one test (before any backend is made: operators bind at load time)."""
    before = ops.OPERATORS.get(STAND_IN.name)
    monkeypatch.setitem(ops.OPERATORS, STAND_IN.name, STAND_IN)
    return before


@pytest.fixture
def backend(emu_dir, nll, soc):
    b = AclnnBackend(lib_dir=emu_dir)
    assert b.unavailable is None, b.unavailable
    yield b
    b.close()
    assert live(b) == (0, 0, 0, 0), "leaked emulator resources"


# ---- calls and their expected results ------------------------------------------------------------
def call_of(x, t, w, *, reduction=1, ignore=-100, out=None, out_dtype=None, total=((), None),
            product="atlas-a2") -> OpCall:
    """An NLLLoss call: out's shape defaults to the page's ([N] under none with a 2-D self, else
    []), its dtype to self's; `total` is totalWeightOut's (shape, dtype), shape None for NULL."""
    xd = np.asarray(x).dtype if x is not None else F32
    if out is None and x is not None:
        out = (x.shape[0],) if reduction == 0 and x.ndim == 2 else ()
    od = None if out is None else np.dtype(out_dtype or xd)
    ts, td = total
    tdt = None if ts is None else np.dtype(td or xd)
    outputs = {"out": (None if out is None else tuple(out), od), "totalWeightOut": (None if ts is None else tuple(ts), tdt)}
    return OpCall("NLLLoss", {"self": x, "target": t, "weight": w}, {"reduction": reduction, "ignoreIndex": ignore},
                  None if out is None else tuple(out), od, product, outputs)


def expected(call: OpCall) -> Dict[str, Optional[np.ndarray]]:
    """docs/operators/NLLLoss.md "Result" and "How the vendor kernel computes": per sample taking
    part (target != ignoreIndex) l = -(w[t] * x[n, t]) and v = w[t] in float32, a left-out one +0
    and 0; none: out[n] = l_n, totalWeightOut not written (None here); sum: the float32 sums in
    sample order; mean: sum(l) / sum(v), one float32 division. BFLOAT16 inputs round to BFLOAT16
    before the outputs' dtypes."""
    x, t, w = (call.inputs[n] for n in ("self", "target", "weight"))
    reduction, ignore = call.attrs["reduction"], call.attrs["ignoreIndex"]
    rows = np.asarray(x).reshape(-1, x.shape[-1]) if x.ndim == 2 else np.asarray(x).reshape(1, -1)
    tt = np.asarray(t).reshape(-1).astype(np.int64)
    l = np.zeros(rows.shape[0], np.float32)
    v = np.zeros(rows.shape[0], np.float32)
    for n, c in enumerate(tt):
        if c == ignore:
            continue
        v[n] = np.float32(w[c])
        l[n] = -(v[n] * np.float32(rows[n, c]))

    def to(r32, shape, dt):
        r = np.asarray(r32, np.float32)
        if x.dtype == BF16:
            r = r.astype(BF16)
        return r.astype(dt).reshape(shape)

    (oshape, odt), (tshape, tdt) = call.outputs["out"], call.outputs["totalWeightOut"]
    if reduction == 0:
        return {"out": to(l, oshape, odt), "totalWeightOut": None}
    sl = sv = np.float32(0)
    for a, b in zip(l, v):
        sl, sv = np.float32(sl + a), np.float32(sv + b)
    with np.errstate(invalid="ignore", divide="ignore"):
        o = np.float32(sl / sv) if reduction == 1 else sl
    return {"out": to(o, oshape, odt), "totalWeightOut": to(sv, tshape, tdt)}


PREFILL = {1: 0xFF, 2: 0xFFFF, 4: 0xFFFFFFFF}  # what the backend pre-fills an out tensor with (NaN)


def compare(got, call: OpCall, label: str = "") -> None:
    """Both outputs exactly as expected (shape, dtype, values, NaN where NaN); an output the call
    does not write comes back holding the backend's pre-fill, untouched."""
    assert isinstance(got, Mapping), f"{label}: {type(got).__name__}, not a mapping of output name to array"
    assert set(got) == {n for n, (s, _) in call.outputs.items() if s is not None}, (label, set(got))
    want = expected(call)
    for name, (shape, dt) in call.outputs.items():
        a = got[name]
        assert isinstance(a, np.ndarray) and a.shape == shape and a.dtype == dt, (label, name, type(a), getattr(a, "shape", None), getattr(a, "dtype", None))
        if want[name] is None:  # not written: the pre-fill bytes, every one
            raw = a.view(f"u{dt.itemsize}")
            assert (raw == PREFILL[dt.itemsize]).all(), f"{label}: {name} was written: {a}"
            continue
        ok = np.array_equal(a.astype(np.float64), want[name].astype(np.float64), equal_nan=True)
        assert ok, f"{label}: {name} = {a!r}, expected {want[name]!r}"


def values(rng, shape, dtype, lo=-4.0, hi=4.0) -> np.ndarray:
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def numeric_calls(seed: int = 0) -> List[Tuple[str, OpCall]]:
    """Calls whose results pin the page's rules: both outputs, the mean's divisor (non-unit weights,
    left-out samples), ignoreIndex inside and outside [0, C), UINT8/INT32/INT64 targets, 1-D self,
    empty and all-left-out batches, a transposed self, outputs of another dtype than self's."""
    rng = np.random.default_rng(seed)
    found: List[Tuple[str, OpCall]] = []
    for xd in (F32, F16, BF16):
        for td in (I64, I32, U8):
            for reduction, name in ((0, "none"), (1, "mean"), (2, "sum")):
                N, Cn = 37, 11
                x = values(rng, (N, Cn), xd)
                t = rng.integers(0, Cn, N).astype(td)
                t[::5] = 3                                  # ignoreIndex 3 inside [0, C): those samples left out
                w = values(rng, (Cn,), xd, 0.25, 2.0)
                found.append((f"{xd.name} {td.name} {name} ignore inside",
                              call_of(x, t, w, reduction=reduction, ignore=3, total=((), None))))
    x = values(rng, (50, 7), F32)
    t = rng.integers(0, 7, 50).astype(I64)
    t[1::3] = -100                                          # the usual ignoreIndex, out of range
    w = values(rng, (7,), F32, 0.5, 3.0)
    for reduction in (0, 1, 2):
        found.append((f"float32 ignore -100 r{reduction}", call_of(x, t, w, reduction=reduction, total=((1,), F32))))
    t8 = rng.integers(0, 7, 50).astype(U8)
    t8[::4] = 255
    found.append(("uint8 ignore 255 mean", call_of(x, t8, w, reduction=1, ignore=255, total=((1, 1), F32))))
    found.append(("uint8 ignore -100 matches nothing", call_of(x, t8 % 7, w, reduction=1, ignore=-100)))
    x1 = values(rng, (9,), F32)
    for reduction in (0, 1, 2):
        found.append((f"1-D self r{reduction}", call_of(x1, np.array(4, I64), values(rng, (9,), F32, 0.5, 2.0),
                                                        reduction=reduction, out=() if reduction else (1,))))
    xe, te, we = np.zeros((0, 4), F32), np.zeros(0, I64), np.ones(4, F32)
    for reduction in (0, 1, 2):
        found.append((f"empty r{reduction}", call_of(xe, te, we, reduction=reduction)))
    ta = np.full(6, 2, I64)
    found.append(("all left out mean", call_of(values(rng, (6, 5), F32), ta, np.ones(5, F32), reduction=1, ignore=2)))
    found.append(("all left out sum", call_of(values(rng, (6, 5), F32), ta, np.ones(5, F32), reduction=2, ignore=2)))
    xt = values(rng, (4, 5), F32).T                         # case_018: self [5, 4], strides [1, 5]
    found.append(("transposed self sum", call_of(xt, rng.integers(0, 4, 5).astype(I64), values(rng, (4,), F32), reduction=2)))
    x = values(rng, (10, 4), F32)
    found.append(("case_020 float16 outputs from float32",
                  call_of(x, rng.integers(0, 4, 10).astype(I64), values(rng, (4,), F32), reduction=1,
                          out_dtype=F16, total=((), F16))))
    xs = values(rng, (8, 6), F32)
    xs[np.arange(8), :] = np.inf                            # specials off the gathered positions ...
    tg = rng.integers(0, 6, 8).astype(I64)
    xs[np.arange(8), tg] = values(rng, (8,), F32)           # ... and finite where the targets point
    tg[2] = -100
    xs[2, :] = np.nan                                       # a left-out sample's row: never read
    found.append(("specials off the gathered positions", call_of(xs, tg, values(rng, (6,), F32, 0.5, 1.5), reduction=1)))
    return found


NUMERIC = numeric_calls()


# ---- two outputs, each its own tensor, in the C signature's order ----------------------------------
@pytest.mark.parametrize("label,call", NUMERIC, ids=[c[0] for c in NUMERIC])
def test_both_outputs_come_back_right(backend, label, call):
    compare(backend.run(call), call, label)
    assert live(backend)[:3] == (0, 0, 0)


def test_each_output_is_a_tensor_of_its_own_in_signature_order(backend, monkeypatch):
    """Five aclTensors, in C-parameter order: self, target, weight, then out and totalWeightOut
    (dims and dtype codes of each), each on a device buffer of its own; the results share no memory
    with each other or with the inputs."""
    seen = []
    real = backend._fn["aclCreateTensor"]
    monkeypatch.setitem(backend._fn, "aclCreateTensor",
                        lambda *a: (seen.append((list(a[0][:a[1]]), a[2], a[8])), real(*a))[1])
    rng = np.random.default_rng(3)
    x, t, w = values(rng, (6, 5), F32), rng.integers(0, 5, 6).astype(I64), values(rng, (5,), F32, 0.5, 2)
    call = call_of(x, t, w, reduction=2, out=(1,), total=((1, 1), F16))
    got = backend.run(call)
    compare(got, call)
    assert [s[:2] for s in seen] == [([6, 5], 0), ([6], 9), ([5], 0), ([1], 0), ([1, 1], 1)], seen
    assert len({s[2] for s in seen}) == 5, f"tensors sharing a device buffer: {seen}"
    assert not np.shares_memory(got["out"], got["totalWeightOut"])
    assert not any(np.shares_memory(a, x) for a in got.values())


def test_swapped_outputs_would_be_caught(backend):
    """out and totalWeightOut distinguished by value (the loss sum and the weight sum differ), by
    shape (none: out [N], totalWeightOut [1, 1], which row 12 refuses as an out) and by dtype."""
    rng = np.random.default_rng(4)
    x, t, w = values(rng, (6, 5), F32, 1, 3), rng.integers(0, 5, 6).astype(I64), values(rng, (5,), F32, 0.5, 2)
    call = call_of(x, t, w, reduction=2, out=(), total=((1,), F16))
    got = backend.run(call)
    want = expected(call)
    assert want["out"] < 0 < want["totalWeightOut"]  # so a swap cannot agree by accident
    compare(got, call)
    none = call_of(x, t, w, reduction=0, total=((1, 1), F32))
    compare(backend.run(none), none)


def test_each_output_takes_the_out_layout_option(emu_dir, nll, soc):
    """_out_layout=fortran gives every out tensor its own offset storage (lead elements before it)."""
    b = AclnnBackend(lib_dir=emu_dir, _out_layout="fortran")
    offsets = []
    real = b._fn["aclCreateTensor"]
    b._fn["aclCreateTensor"] = lambda *a: (offsets.append(a[4]), real(*a))[1]
    try:
        for label, call in NUMERIC:
            if not label.startswith("empty"):
                offsets.clear()
                compare(b.run(call), call, label)
                assert offsets[-2:] == [3, 3], (label, offsets)
    finally:
        b.close()
    assert live(b) == (0, 0, 0, 0)


def test_argument_types_one_pointer_per_output():
    """Phase 1's argument types: the declared parameters, one tensor pointer per output, then
    workspaceSize and executor; a single-output operator's are what they always were."""
    two = lib.phase1_argtypes(STAND_IN)
    assert two == [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 2 + [ctypes.c_void_p] * 2 + lib._TAIL
    for op in ops.OPERATORS.values():
        if len(op.outputs) == 1:
            assert lib.phase1_argtypes(op) == [lib.C_TYPES[k] for _, k, _ in op.c_params] + [ctypes.c_void_p] + lib._TAIL


def test_a_null_output_is_a_null_pointer(backend):
    """An output whose shape is None is passed as NULL: phase 1's row 1 (161001)."""
    rng = np.random.default_rng(5)
    x, t, w = values(rng, (3, 4), F32), rng.integers(0, 4, 3).astype(I64), np.ones(4, F32)
    C.check_status(backend, call_of(x, t, w, total=(None, None)), 161001, "NULL totalWeightOut")
    C.check_status(backend, _null_out(call_of(x, t, w)), 161001, "NULL out")
    assert live(backend)[:3] == (0, 0, 0)


def _null_out(call: OpCall) -> OpCall:
    outputs = dict(call.outputs)
    outputs["out"] = (None, None)
    return OpCall(call.op, call.inputs, call.attrs, None, None, call.product, outputs)


def test_an_output_the_declaration_lacks_is_an_error(backend):
    rng = np.random.default_rng(6)
    call = call_of(values(rng, (3, 4), F32), np.zeros(3, I64), np.ones(4, F32))
    bad = OpCall(call.op, call.inputs, call.attrs, call.out_shape, call.out_dtype, call.product,
                 {**call.outputs, "extra": ((), F32)})
    with pytest.raises(ValueError, match=r"outputs \['extra'\] are not among its declared outputs"):
        backend.run(bad)
    assert live(backend)[:3] == (0, 0, 0)


# ---- phase 1: the page's rows, in the code's order, come back as AclnnError ------------------------
def status_calls(product: str = "atlas-a2") -> List[Tuple[str, OpCall, int]]:
    """docs/operators/NLLLoss.md "Phase 1" rows (and the vendor's unit tests they cite), each with
    every earlier row passing; pairs where two rows fail give the earlier one's status."""
    rng = np.random.default_rng(7)
    x, t, w = values(rng, (5, 4), F32), rng.integers(0, 4, 5).astype(I64), values(rng, (4,), F32, 0.5, 2)
    ok = dict(x=x, t=t, w=w)

    def c(**kw):
        a = {**ok, **kw}
        return call_of(a.pop("x"), a.pop("t"), a.pop("w"), product=product, **a)
    return [
        ("1 NULL self", c(x=None, out=(), total=((), F32)), 161001),
        ("1 NULL target", c(t=None), 161001),
        ("1 NULL weight", c(w=None), 161001),
        ("1 NULL totalWeightOut", c(total=(None, None)), 161001),
        ("1 before 7: NULL weight, reduction 3", c(w=None, reduction=3), 161001),
        ("2 weight float16 (case_016)", c(w=w.astype(F16)), 161002),
        ("3 out int32 (case_021)", c(reduction=0, out_dtype=I32, total=((), F32)), 161002),
        ("4 totalWeightOut int32", c(total=((), I32)), 161002),
        ("5 self int32 (case_010)", c(x=x.astype(I32), w=w.astype(I32), out_dtype=F32), 161002),
        ("6 target float32", c(t=t.astype(F32)), 161002),
        ("6 target int16", c(t=t.astype(np.int16)), 161002),
        ("7 reduction 3 (case_007)", c(reduction=3), 161002),
        ("7 reduction -1", c(reduction=-1), 161002),
        ("8 self rank 3", c(x=values(rng, (5, 4, 1), F32), out=()), 161002),
        ("8 self 0-d", c(x=np.float32(1.0).reshape(()), t=np.array(0, I64), out=()), 161002),
        ("9 target rank 2", c(t=t.reshape(5, 1)), 161002),
        ("10 target length (case_009)", c(t=np.zeros(4, I64)), 161002),
        ("10 1-D self, 1-D target (case_004)", c(x=np.ones(1, F32), t=np.zeros(1, I64), w=np.ones(1, F32),
                                                 reduction=0, out=(1,)), 161002),
        ("11 weight [C+1]", c(w=np.ones(5, F32)), 161002),
        ("11 weight [1, C]", c(w=np.ones((1, 4), F32)), 161002),
        ("12 none out [N+1]", c(reduction=0, out=(6,)), 161002),
        ("12 mean out [2]", c(out=(2,)), 161002),
        ("12 mean out [1, 1]", c(out=(1, 1)), 161002),
        ("13 totalWeightOut [2]", c(total=((2,), F32)), 161002),
        ("14 [N, 0] with targets", c(x=np.zeros((3, 0), F32), t=np.zeros(3, I64), w=np.zeros(0, F32)), 161002),
        ("14 1-D [0]", c(x=np.zeros(0, F32), t=np.array(0, I64), w=np.zeros(0, F32)), 161002),
    ]


STATUS = status_calls()


@pytest.mark.parametrize("label,call,status", STATUS, ids=[s[0] for s in STATUS])
def test_phase1_rejections_are_aclnn_errors(backend, label, call, status):
    C.check_status(backend, call, status, label)
    assert live(backend)[:3] == (0, 0, 0)


def test_bfloat16_is_row5_on_a_family_without_it(emu_dir, nll, soc):
    soc("Ascend910A")
    b = AclnnBackend(lib_dir=emu_dir)
    rng = np.random.default_rng(8)
    x, t, w = values(rng, (10, 7), BF16), rng.integers(0, 7, 10).astype(U8), values(rng, (7,), BF16)
    try:
        C.check_status(b, call_of(x, t, w, product="atlas-training", total=((1,), None)), 161002,
                       "Ascend910B2_case_024 on atlas-training")
        call = call_of(x.astype(F16), t, w.astype(F16), product="atlas-training")
        compare(b.run(call), call)
    finally:
        b.close()
    assert live(b) == (0, 0, 0, 0)


def test_nothing_leaks_over_every_call_and_error(backend):
    for label, call in NUMERIC:
        backend.run(call)
    for label, call, status in STATUS:
        with pytest.raises(AclnnError):
            backend.run(call)
    assert live(backend)[:3] == (0, 0, 0)


def vendor_rows():
    """docs/operators/NLLLoss.md's table of the vendor's op_api unit tests (read with
    tests/test_ops_vendor_tables.py's parser)."""
    from tests import test_ops_vendor_tables as V
    return V, V.table_rows(ROOT / "docs" / "operators" / "NLLLoss.md") or []


VENDOR_PARSER, VENDOR = vendor_rows()


def vendor_call(row) -> OpCall:
    """The row's call with drawn values: scores and weights in [-1, 1], targets in [0, C)."""
    V = VENDOR_PARSER
    shapes = {n: V._shape(v) for n, v in V._pairs(row.cells["shapes"])}
    dts = {n: np.dtype(C.BF16 if V.DTYPE_NAMES[d] == "bfloat16" else V.DTYPE_NAMES[d])
           for n, d in V._pairs(row.cells["dtypes"]) if d != "NULL"}
    attrs = {k: V._attr(v) for k, v in V._pairs(row.cells["attrs"])}
    rng = np.random.default_rng(11)
    n_classes = shapes["self"][-1] if shapes.get("self") else 1

    def draw(name):
        shape = shapes[name]
        if shape is None:
            return None
        if name == "target":
            return rng.integers(0, max(n_classes, 1), size=shape).astype(dts[name])
        return rng.uniform(-1, 1, size=shape).astype(dts[name])
    outputs = {n: (shapes[n], dts.get(n)) for n in ("out", "totalWeightOut")}
    product = "atlas-a2" if row.cells["product"] == "any" else row.cells["product"]
    return OpCall("NLLLoss", {n: draw(n) for n in ("self", "target", "weight")}, attrs, outputs["out"][0],
                  outputs["out"][1], product, outputs)


@pytest.mark.parametrize("row", VENDOR, ids=[r.test for r in VENDOR])
def test_the_emulator_decides_each_vendor_row_as_the_page_says(backend, row):
    status = int(row.cells["status"])
    call = vendor_call(row)
    if status:
        C.check_status(backend, call, status, row.where)
    else:
        got = backend.run(call)
        assert set(got) == {"out", "totalWeightOut"}, (row.where, got)
    assert live(backend)[:3] == (0, 0, 0)


def test_the_vendor_table_is_read():
    assert len(VENDOR) >= 20 and {r.test for r in VENDOR} >= {"case_001", "case_021", "case_02_float16_sum"}


def test_the_stand_in_is_the_registry_declaration_when_it_lands(nll):
    """Once suite/ops/nll_loss.py registers NLLLoss, its C parameters (names and types, in order)
    and outputs must be the page's, which these tests stand in for."""
    real = nll
    if real is None:
        pytest.skip("suite/ops/nll_loss.py has not landed: the stand-in is the only declaration")
    assert [(n, k) for n, k, _ in real.c_params] == [(n, k) for n, k, _ in STAND_IN.c_params]
    assert tuple(real.outputs) == STAND_IN.outputs


# ---- the planted faults of the emulator's entry ------------------------------------------------------
def battery_failures(lib_dir: str) -> List[str]:
    """Every numeric call against one build, in this process: the labels that do not come back right."""
    register()
    os.environ["ACLNN_EMU_SOC"] = "Ascend910B3"
    b = AclnnBackend(lib_dir=lib_dir)
    failed = []
    try:
        for label, call in NUMERIC:
            try:
                compare(b.run(call), call, label)
            except Exception as exc:  # any failure of the build under test counts
                failed.append(f"{label}: {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        b.close()
    return failed


def _battery_in_fresh_process(lib_dir: str) -> List[str]:
    code = textwrap.dedent(f"""
        import json
        from tests.test_backends_aclnn_multi import battery_failures
        print(json.dumps(battery_failures({lib_dir!r})))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# fault -> a label the battery must fail with it (and the control: the clean build fails nothing)
NLL_FAULTS = {
    "nll_mean_by_count": "float32 ignore -100 r1",
    "nll_no_ignore": "float32 int64 none ignore inside",
}


def test_nll_faults_are_declared_by_the_entry():
    declared = {f.name for f in emulator_build.FAULTS.values() if f.module == "nll_loss"}
    assert declared == set(NLL_FAULTS), declared


@pytest.mark.parametrize("fault", [None, *NLL_FAULTS])
def test_planted_fault_is_caught(tmp_path, emu_dir, fault):
    lib_dir = emu_dir if fault is None else str(emulator_build.build(tmp_path / "lib64", fault))
    failed = _battery_in_fresh_process(lib_dir)
    if fault is None:
        assert failed == [], failed
        return
    assert any(f.startswith(NLL_FAULTS[fault] + ":") for f in failed), (fault, failed)
    assert len(failed) < len(NUMERIC), f"{fault} broke every call: {failed}"
