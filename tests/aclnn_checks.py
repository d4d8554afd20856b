"""Checks shared by the aclnn-backend tests and the fault driver: an independent float64 reference
of the operator pages' formulas, tolerance-aware comparison, and the batteries of calls.

The reference is written from docs/operators/MseLossBackward.md and docs/operators/KlDivBackward.md
("Result" sections) in float64 numpy, not from the emulator's C code.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import ml_dtypes
import numpy as np

from suite import OpCall

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
F64, I32 = np.dtype(np.float64), np.dtype(np.int32)
PRECISION = {"float32": (24, -126), "float16": (11, -14), "bfloat16": (8, -126)}  # (bits, emin)
MAX_FINITE = {"float32": float(np.finfo(np.float32).max), "float16": 65504.0,
              "bfloat16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)}


# ---- reference ---------------------------------------------------------------------------------
def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def sum_to(x: np.ndarray, shape: Tuple[int, ...]) -> np.ndarray:
    """Sum x over the dimensions broadcasting added to `shape` (autograd's reduction)."""
    lead = x.ndim - len(shape)
    x = x.sum(axis=tuple(range(lead))) if lead else x
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and x.shape[i] != 1)
    return x.sum(axis=axes, keepdims=True).reshape(shape) if axes else x.reshape(shape)


def reference(call: OpCall) -> Tuple[np.ndarray, np.ndarray, int]:
    """(expected, sum of |terms| per element, terms per element), all float64."""
    g, s, t = (f64(call.inputs[k]) for k in ("gradOutput", "self", "target"))
    red = call.attrs["reduction"]
    if call.op == "MseLossBackward":
        r = g * (s - t) * 2.0
        if red == 1:
            r = r / s.size  # numel(self) as passed, before broadcasting
        return r, np.abs(r), 1
    B = np.broadcast_shapes(s.shape, t.shape)
    e = np.exp(t) if call.attrs["logTarget"] else t
    terms = -np.broadcast_to(e, B) * np.broadcast_to(g, B)
    if red == 1:
        terms = terms / max(int(np.prod(B)), 1)
    elif red == 3:
        terms = terms / B[0]
    n = max(int(np.prod(B)) // max(s.size, 1), 1)
    return sum_to(terms, s.shape), sum_to(np.abs(terms), s.shape), n


def ulp(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    bits, emin = PRECISION[np.dtype(dtype).name]
    e = np.floor(np.log2(np.maximum(np.abs(x), 2.0 ** (emin - bits))))
    return 2.0 ** (np.maximum(e, emin) - bits + 1)


def assert_close(out: np.ndarray, call: OpCall, label: str = "") -> None:
    """out within 1 ulp (float16/bfloat16) or a few ulps (float32) of the float64 reference, plus
    a float32 budget proportional to the summed magnitudes where terms are summed."""
    exp, mag, n = reference(call)
    dtype = np.dtype(call.out_dtype)
    where = f"{call.op} {label}"
    assert isinstance(out, np.ndarray), f"{where}: got {type(out)}"
    assert out.shape == tuple(call.out_shape), f"{where}: shape {out.shape} != {call.out_shape}"
    assert out.dtype == dtype, f"{where}: dtype {out.dtype} != {dtype}"
    got = f64(out)
    nan_exp = np.isnan(exp)
    assert np.array_equal(np.isnan(got), nan_exp), f"{where}: NaN positions differ (unwritten or spurious)"
    top = MAX_FINITE[dtype.name]
    over = np.abs(exp) >= top + ulp(np.float64(top), dtype) / 2
    assert np.array_equal(got[over], np.sign(exp[over]) * np.inf), f"{where}: overflow not to inf"
    ok = ~nan_exp & ~over
    k = 1.0 if dtype.name != "float32" else 2.0
    tol = k * ulp(exp[ok], dtype) + (n + 3) * 2.0 ** -24 * mag[ok]
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


def mse(rng, shapes, dtype, out_dtype=None, reduction=1, layouts="ccc", product="atlas-a2") -> OpCall:
    g, s, t = (view(values(rng, sh, dtype), lay, rng) for sh, lay in zip(shapes, layouts))
    B = np.broadcast_shapes(*shapes)
    return OpCall("MseLossBackward", {"gradOutput": g, "self": s, "target": t}, {"reduction": reduction},
                  tuple(B), np.dtype(out_dtype or dtype), product)


def kl(rng, shapes, dtypes, out_dtype, reduction=1, log_target=False, layouts="ccc", product="atlas-a2") -> OpCall:
    lims = [(-5, 5), (-5, 5), (-3, 3) if log_target else (-5, 5)]
    g, s, t = (view(values(rng, sh, dt, *lim), lay, rng)
               for sh, dt, lim, lay in zip(shapes, dtypes, lims, layouts))
    return OpCall("KlDivBackward", {"gradOutput": g, "self": s, "target": t},
                  {"reduction": reduction, "logTarget": log_target}, tuple(shapes[1]), np.dtype(out_dtype), product)


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
            calls.append((f"kl same {dt.name} r{red} lt{int(lt)}", kl(r, (S, S, S), (dt,) * 3, dt, red, lt)))
    calls += [
        ("kl mixed dtypes", kl(r, (S, S, S), (F16, F32, BF16), F16, 1, False)),
        ("kl mixed dtypes lt", kl(r, (S, S, S), (BF16, F16, F32), F32, 2, True, "tco")),
        ("kl self broadcast dim0", kl(r, ((3, 4), (1, 4), (3, 4)), (F32,) * 3, F32, 0, False)),
        ("kl self leading dims batchmean", kl(r, ((3, 1), (4,), (2, 3, 4)), (F32,) * 3, F32, 3, False, "ccs")),
        ("kl self both ways lt", kl(r, ((), (2, 1, 3), (2, 5, 3)), (F16,) * 3, BF16, 1, True)),
        ("kl sum 50 terms", kl(r, ((50, 64), (1, 64), (50, 64)), (F16, F16, F16), F32, 0, False, "tco")),
        ("kl views", kl(r, ((6, 7), (6, 7), (6, 7)), (F32,) * 3, F32, 1, False, "sot")),
        ("kl 0-d", kl(r, ((), (), ()), (F32,) * 3, F32, 1, True)),
        ("kl 0-d self, 1-d target", kl(r, ((3,), (), (3,)), (F32,) * 3, F16, 1, False)),
        ("kl empty self", kl(r, ((4,), (0, 4), (0, 4)), (F32,) * 3, F32, 1, False)),
        ("kl rank 8", kl(r, ((1, 2, 1, 2, 1, 2, 1, 2),) * 3, (F32,) * 3, F32, 2, False, "tst")),
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
    if product in ("atlas-training", "atlas-inference"):
        cases += [
            ("mse bf16 on this product", mse(r, (S, S, S), BF16, product=product), 161002),
            ("mse bf16 out on this product", mse(r, (S, S, S), F32, BF16, product=product), 161002),
            ("kl bf16 target on this product", kl(r, (S, S, S), (F32, F32, BF16), F32, product=product), 161002),
        ]
    return cases


def accepted_controls(product: str = "atlas-a2") -> List[Tuple[str, OpCall]]:
    """Valid neighbours of the rejections (so a backend rejecting everything fails too)."""
    r = np.random.default_rng(8)
    R8 = (1, 2, 1, 1, 1, 1, 1, 2)
    return [
        ("mse rank 8", mse(r, (R8, R8, R8), F32, product=product)),
        ("kl rank 8", kl(r, (R8, R8, R8), (F32,) * 3, F32, product=product)),
        ("kl reduction 3", kl(r, ((2, 3),) * 3, (F16,) * 3, F16, 3, product=product)),
        ("kl mixed f16/f32", kl(r, ((2, 3),) * 3, (F16, F32, F16), F32, 1, product=product)),
        ("mse f16 -> f32 out", mse(r, ((2, 3),) * 3, F16, F32, product=product)),
    ]


def check_status(backend, call: OpCall, expected: int, label: str = "") -> None:
    from suite import AclnnError
    try:
        backend.run(call)
    except AclnnError as exc:
        assert exc.status == expected, f"{label}: status {exc.status}, expected {expected}"
        return
    raise AssertionError(f"{label}: accepted, expected status {expected}")
