"""Checks shared by the aclnn-backend tests and the fault driver: an independent float64 reference
of the operator pages' formulas, tolerance-aware comparison, and the batteries of calls.

The reference is written from the operator pages (docs/operators/MseLossBackward.md,
KlDivBackward.md, L1LossBackward.md, SmoothL1LossBackward.md: their "Result" sections) in float64
numpy, not from the emulator's C code nor from the suite's operator modules.

Operators whose C entries the emulator has before their suite modules land are called through
their pages' C signatures (PAGE_DECLARATIONS, standing in for Operator.c_params until the registry
has them); every call of theirs is built by position from whichever declaration is in force, so the
same batteries run unchanged once the modules land. PROBE is a made-up operator that tests compile
into the emulator (tests/emulator/probe/emu_probe.c) to prove what no real operator uses yet: a NULL
optional tensor, and int64, bool and C float attributes.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import ml_dtypes
import numpy as np

from suite import OpCall, ops
from suite.ops.base import Operator

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
F64, I32 = np.dtype(np.float64), np.dtype(np.int32)
U16, U32, BOOL = np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.bool_)
PRECISION = {"float32": (24, -126), "float16": (11, -14), "bfloat16": (8, -126)}  # (bits, emin)
MAX_FINITE = {"float32": float(np.finfo(np.float32).max), "float16": 65504.0,
              "bfloat16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)}
EPS_SMOOTH_L1 = float(np.float32(1e-6))  # the kernel's beta + 1e-6 (a float32 constant)


# ---- declarations ------------------------------------------------------------------------------
class Declared(Operator):
    """An operator's C signature as Operator.c_params declares it, and nothing else: all the aclnn
    backend reads. Stands in for a suite module the registry lacks."""

    def __init__(self, name: str, c_params: tuple, optional: tuple = ()) -> None:
        self.name, self.c_params, self.optional = name, c_params, optional
        self.inputs = tuple(n for n, kind, _ in c_params if kind == "tensor")


_G, _S, _T = ("gradOutput", "tensor", None), ("self", "tensor", None), ("target", "tensor", None)
# From docs/operators/L1LossBackward.md and SmoothL1LossBackward.md ("API"): used while the
# registry has no module of that name.
PAGE_DECLARATIONS: Dict[str, Declared] = {
    "L1LossBackward": Declared("L1LossBackward", (_G, _S, _T, ("reduction", "int64", 1))),
    "SmoothL1LossBackward": Declared("SmoothL1LossBackward", (("gradOut", "tensor", None), _S, _T,
                                                              ("reduction", "int64", 1), ("beta", "float", 1.0))),
}
PROBE = Declared("EmuProbe", (("x", "tensor", None), ("y", "tensor", None), ("weight", "tensor", None),
                              ("mode", "int64", 0), ("negate", "bool", False), ("scale", "float", 1.0)),
                 optional=("weight",))
PROBE_SOURCE = Path(__file__).resolve().parent / "emulator" / "probe" / "emu_probe.c"


def declaration(op: str) -> Operator:
    """The declaration in force: the registry's, else the page's (or the probe's)."""
    found = ops.OPERATORS.get(op) or PAGE_DECLARATIONS.get(op) or (PROBE if op == PROBE.name else None)
    if found is None:
        raise KeyError(f"no declaration of {op}")
    return found


def stand_ins(probe: bool = True) -> Dict[str, Operator]:
    """What the registry must hold, beyond itself, for these batteries: the page declarations it
    lacks (and the probe). Register them for a test with monkeypatch.setitem(ops.OPERATORS, ...)."""
    found: Dict[str, Operator] = {n: d for n, d in PAGE_DECLARATIONS.items() if n not in ops.OPERATORS}
    if probe:
        found[PROBE.name] = PROBE
    return found


def positional(op: str, tensors: Sequence, scalars: Sequence, out_shape, out_dtype, product="atlas-a2") -> OpCall:
    """A call of `op` from the values of its C parameters in order (tensors, then scalars), named
    after the declaration in force."""
    params = declaration(op).c_params
    tnames = [n for n, kind, _ in params if kind == "tensor"]
    snames = [n for n, kind, _ in params if kind != "tensor"]
    assert len(tensors) == len(tnames) and len(scalars) == len(snames), (op, tnames, snames)
    return OpCall(op, dict(zip(tnames, tensors)), dict(zip(snames, scalars)),
                  None if out_shape is None else tuple(out_shape), None if out_dtype is None else np.dtype(out_dtype),
                  product)


def args_of(call: OpCall) -> Tuple[list, list]:
    """The call's tensors and scalars in C-parameter order."""
    params = declaration(call.op).c_params
    return ([call.inputs.get(n) for n, kind, _ in params if kind == "tensor"],
            [call.attrs.get(n, d) for n, kind, d in params if kind != "tensor"])


def with_tensor(call: OpCall, i: int, value) -> OpCall:
    """The call with its i-th tensor parameter replaced (None: NULL)."""
    name = [n for n, kind, _ in declaration(call.op).c_params if kind == "tensor"][i]
    return _replace(call, {name: value})


def with_scalar(call: OpCall, i: int, value) -> OpCall:
    name = [n for n, kind, _ in declaration(call.op).c_params if kind != "tensor"][i]
    return _replace(call, attrs={name: value})


def promote(*dts) -> np.dtype:
    """opbase's PromoteType over the dtypes these batteries use: two floats give the wider, or
    float32 for float16 with bfloat16; an integer or bool next to a float gives the float."""
    out = np.dtype(dts[0])
    for d in map(np.dtype, dts[1:]):
        if d == out:
            continue
        fo, fd = out.name in PRECISION or out == F64, d.name in PRECISION or d == F64
        if fo and fd:
            out = F64 if F64 in (out, d) else F32
        elif fd:
            out = d
        elif not fo:
            raise ValueError(f"no promotion of {out} and {d} here")
    return out


# ---- reference ---------------------------------------------------------------------------------
def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def sum_to(x: np.ndarray, shape: Tuple[int, ...]) -> np.ndarray:
    """Sum x over the dimensions broadcasting added to `shape` (autograd's reduction)."""
    lead = x.ndim - len(shape)
    x = x.sum(axis=tuple(range(lead))) if lead else x
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and x.shape[i] != 1)
    return x.sum(axis=axes, keepdims=True).reshape(shape) if axes else x.reshape(shape)


def reference(call: OpCall) -> Tuple[np.ndarray, np.ndarray, int, Optional[np.dtype]]:
    """(expected, sum of |terms| per element, terms per element, the dtype the kernel rounds to
    before out's or None), all float64."""
    if call.op in ("L1LossBackward", "SmoothL1LossBackward"):
        return _reference_promoting(call)
    g, s, t = (f64(call.inputs[k]) for k in ("gradOutput", "self", "target"))
    red = call.attrs["reduction"]
    if call.op == "MseLossBackward":
        r = g * (s - t) * 2.0
        if red == 1:
            r = r / s.size  # numel(self) as passed, before broadcasting
        return r, np.abs(r), 1, None
    B = np.broadcast_shapes(s.shape, t.shape)
    e = np.exp(t) if call.attrs["logTarget"] else t
    terms = -np.broadcast_to(e, B) * np.broadcast_to(g, B)
    if red == 1:
        terms = terms / max(int(np.prod(B)), 1)
    elif red == 3:
        terms = terms / B[0]
    n = max(int(np.prod(B)) // max(s.size, 1), 1)
    return sum_to(terms, s.shape), sum_to(np.abs(terms), s.shape), n, None


def _reference_promoting(call: OpCall):
    """L1LossBackward and SmoothL1LossBackward: the inputs cast to P = promote(...) first, the
    result rounded to P before out's dtype (their pages' "Dtypes" sections)."""
    (g, s, t), scalars = args_of(call)
    p = promote(g.dtype, s.dtype, t.dtype)
    numel_self = s.size
    g, s, t = (f64(np.asarray(a).astype(p)) for a in (g, s, t))
    B = np.broadcast_shapes(g.shape, s.shape, t.shape)
    red = scalars[0]
    with np.errstate(all="ignore"):
        if call.op == "L1LossBackward":
            sign = np.where(s > t, 1.0, np.where(s < t, -1.0, 0.0))  # by comparison: sign(0) = 0
            r = np.broadcast_to(g * sign, B)
            if red == 1:
                r = r / max(int(np.prod(B)), 1)  # numel(B): the kernel's own, broadcast, input
        else:
            beta = float(np.float32(scalars[1]))  # a C float
            d = np.broadcast_to(s - t, B)
            quad = d / (beta + EPS_SMOOTH_L1)  # beta + 1e-6, not beta
            d0 = np.where(np.isnan(d), 0.0, d)  # NaN cleared before the comparisons, not in quad
            r = (np.where(d0 <= -beta, -1.0, 0.0) + np.where(d0 >= beta, 1.0, 0.0)
                 + np.where(np.abs(d0) < beta, quad, 0.0))
            r = np.broadcast_to(r * g, B)
            if red == 1:
                r = r / max(numel_self, 1)  # numel(self) as passed, not numel(B)
    return np.array(r), np.abs(r), 1, p


def ulp(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    bits, emin = PRECISION[np.dtype(dtype).name]
    e = np.floor(np.log2(np.maximum(np.abs(x), 2.0 ** (emin - bits))))
    return 2.0 ** (np.maximum(e, emin) - bits + 1)


def assert_close(out: np.ndarray, call: OpCall, label: str = "") -> None:
    """out within 1 ulp (float16/bfloat16) or a few ulps (float32) of the float64 reference, plus
    a float32 budget proportional to the summed magnitudes where terms are summed; where the kernel
    rounds to a dtype P before out's, within 1 ulp of P as well, and past P's range infinite."""
    exp, mag, n, through = reference(call)
    dtype = np.dtype(call.out_dtype)
    where = f"{call.op} {label}"
    assert isinstance(out, np.ndarray), f"{where}: got {type(out)}"
    assert out.shape == tuple(call.out_shape), f"{where}: shape {out.shape} != {call.out_shape}"
    assert out.dtype == dtype, f"{where}: dtype {out.dtype} != {dtype}"
    got = f64(out)
    nan_exp = np.isnan(exp)
    assert np.array_equal(np.isnan(got), nan_exp), f"{where}: NaN positions differ (unwritten or spurious)"
    over = np.zeros(exp.shape, bool)
    for dt in {dtype, np.dtype(through or dtype)}:
        top = MAX_FINITE[dt.name]
        over |= np.abs(exp) >= top + ulp(np.float64(top), dt) / 2
    assert np.array_equal(got[over], np.sign(exp[over]) * np.inf), f"{where}: overflow not to inf"
    ok = ~nan_exp & ~over
    k = 1.0 if dtype.name != "float32" else 2.0
    tol = k * ulp(exp[ok], dtype) + (n + 3) * 2.0 ** -24 * mag[ok]
    if through is not None:
        tol = np.maximum(tol, ulp(exp[ok], through) + (n + 3) * 2.0 ** -24 * mag[ok])
    err = np.abs(got[ok] - exp[ok])
    bad = ~(err <= tol)
    if bad.any():
        i = int(np.argmax(bad))
        raise AssertionError(f"{where}: {int(bad.sum())}/{bad.size} elements off, e.g. got {got[ok][i]!r} "
                             f"expected {exp[ok][i]!r} (tol {tol[i]:.3g})")


# ---- inputs --------------------------------------------------------------------------------------
def values(rng: np.random.Generator, shape, dtype, lo=-5.0, hi=5.0) -> np.ndarray:
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def view(v: np.ndarray, layout: str, rng: np.random.Generator) -> np.ndarray:
    """The same values as a view of the requested layout: c (contiguous), t (transposed storage),
    s (every other element), o (sliced out of a larger array: a storage offset), n (negative stride)."""
    if layout == "c" or v.ndim == 0 or v.size == 0:
        return v
    if layout == "t":
        return np.ascontiguousarray(v.T).T
    if layout == "s":
        base = values(rng, v.shape[:-1] + (2 * v.shape[-1],), v.dtype)
        base[..., ::2] = v
        return base[..., ::2]
    if layout == "o":
        base = values(rng, (v.shape[0] + 2,) + v.shape[1:], v.dtype)
        base[2:] = v
        return base[2:]
    if layout == "n":
        return v[::-1].copy()[::-1]
    raise ValueError(layout)


def mse(rng, shapes, dtype, out_dtype=None, *, reduction=1, layouts="ccc", product="atlas-a2") -> OpCall:
    g, s, t = (view(values(rng, sh, dtype), lay, rng) for sh, lay in zip(shapes, layouts))
    B = np.broadcast_shapes(*shapes)
    return OpCall("MseLossBackward", {"gradOutput": g, "self": s, "target": t}, {"reduction": reduction},
                  tuple(B), np.dtype(out_dtype or dtype), product)


def kl(rng, shapes, dtypes, out_dtype, *, reduction=1, log_target=False, layouts="ccc", product="atlas-a2") -> OpCall:
    lims = [(-5, 5), (-5, 5), (-3, 3) if log_target else (-5, 5)]
    g, s, t = (view(values(rng, sh, dt, *lim), lay, rng)
               for sh, dt, lim, lay in zip(shapes, dtypes, lims, layouts))
    return OpCall("KlDivBackward", {"gradOutput": g, "self": s, "target": t},
                  {"reduction": reduction, "logTarget": log_target}, tuple(shapes[1]), np.dtype(out_dtype), product)


def l1(rng, shapes, dtypes, out_dtype, *, reduction=1, layouts="ccc", product="atlas-a2", same=0.0) -> OpCall:
    """L1LossBackward (gradOutput, self, target, reduction); `same`: the share of elements where
    target is set to self's value (sign 0)."""
    g, s, t = (values(rng, sh, dt) for sh, dt in zip(shapes, dtypes))
    if same and s.shape == t.shape and s.size:
        eq = rng.random(s.shape) < same
        t = np.where(eq, s.astype(t.dtype), t).astype(t.dtype)
    g, s, t = (view(a, lay, rng) for a, lay in zip((g, s, t), layouts))
    B = np.broadcast_shapes(*shapes)
    return positional("L1LossBackward", (g, s, t), (reduction,), B, out_dtype, product)


def smooth_l1(rng, shapes, dtypes, out_dtype, *, reduction=1, beta=1.0, layouts="ccc", product="atlas-a2",
              grid=None, span=2.0) -> OpCall:
    """SmoothL1LossBackward (gradOut, self, target, reduction, beta); `grid`: self and target drawn
    from multiples of `grid` in [-span, span] (exact in every dtype), so |self - target| meets beta
    exactly."""
    if grid:
        g = values(rng, shapes[0], dtypes[0])
        k = int(round(span / grid))
        s, t = (np.asarray(rng.integers(-k, k + 1, size=sh) * grid).astype(dt) for sh, dt in zip(shapes[1:], dtypes[1:]))
    else:
        g, s, t = (values(rng, sh, dt) for sh, dt in zip(shapes, dtypes))
    g, s, t = (view(a, lay, rng) for a, lay in zip((g, s, t), layouts))
    B = np.broadcast_shapes(*shapes)
    return positional("SmoothL1LossBackward", (g, s, t), (reduction, beta), B, out_dtype, product)


def numeric_calls(seed: int = 0) -> List[Tuple[str, OpCall]]:
    """A spread of valid calls (atlas-a2): dtypes, mixed KL dtypes, broadcasting, 0-d, empty,
    transposed / strided / offset views, every reduction and logTarget."""
    r = np.random.default_rng(seed)
    S = (2, 3, 4)
    calls = []
    for red in (0, 1, 2):
        for dt in (F32, F16, BF16):
            calls.append((f"mse same {dt.name} r{red}", mse(r, (S, S, S), dt, reduction=red)))
    calls += [
        ("mse views f16", mse(r, (S, S, S), F16, reduction=1, layouts="tso")),
        ("mse views bf16", mse(r, (S, S, S), BF16, reduction=0, layouts="ost")),
        ("mse views f32", mse(r, ((17, 33),) * 3, F32, reduction=2, layouts="sto")),
        ("mse f16->f32", mse(r, (S, S, S), F16, F32, reduction=2, layouts="ctc")),
        ("mse f32->f16", mse(r, (S, S, S), F32, F16, reduction=0)),
        ("mse bf16->f32", mse(r, (S, S, S), BF16, F32, reduction=1)),
        ("mse broadcast all", mse(r, ((), (3, 1), (1, 4)), F32, reduction=1)),
        ("mse self broadcast by target", mse(r, ((3, 4), (4,), (3, 4)), F16, reduction=1, layouts="tcs")),
        ("mse self broadcast bf16", mse(r, ((5, 1, 6), (1, 6), (5, 4, 1)), BF16, F32, reduction=1)),
        ("mse 0-d", mse(r, ((), (), ()), F32, reduction=1)),
        ("mse empty", mse(r, ((1, 3), (0, 3), (0, 3)), F32, reduction=1)),
        ("mse empty by broadcast", mse(r, ((2, 0), (1, 0), (2, 1)), F16, reduction=0)),
        ("mse rank 8", mse(r, ((1, 2, 1, 2, 1, 2, 1, 2),) * 3, F32, reduction=0, layouts="tst")),
    ]
    for red in (0, 1, 2, 3):
        for lt in (False, True):
            dt = (F32, F16, BF16)[(red + lt) % 3]
            calls.append((f"kl same {dt.name} r{red} lt{int(lt)}", kl(r, (S, S, S), (dt,) * 3, dt, reduction=red,
                                                                      log_target=lt)))
    calls += [
        ("kl mixed dtypes", kl(r, (S, S, S), (F16, F32, BF16), F16, reduction=1, log_target=False)),
        ("kl mixed dtypes lt", kl(r, (S, S, S), (BF16, F16, F32), F32, reduction=2, log_target=True, layouts="tco")),
        ("kl self broadcast dim0", kl(r, ((3, 4), (1, 4), (3, 4)), (F32,) * 3, F32, reduction=0, log_target=False)),
        ("kl self leading dims batchmean", kl(r, ((3, 1), (4,), (2, 3, 4)), (F32,) * 3, F32, reduction=3,
                                              log_target=False, layouts="ccs")),
        ("kl self both ways lt", kl(r, ((), (2, 1, 3), (2, 5, 3)), (F16,) * 3, BF16, reduction=1, log_target=True)),
        ("kl sum 50 terms", kl(r, ((50, 64), (1, 64), (50, 64)), (F16, F16, F16), F32, reduction=0, log_target=False,
                               layouts="tco")),
        ("kl views", kl(r, ((6, 7), (6, 7), (6, 7)), (F32,) * 3, F32, reduction=1, log_target=False, layouts="sot")),
        ("kl 0-d", kl(r, ((), (), ()), (F32,) * 3, F32, reduction=1, log_target=True)),
        ("kl 0-d self, 1-d target", kl(r, ((3,), (), (3,)), (F32,) * 3, F16, reduction=1, log_target=False)),
        ("kl empty self", kl(r, ((4,), (0, 4), (0, 4)), (F32,) * 3, F32, reduction=1, log_target=False)),
        ("kl rank 8", kl(r, ((1, 2, 1, 2, 1, 2, 1, 2),) * 3, (F32,) * 3, F32, reduction=2, log_target=False,
                         layouts="tst")),
    ]
    R8 = (1, 2, 1, 2, 1, 2, 1, 2)
    for red in (0, 1, 2):
        for dt in (F32, F16, BF16):
            calls.append((f"l1 same {dt.name} r{red}", l1(r, (S, S, S), (dt,) * 3, dt, reduction=red, same=0.3)))
    calls += [
        ("l1 mean divides by numel(B)", l1(r, ((2, 3, 4), (3, 4), (2, 1, 4)), (F32,) * 3, F32, reduction=1)),
        ("l1 mean, self and target broadcast", l1(r, ((5, 1, 6), (1, 6), (5, 4, 1)), (BF16,) * 3, F32, reduction=1)),
        ("l1 mixed f16 f32", l1(r, (S, S, S), (F16, F32, F16), F16, reduction=1, same=0.3)),
        ("l1 mixed bf16 f16", l1(r, (S, S, S), (BF16, F16, BF16), BF16, reduction=2)),
        ("l1 f16 into f32 out", l1(r, (S, S, S), (F16,) * 3, F32, reduction=1)),
        ("l1 bf16 into f16 out", l1(r, (S, S, S), (BF16,) * 3, F16, reduction=1)),
        ("l1 int32 self", l1(r, (S, S, S), (F16, I32, F16), F16, reduction=1)),
        ("l1 views", l1(r, (S, S, S), (F32,) * 3, F32, reduction=1, layouts="tso", same=0.3)),
        ("l1 views f16", l1(r, ((17, 33),) * 3, (F16,) * 3, F16, reduction=0, layouts="sot")),
        ("l1 broadcast all", l1(r, ((), (3, 1), (1, 4)), (F32,) * 3, F32, reduction=1)),
        ("l1 0-d", l1(r, ((), (), ()), (F32,) * 3, F32, reduction=1)),
        ("l1 empty", l1(r, ((1, 3), (0, 3), (0, 3)), (F32,) * 3, F32, reduction=1)),
        ("l1 rank 8", l1(r, (R8,) * 3, (F32,) * 3, F32, reduction=0, layouts="tst")),
    ]
    for red in (0, 1, 2):
        for dt in (F32, F16, BF16):
            calls.append((f"smooth_l1 same {dt.name} r{red}", smooth_l1(r, (S, S, S), (dt,) * 3, dt, reduction=red)))
    calls += [
        ("smooth_l1 beta 0.1", smooth_l1(r, (S, S, S), (F32,) * 3, F32, reduction=1, beta=0.1)),
        ("smooth_l1 beta 0", smooth_l1(r, (S, S, S), (F16,) * 3, F16, reduction=0, beta=0.0, grid=0.25)),
        ("smooth_l1 beta -0.0", smooth_l1(r, (S, S, S), (F32,) * 3, F32, reduction=2, beta=-0.0, grid=0.25)),
        ("smooth_l1 beta 1e-3", smooth_l1(r, (S, S, S), (F32,) * 3, F32, reduction=2, beta=1e-3, grid=2.0 ** -12,
                                          span=2.0 ** -10)),
        ("smooth_l1 beta 1e30", smooth_l1(r, (S, S, S), (BF16,) * 3, BF16, reduction=1, beta=1e30)),
        ("smooth_l1 beta inf", smooth_l1(r, (S, S, S), (F32,) * 3, F32, reduction=0, beta=float("inf"))),
        ("smooth_l1 boundary grid", smooth_l1(r, ((4, 25),) * 3, (F32, F16, BF16), F32, reduction=0, beta=0.5,
                                              grid=0.125)),
        ("smooth_l1 boundary grid f16", smooth_l1(r, ((4, 25),) * 3, (F16,) * 3, F16, reduction=1, beta=0.375,
                                                  grid=0.125)),
        ("smooth_l1 mean divides by numel(self)", smooth_l1(r, ((2, 3, 4), (3, 4), (2, 1, 4)), (F32,) * 3, F32,
                                                            reduction=1)),
        ("smooth_l1 mixed", smooth_l1(r, (S, S, S), (F16, F32, BF16), F16, reduction=1, beta=2.0)),
        ("smooth_l1 mixed bf16 f16", smooth_l1(r, (S, S, S), (BF16, F16, BF16), BF16, reduction=0, beta=0.5)),
        ("smooth_l1 f16 into f32 out", smooth_l1(r, (S, S, S), (F16,) * 3, F32, reduction=1, beta=3.0)),
        ("smooth_l1 views", smooth_l1(r, ((17, 33),) * 3, (F32,) * 3, F32, reduction=2, beta=1.5, layouts="ots")),
        ("smooth_l1 broadcast all", smooth_l1(r, ((3, 1), (), (1, 4)), (F32,) * 3, F16, reduction=1, beta=1.0)),
        ("smooth_l1 0-d", smooth_l1(r, ((), (), ()), (F32,) * 3, F32, reduction=1)),
        ("smooth_l1 empty", smooth_l1(r, ((2, 0), (1, 0), (2, 1)), (F16,) * 3, F16, reduction=0)),
        ("smooth_l1 rank 8", smooth_l1(r, (R8,) * 3, (F32,) * 3, F32, reduction=0, beta=1.0, layouts="tst")),
    ]
    return calls


def exact_cast_call(out_dtype: np.dtype, seed: int = 1) -> OpCall:
    """MSE with grad 0.5, target 0, reduction none: out = round(self) exactly, so every element
    checks the float32 -> out_dtype rounding (RNE, subnormals, overflow, NaN) bit for bit."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2 ** 32, size=6000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    bits = bits[np.abs(bits) < 1e38]  # self*2 stays finite in float32
    half_tiny = [2.0 ** -25, 2.0 ** -25 * (1 + 2 ** -23), 3 * 2.0 ** -25, 2.0 ** -24, 1.5 * 2.0 ** -24,
                 2.0 ** -14 * (1 - 2 ** -11), 65504.0, 65519.99, 65520.0, 65536.0, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11]
    bf_ties = [1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -20, 2.0 ** -133, 2.0 ** -126, 1.5 * 2.0 ** -133]
    edges = np.array(half_tiny + bf_ties + [0.0, -0.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    edges = np.concatenate([edges, -edges])
    rand_scaled = (rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 6, 2000)).astype(np.float32)
    s = np.concatenate([bits, edges, rand_scaled, (rng.integers(0, 2 ** 12, 500) * 2.0 ** -24).astype(np.float32)])
    g = np.full(s.shape, 0.5, np.float32)
    t = np.zeros(s.shape, np.float32)
    return OpCall("MseLossBackward", {"gradOutput": g, "self": s, "target": t}, {"reduction": 0},
                  s.shape, np.dtype(out_dtype), "atlas-a2")


def assert_exact_cast(out: np.ndarray, call: OpCall) -> None:
    s = call.inputs["self"]
    with np.errstate(over="ignore"):
        expected = s.astype(call.out_dtype)  # numpy / ml_dtypes: float32 -> narrow, single RNE rounding
    raw = lambda a: a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)
    nan = np.isnan(f64(expected))
    assert np.array_equal(np.isnan(f64(out)), nan), "NaN positions differ"
    diff = raw(out)[~nan] != raw(expected)[~nan]
    if diff.any():
        i = int(np.argmax(diff))
        raise AssertionError(f"{int(diff.sum())} roundings differ, e.g. {s[~nan][i]!r} -> {out[~nan][i]!r}, "
                             f"expected {expected[~nan][i]!r}")


# ---- rejections ------------------------------------------------------------------------------------
def _replace(call: OpCall, inputs: Optional[Dict] = None, **kw) -> OpCall:
    fields = dict(op=call.op, inputs=dict(call.inputs), attrs=dict(call.attrs), out_shape=call.out_shape,
                  out_dtype=call.out_dtype, product=call.product)
    if inputs:
        fields["inputs"].update(inputs)
    if "attrs" in kw:
        fields["attrs"].update(kw.pop("attrs"))
    fields.update(kw)
    return OpCall(**fields)


def status_calls(product: str = "atlas-a2") -> List[Tuple[str, OpCall, int]]:
    """(label, call, expected status) for every rejection in the operator pages' tables, valid
    for `product`."""
    r = np.random.default_rng(7)
    S = (2, 3)
    m = mse(r, (S, S, S), F32, product=product)
    k = kl(r, (S, S, S), (F32,) * 3, F32, product=product)
    arr = lambda shape, dt=F32: values(r, shape, dt)
    R9 = (1,) * 9
    cases = []
    for base, tag in ((m, "mse"), (k, "kl")):
        for name in ("gradOutput", "self", "target"):
            cases.append((f"{tag} NULL {name}", _replace(base, {name: None}), 161001))
        cases.append((f"{tag} NULL out", _replace(base, out_shape=None), 161001))
        cases.append((f"{tag} NULL first, before bad dtype", _replace(base, {"gradOutput": None, "target": arr(S, F64)}), 161001))
        cases.append((f"{tag} self float64", _replace(base, {"self": arr(S, F64)}), 161002))
        cases.append((f"{tag} self int32", _replace(base, {"self": arr(S, I32)}), 161002))
        cases.append((f"{tag} out float64", _replace(base, out_dtype=F64), 161002))
        cases.append((f"{tag} self and target do not broadcast", _replace(base, {"target": arr((2, 4))}), 161002))
    cases += [
        ("mse grad dtype differs", _replace(m, {"gradOutput": arr(S, F16)}), 161002),
        ("mse target dtype differs", _replace(m, {"target": arr(S, F16)}), 161002),
        ("mse reduction 3", _replace(m, attrs={"reduction": 3}), 161002),
        ("mse reduction -1", _replace(m, attrs={"reduction": -1}), 161002),
        ("mse rank 9", _replace(m, {n: arr(R9) for n in ("gradOutput", "self", "target")}, out_shape=R9), 161002),
        ("mse rank 9 target only", _replace(m, {"target": arr(R9)}, out_shape=(1,) * 7 + S), 161002),
        ("mse out shape not B", _replace(m, out_shape=(3, 2)), 161002),
        ("mse out shape extra dim", _replace(m, out_shape=(1, 2, 3)), 161002),
        ("mse out shape of self, not B", _replace(m, {"self": arr((3,))}, out_shape=(3,)), 161002),
        ("kl grad float64", _replace(k, {"gradOutput": arr(S, F64)}), 161002),
        ("kl target int32", _replace(k, {"target": arr(S, I32)}), 161002),
        ("kl rank 9", _replace(k, {n: arr(R9) for n in ("gradOutput", "self", "target")}, out_shape=R9), 161002),
        ("kl rank 9 grad only", _replace(k, {"gradOutput": arr(R9)}), 161002),
        ("kl grad does not broadcast to B", _replace(k, {"gradOutput": arr((4, 2, 3))}), 161002),
        ("kl out shape B instead of self", _replace(k, {"self": arr((1, 3))}, out_shape=S), 161002),
    ]
    cases += _promoting_status_calls(r, product)
    if product in ("atlas-training", "atlas-inference"):
        cases += [
            ("mse bf16 on this product", mse(r, (S, S, S), BF16, product=product), 161002),
            ("mse bf16 out on this product", mse(r, (S, S, S), F32, BF16, product=product), 161002),
            ("kl bf16 target on this product", kl(r, (S, S, S), (F32, F32, BF16), F32, product=product), 161002),
            ("l1 bf16 inputs on this product", l1(r, (S, S, S), (BF16,) * 3, F32, product=product), 161002),
            ("smooth_l1 bf16 self on this product",
             smooth_l1(r, (S, S, S), (F32, BF16, F32), F32, product=product), 161002),
            ("smooth_l1 bf16 out on this product", smooth_l1(r, (S, S, S), (F32,) * 3, BF16, product=product), 161002),
        ]
    return cases


def _promoting_status_calls(r, product: str) -> List[Tuple[str, OpCall, int]]:
    """The rejection tables of docs/operators/L1LossBackward.md and SmoothL1LossBackward.md."""
    S, R9 = (2, 3), (1,) * 9
    arr = lambda shape, dt=F32: values(r, shape, dt, 0.0, 5.0)
    lo = l1(r, (S, S, S), (F32,) * 3, F32, product=product)
    sm = smooth_l1(r, (S, S, S), (F32,) * 3, F32, product=product)
    cases = []
    for base, tag in ((lo, "l1"), (sm, "smooth_l1")):
        for i in range(3):
            cases.append((f"{tag} NULL tensor {i}", with_tensor(base, i, None), 161001))
        cases.append((f"{tag} NULL out", _replace(base, out_shape=None), 161001))
        cases.append((f"{tag} NULL first, before bad reduction",
                      with_scalar(with_tensor(base, 1, None), 0, 5), 161001))
        cases.append((f"{tag} reduction 3", with_scalar(base, 0, 3), 161002))
        cases.append((f"{tag} reduction -1", with_scalar(base, 0, -1), 161002))
        cases.append((f"{tag} self float64", with_tensor(base, 1, arr(S, F64)), 161002))
        cases.append((f"{tag} rank 9", _replace(base, {n: arr(R9) for n in base.inputs}, out_shape=R9), 161002))
        cases.append((f"{tag} rank 9 target only", with_tensor(base, 2, arr(R9)), 161002))
        cases.append((f"{tag} self and gradient do not broadcast", with_tensor(base, 0, arr((2, 4))), 161002))
        cases.append((f"{tag} target does not broadcast", with_tensor(base, 2, arr((4, 3))), 161002))
        cases.append((f"{tag} out shape not B", _replace(base, out_shape=(3, 2)), 161002))
        cases.append((f"{tag} out of self's shape, not B", _replace(with_tensor(base, 1, arr((3,))), out_shape=(3,)), 161002))
    cases += [
        ("l1 all inputs int32", _replace(lo, {n: arr(S, I32) for n in lo.inputs}), 161002),
        ("l1 uint16 gradient with float self", with_tensor(lo, 0, arr(S, U16)), 161002),
        ("l1 uint32 target", with_tensor(lo, 2, arr(S, U32)), 161002),
        ("l1 int32 out", _replace(lo, out_dtype=I32), 161002),
        ("l1 bool out", _replace(lo, out_dtype=BOOL), 161002),
        ("l1 rank 9 out", _replace(lo, {n: arr((1, 1, 2, 3)) for n in lo.inputs}, out_shape=R9), 161002),
        ("smooth_l1 self int32", with_tensor(sm, 1, arr(S, I32)), 161002),
        ("smooth_l1 out float64", _replace(sm, out_dtype=F64), 161002),
        ("smooth_l1 beta -1", with_scalar(sm, 1, -1.0), 161002),
        ("smooth_l1 beta -inf", with_scalar(sm, 1, float("-inf")), 161002),
        ("smooth_l1 beta NaN", with_scalar(sm, 1, float("nan")), 161002),
        ("smooth_l1 beta -1e-45 (a negative float32 subnormal)", with_scalar(sm, 1, -1e-45), 161002),
        ("smooth_l1 NULL before bad beta", with_scalar(with_tensor(sm, 2, None), 1, -1.0), 161001),
    ]
    return cases


def accepted_controls(product: str = "atlas-a2") -> List[Tuple[str, OpCall]]:
    """Valid neighbours of the rejections (so a backend rejecting everything fails too)."""
    r = np.random.default_rng(8)
    R8 = (1, 2, 1, 1, 1, 1, 1, 2)
    return [
        ("mse rank 8", mse(r, (R8, R8, R8), F32, product=product)),
        ("kl rank 8", kl(r, (R8, R8, R8), (F32,) * 3, F32, product=product)),
        ("kl reduction 3", kl(r, ((2, 3),) * 3, (F16,) * 3, F16, reduction=3, product=product)),
        ("kl mixed f16/f32", kl(r, ((2, 3),) * 3, (F16, F32, F16), F32, reduction=1, product=product)),
        ("mse f16 -> f32 out", mse(r, ((2, 3),) * 3, F16, F32, product=product)),
        ("l1 rank 8", l1(r, (R8, R8, R8), (F32,) * 3, F32, product=product)),
        ("l1 int32 self with float16", l1(r, ((2, 3),) * 3, (F16, I32, F16), F16, reduction=1, product=product)),
        ("l1 bool target with float32", l1(r, ((2, 3),) * 3, (F32, F32, BOOL), F32, reduction=2, product=product)),
        ("l1 mixed f16/f32", l1(r, ((2, 3),) * 3, (F16, F32, F16), F16, reduction=1, product=product)),
        ("l1 reduction 2 with 0-d gradient", l1(r, ((), (2, 3), (2, 3)), (F32,) * 3, F32, reduction=2,
                                                product=product)),
        ("smooth_l1 rank 8", smooth_l1(r, (R8, R8, R8), (F32,) * 3, F32, product=product)),
        ("smooth_l1 beta -0.0", smooth_l1(r, ((2, 3),) * 3, (F32,) * 3, F32, reduction=1, beta=-0.0, product=product)),
        ("smooth_l1 beta inf", smooth_l1(r, ((2, 3),) * 3, (F32,) * 3, F32, reduction=1, beta=float("inf"),
                                         product=product)),
        ("smooth_l1 mixed f16/f32", smooth_l1(r, ((2, 3),) * 3, (F16, F32, F16), F32, reduction=1, product=product)),
    ]


def check_status(backend, call: OpCall, expected: int, label: str = "") -> None:
    from suite import AclnnError
    try:
        backend.run(call)
    except AclnnError as exc:
        assert exc.status == expected, f"{label}: status {exc.status}, expected {expected}"
        return
    raise AssertionError(f"{label}: accepted, expected status {expected}")
