"""The torch backend against an independent float64 numpy implementation of the contracts'
formulas.

The goldens here are written from docs/operators/MseLossBackward.md and KlDivBackward.md alone and
share nothing with the backend. Budgets: a float32 out within a few float32 ulps of the golden
(KL sums judged against the sum of |terms|); a float16/bfloat16 out within 1 ulp of its own dtype.
"""
from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from suite.backends.torch_backend import TorchBackend  # noqa: E402
from suite.contract import OpCall  # noqa: E402
from suite.common import dtypes
from suite import ops  # noqa: E402

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
F32_ULPS = 4          # float32 budget, in float32 ulps (of the result or of the sum of |terms|)
HALF_ULPS = 1         # float16/bfloat16 budget with compute=widen, in the out dtype's ulps


# -- independent float64 goldens -------------------------------------------------------------

def mse_golden(grad, self_, target, reduction):
    """out = g*(x-y)*2 [/ numel(self) as passed], on the broadcast shape; returns (out, |out|)."""
    g, x, y = (np.asarray(a).astype(np.float64) for a in (grad, self_, target))
    with np.errstate(all="ignore"):
        out = g * (x - y) * 2.0
        if reduction == 1:
            out = out / x.size
    out = np.broadcast_to(out, np.broadcast_shapes(g.shape, x.shape, y.shape))
    return out, np.abs(out)


def kl_golden(grad, self_, target, reduction, log_target):
    """-(t or exp t)*g on B, scaled, summed back to self's shape; returns (out, sum of |terms|)."""
    g, x, t = (np.asarray(a).astype(np.float64) for a in (grad, self_, target))
    shape = np.broadcast_shapes(x.shape, t.shape)
    t, g = np.broadcast_to(t, shape), np.broadcast_to(g, shape)
    with np.errstate(all="ignore"):
        terms = -(np.exp(t) if log_target else t) * g
        if reduction == 1:
            terms = terms / int(np.prod(shape))
        elif reduction == 3:
            terms = terms / shape[0]
        lead = len(shape) - x.ndim
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(x.shape) if n == 1 and shape[lead + i] != 1)
        out = terms.sum(axis=axes).reshape(x.shape)
        mag = np.abs(terms).sum(axis=axes).reshape(x.shape)
    return out, mag


# -- judging ---------------------------------------------------------------------------------

def ulp(values, dtype):
    """Spacing of `dtype` at each float64 value (subnormal spacing below the normal range)."""
    info = ml_dtypes.finfo(dtype)
    with np.errstate(divide="ignore"):
        exp = np.floor(np.log2(np.abs(values)))
    exp = np.maximum(np.nan_to_num(exp, neginf=info.minexp), info.minexp)
    return np.ldexp(1.0, (exp - info.nmant).astype(np.int64))


def overflow_threshold(dtype):
    """Smallest magnitude that rounds to inf in `dtype` (max + half its last spacing)."""
    info = ml_dtypes.finfo(dtype)
    return float(info.max) + 2.0 ** (info.maxexp - 1 - info.nmant) / 2


def check(out, golden, mag, out_dtype, out_shape, *, f32_ulps=F32_ULPS, half_ulps=HALF_ULPS, result_dtype=None):
    """`result_dtype`: the dtype the operator's kernel rounds its result to before out's (its
    rounding path): a coarser one sets the precision, and its range the overflow."""
    assert out.dtype == out_dtype and out.shape == tuple(out_shape)
    prec = np.dtype(out_dtype if result_dtype is None else result_dtype)
    if ml_dtypes.finfo(prec).nmant >= ml_dtypes.finfo(out_dtype).nmant:
        prec = np.dtype(out_dtype)
    got = out.astype(np.float64)
    nan = np.isnan(golden)
    assert np.array_equal(np.isnan(got), nan), "NaN positions differ"
    over = ~nan & (np.abs(golden) >= min(overflow_threshold(out_dtype), overflow_threshold(prec)))
    assert np.array_equal(got[over], np.copysign(np.inf, golden[over])), "overflow to inf differs"
    fin = ~nan & ~over
    assert np.isfinite(got[fin]).all(), "unexpected inf"
    eps32 = 2.0 ** -23
    if prec == F32:
        budget = f32_ulps * np.maximum(ulp(golden[fin], F32), eps32 * mag[fin])
    else:
        budget = half_ulps * ulp(golden[fin], prec) + f32_ulps * eps32 * mag[fin]
    err = np.abs(got[fin] - golden[fin])
    bad = err > budget
    assert not bad.any(), (
        f"{bad.sum()} of {bad.size} beyond budget; worst err {err.max():.3g}, "
        f"golden {golden[fin][np.argmax(err - budget)]:.6g}")


# -- case building ---------------------------------------------------------------------------

def values(rng, shape, dtype, low=-5.0, high=5.0):
    return rng.uniform(low, high, shape).astype(dtype)


def run_and_check(backend, op, grad, self_, target, *, reduction, out_dtype, log_target=False, **kw):
    out_dtype = np.dtype(out_dtype)
    if op == "MseLossBackward":
        golden, mag = mse_golden(grad, self_, target, reduction)
        attrs = {"reduction": reduction}
    else:
        golden, mag = kl_golden(grad, self_, target, reduction, log_target)
        attrs = {"reduction": reduction, "logTarget": log_target}
    inputs = {"gradOutput": grad, "self": self_, "target": target}
    call = OpCall(op, inputs, attrs, golden.shape, out_dtype, "atlas-a2")
    out = backend.run(call)
    through = ops.get(op).result_dtype({k: dtypes.name_of(a.dtype) for k, a in inputs.items()},
                                       dtypes.name_of(out_dtype))
    check(out, golden, mag, out_dtype, golden.shape, result_dtype=dtypes.dtype_of(through), **kw)
    return out, golden


@pytest.fixture(scope="module")
def backend():
    return TorchBackend()


DTYPE_TRIPLES = [(F32, F32), (F16, F16), (BF16, BF16), (F16, F32), (F32, F16), (BF16, F32),
                 (F32, BF16)]


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("in_dtype,out_dtype", DTYPE_TRIPLES)
def test_mse_dtypes_and_reductions(backend, reduction, in_dtype, out_dtype):
    rng = np.random.default_rng(1)
    g, x, y = (values(rng, (6, 7), in_dtype) for _ in range(3))
    run_and_check(backend, "MseLossBackward", g, x, y, reduction=reduction, out_dtype=out_dtype)


MSE_SHAPES = {  # (grad, self, target): each input broadcast in turn
    "self-broadcast-by-target": ((3, 4), (3, 1), (3, 4)),
    "self-fewer-dims": ((2, 3, 4), (4,), (2, 3, 4)),
    "scalar-grad": ((), (2, 3), (2, 3)),
    "grad-widens-all": ((2, 1, 4), (3, 1), (4,)),
    "target-broadcast": ((5, 4), (5, 4), (1, 4)),
    "all-0d": ((), (), ()),
    "empty-self": ((), (0, 3), (0, 3)),
    "empty-by-broadcast": ((2, 0), (2, 1), (1, 0)),
}


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("name", list(MSE_SHAPES))
@pytest.mark.parametrize("dtype", [F32, F16])
def test_mse_broadcasting(backend, name, reduction, dtype):
    rng = np.random.default_rng(2)
    g, x, y = (values(rng, s, dtype) for s in MSE_SHAPES[name])
    out, golden = run_and_check(backend, "MseLossBackward", g, x, y, reduction=reduction, out_dtype=dtype)
    assert out.shape == np.broadcast_shapes(g.shape, x.shape, y.shape)


def test_mse_mean_divides_by_numel_of_self_not_b(backend):
    """Self (3,1) broadcast to (3,4): the mean coefficient is 2/3, not 2/12."""
    x = np.array([[1.0], [2.0], [3.0]], np.float32)
    y, g = np.zeros((3, 4), np.float32), np.ones((3, 4), np.float32)
    out, _ = run_and_check(backend, "MseLossBackward", g, x, y, reduction=1, out_dtype=F32)
    np.testing.assert_allclose(out[:, 0], np.array([2, 4, 6]) / 3, rtol=1e-6)


KL_SHAPES = {  # (grad, self, target)
    "same": ((4, 5), (4, 5), (4, 5)),
    "self-broadcast": ((3, 4, 5), (3, 1, 5), (3, 4, 5)),
    "self-fewer-dims": ((2, 3, 4), (4,), (2, 3, 4)),
    "self-size1-lead": ((2, 3, 4), (1, 3, 4), (2, 3, 4)),
    "target-broadcast": ((4, 5), (4, 5), (5,)),
    "scalar-grad": ((), (3, 4), (3, 4)),
    "grad-row": ((4,), (3, 1), (2, 3, 4)),
    "long-sum": ((64, 3), (1, 3), (64, 3)),
}


@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("reduction", [0, 1, 2, 3])
@pytest.mark.parametrize("name", list(KL_SHAPES))
def test_kl_broadcasting_and_reductions(backend, name, reduction, log_target):
    rng = np.random.default_rng(3)
    g, x, t = (values(rng, s, F32) for s in KL_SHAPES[name])
    out, _ = run_and_check(backend, "KlDivBackward", g, x, t, reduction=reduction, out_dtype=F32, log_target=log_target)
    assert out.shape == x.shape


KL_DTYPES = [  # (grad, self, target, out): same, out differing, and mixed as the contract allows
    (F16, F16, F16, F16), (BF16, BF16, BF16, BF16), (F16, F16, F16, F32), (F32, F32, F32, F16),
    (F16, F32, F16, F32), (BF16, F16, F32, F16), (F32, BF16, F16, BF16), (F16, BF16, BF16, F32),
]


@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("reduction", [0, 1, 3])
@pytest.mark.parametrize("dtypes", KL_DTYPES, ids=lambda d: "-".join(np.dtype(x).name for x in d))
def test_kl_dtypes(backend, dtypes, reduction, log_target):
    rng = np.random.default_rng(4)
    shapes = ((2, 3, 5), (2, 1, 5), (2, 3, 5))
    g, x, t = (values(rng, s, d) for s, d in zip(shapes, dtypes[:3]))
    run_and_check(backend, "KlDivBackward", g, x, t, reduction=reduction, out_dtype=dtypes[3], log_target=log_target)


def test_kl_batchmean_divides_by_first_dim_of_b(backend):
    """Self (4,) under target (2,3,4): batchmean divides by B[0]=2, not by self.size(0)=4."""
    x = np.zeros(4, np.float32)
    t, g = np.ones((2, 3, 4), np.float32), np.ones((2, 3, 4), np.float32)
    out, _ = run_and_check(backend, "KlDivBackward", g, x, t, reduction=3, out_dtype=F32)
    np.testing.assert_array_equal(out, np.full(4, -3.0, np.float32))


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_kl_0d_and_empty(backend, reduction):
    rng = np.random.default_rng(5)
    scalar = [values(rng, (), F32) for _ in range(3)]
    run_and_check(backend, "KlDivBackward", *scalar, reduction=reduction, out_dtype=F32, log_target=True)
    g, x, t = np.ones((), F16), np.zeros((0, 4), F16), np.zeros((0, 4), F16)
    out, _ = run_and_check(backend, "KlDivBackward", g, x, t, reduction=reduction, out_dtype=F32)
    assert out.shape == (0, 4)
    # self (2,1) against an empty target: B is empty, every out element is an empty sum (0).
    out, _ = run_and_check(backend, "KlDivBackward", g, values(rng, (2, 1), F16),
                           np.zeros((2, 0), F16), reduction=reduction, out_dtype=F16)
    np.testing.assert_array_equal(out, np.zeros((2, 1), F16))


def test_kl_targets_not_masked(backend):
    """Zero and negative targets give -target*grad (old PyTorch masked them to 0)."""
    t = np.array([-2.0, -0.5, 0.0, -0.0, 0.5, 3.0], np.float32)
    x, g = np.zeros(6, np.float32), np.full(6, 2.0, np.float32)
    out, _ = run_and_check(backend, "KlDivBackward", g, x, t, reduction=0, out_dtype=F32)
    np.testing.assert_array_equal(out, -2.0 * t)


def _views(rng, dtype):
    """Transposed, strided and negative-stride views of larger arrays."""
    base = values(rng, (8, 12), dtype)
    return {
        "transposed": values(rng, (4, 4), dtype).T,
        "strided": base[::2, 1::3],
        "negative": base[::-2, ::-3],
        "negative-1d": values(rng, (9,), dtype)[::-2],
    }


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_noncontiguous_views_and_inputs_unmodified(backend, dtype):
    rng = np.random.default_rng(6)
    v = _views(rng, dtype)
    for arr in v.values():
        arr.flags.writeable = False
    snapshot = {k: a.copy() for k, a in v.items()}
    # each op sees transposed / strided / negative-stride inputs in every position
    run_and_check(backend, "MseLossBackward", v["strided"], v["transposed"], v["negative"], reduction=1,
                  out_dtype=dtype)
    run_and_check(backend, "MseLossBackward", v["negative"], v["strided"], v["negative-1d"][:4], reduction=0,
                  out_dtype=F32)
    run_and_check(backend, "KlDivBackward", v["transposed"], v["negative"], v["strided"], reduction=3,
                  out_dtype=dtype, log_target=True)
    run_and_check(backend, "KlDivBackward", v["negative-1d"][:4], v["negative"][:1], v["transposed"],
                  reduction=1, out_dtype=F32, log_target=False)
    for k, a in v.items():
        assert a.tobytes() == snapshot[k].tobytes(), f"input {k} was modified"


def test_nonfinite_propagation(backend):
    special = np.array([np.nan, np.inf, -np.inf, 1.0, -0.0, 2.0], np.float32)
    ones = np.ones(6, np.float32)
    # MSE: NaN/inf in each of the three inputs, in float32 and in a float16 out
    for out_dtype in (F32, F16):
        run_and_check(backend, "MseLossBackward", special, ones, ones, reduction=0, out_dtype=out_dtype)
        run_and_check(backend, "MseLossBackward", ones, special, ones, reduction=2, out_dtype=out_dtype)
        run_and_check(backend, "MseLossBackward", ones, ones, special[::-1].copy(), reduction=1, out_dtype=out_dtype)
    # KL: in target and in grad, both logTarget values; NaN in a summed slice poisons the sum
    for log_target in (False, True):
        run_and_check(backend, "KlDivBackward", ones, ones, special, reduction=0, out_dtype=F32, log_target=log_target)
        run_and_check(backend, "KlDivBackward", special, ones, ones, reduction=1, out_dtype=F16, log_target=log_target)
        out, _ = run_and_check(backend, "KlDivBackward", special.reshape(2, 3), np.ones((1, 3), F32),
                               np.ones((2, 3), F32), reduction=2, out_dtype=F32, log_target=log_target)
        assert np.isnan(out[0, 0])


def test_half_overflow_and_large_values(backend):
    """float32 compute keeps what float16 could not hold: only the final rounding overflows."""
    x = np.array([300.0, -300.0, 200.0, 20.0, 60000.0], np.float16)
    y = np.array([-300.0, 300.0, -200.0, -20.0, -60000.0], np.float16)
    g = np.array([100.0, 100.0, 100.0, 100.0, 0.25], np.float16)
    out, _ = run_and_check(backend, "MseLossBackward", g, x, y, reduction=0, out_dtype=F16)
    # the last element's x-y = 120000 overflows float16, but not the float32 intermediate
    assert np.isinf(out[:3]).all() and np.isfinite(out[3:]).all()
    # mean brings the same products back into range
    run_and_check(backend, "MseLossBackward", g.reshape(5, 1), np.tile(x, (64, 1)).T,
                  y.reshape(5, 1), reduction=1, out_dtype=F16)
    # logTarget: exp(12) > 65504 overflows float16, yet each batchmean term exp(12)/16 is finite
    t = np.full((16, 2), 12.0, np.float16)
    out, _ = run_and_check(backend, "KlDivBackward", np.ones((16, 2), np.float16), np.zeros((16, 2), F16),
                           t, reduction=3, out_dtype=F16, log_target=True)
    assert np.isfinite(out).all()
    # bfloat16 magnitudes beyond float16, far below float32's limit
    rng = np.random.default_rng(7)
    big = [(values(rng, (5, 5), BF16, 1e5, 1e10) * np.where(rng.random((5, 5)) < .5, -1, 1)).astype(BF16)
           for _ in range(3)]
    run_and_check(backend, "MseLossBackward", *big, reduction=2, out_dtype=BF16)
    run_and_check(backend, "KlDivBackward", big[0], big[1], big[2], reduction=0, out_dtype=BF16)


def test_mean_over_large_n_small_results(backend):
    """mean over N=40000 drives float16 results into subnormals."""
    rng = np.random.default_rng(8)
    g, x, y = (values(rng, (200, 200), F16, -1, 1) for _ in range(3))
    run_and_check(backend, "MseLossBackward", g, x, y, reduction=1, out_dtype=F16)
    run_and_check(backend, "KlDivBackward", g, x, y, reduction=1, out_dtype=F16)


def test_deterministic(backend):
    rng = np.random.default_rng(9)
    g, x, t = values(rng, (64, 8), F16), values(rng, (1, 8), F16), values(rng, (64, 8), F16)
    call = OpCall("KlDivBackward", {"gradOutput": g, "self": x, "target": t},
                  {"reduction": 1, "logTarget": False}, (1, 8), BF16, "atlas-a3")
    first = backend.run(call)
    assert first.tobytes() == backend.run(call).tobytes()


# -- options and errors ----------------------------------------------------------------------

def _ulp_errors(out, golden):
    fin = np.isfinite(golden)
    return np.abs(out.astype(np.float64)[fin] - golden[fin]) / ulp(golden[fin], out.dtype)


def test_native_differs_from_widen_on_float16():
    """compute=native rounds every intermediate to float16 (including 2/N): measurably worse."""
    rng = np.random.default_rng(10)
    g, x, y = (values(rng, (30, 100), F16) for _ in range(3))
    call = OpCall("MseLossBackward", {"gradOutput": g, "self": x, "target": y}, {"reduction": 1},
                  (30, 100), F16, "atlas-a2")
    golden, _ = mse_golden(g, x, y, 1)
    widen = _ulp_errors(TorchBackend(compute="widen").run(call), golden)
    native = _ulp_errors(TorchBackend(compute="native").run(call), golden)
    assert widen.max() <= 0.5 + 1e-3          # float32 compute then one rounding: correctly rounded
    assert native.max() > 1.0 and (native > 1.0).mean() > 0.01, (native.max(), (native > 1).mean())


@pytest.mark.parametrize("kwargs,allowed", [({"device": "tpu"}, "cpu, cuda, npu"),
                                            ({"compute": "fast"}, "widen, native"),
                                            ({"device": "CPU "}, "cpu, cuda, npu")])
def test_invalid_options(kwargs, allowed):
    with pytest.raises(ValueError, match=allowed):
        TorchBackend(**kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_unavailable_is_clear():
    with pytest.raises(RuntimeError, match="CUDA build"):
        TorchBackend(device="cuda")


def test_npu_unavailable_is_clear():
    try:
        import torch_npu  # noqa: F401
        pytest.skip("torch_npu is installed")
    except ImportError:
        pass
    with pytest.raises(RuntimeError, match="torch_npu"):
        TorchBackend(device="npu")


def test_missing_torch_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)   # makes `import torch` fail
    with pytest.raises(ImportError, match=r"pip install aclnn-conformance\[torch\]"):
        TorchBackend()


def test_null_tensors_and_wrong_out_shape_error(backend):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="self"):
        backend.run(OpCall("MseLossBackward", {"gradOutput": x, "self": None, "target": x},
                           {"reduction": 0}, (2, 3), F32, "atlas-a2"))
    with pytest.raises(ValueError, match="out"):
        backend.run(OpCall("MseLossBackward", {"gradOutput": x, "self": x, "target": x},
                           {"reduction": 0}, None, None, "atlas-a2"))
    with pytest.raises(ValueError, match="out_shape"):
        backend.run(OpCall("KlDivBackward", {"gradOutput": x, "self": x, "target": x},
                           {"reduction": 0, "logTarget": False}, (3, 2), F32, "atlas-a2"))


def test_public_attributes(backend):
    assert backend.name == "torch" and "status" not in backend.capabilities
    assert set(backend.products) == {"atlas-training", "atlas-inference", "atlas-a2", "atlas-a3", "ascend-950",
                                     "atlas-200i-500-a2"}


@pytest.mark.parametrize("soc,product", [("Ascend910B3", "atlas-a2"), ("Ascend910_9391", "atlas-a3"),
                                         ("Ascend910A", "atlas-training"), ("Ascend910ProB", "atlas-training"),
                                         ("Ascend910B", "atlas-training"), ("Ascend310P3", "atlas-inference"),
                                         ("Ascend950PR_9599", "ascend-950"), ("Ascend310B1", "atlas-200i-500-a2")])
def test_npu_soc_names_map_to_one_product(soc, product):
    """The aclnn backend's table (suite/backends/soc.py): the bare Ascend910B is a first-generation 910."""
    from suite.backends.torch_backend import products_for_soc
    assert products_for_soc(soc) == (product,)


@pytest.mark.parametrize("soc", ["SomethingElse", "Ascend960PR", "Ascend910", "Ascend310B"])
def test_npu_soc_unknown_is_an_error_naming_it(soc):
    from suite.backends.torch_backend import products_for_soc
    with pytest.raises(RuntimeError, match=f"torch backend: SoC '{soc}'"):
        products_for_soc(soc)


def test_torch_backend_passes_the_pairwise_subset() -> None:
    """CI's share of the heavy test below: every case of the pairwise subset (every operator)."""
    from suite.backends.torch_backend import TorchBackend
    from tests.mutants import harness

    cases = harness.subset()
    outcome = harness.run_backend(TorchBackend(), cases)
    assert outcome.ran > 1000 and {c.op for c in cases} == set(__import__("suite").ops.OPERATORS)
    assert not outcome.failures, dict(list(outcome.failures.items())[:5])


@pytest.mark.heavy
def test_torch_backend_passes_the_whole_suite() -> None:
    """Issue 3's bar: with compute=widen on the CPU, every case the torch backend runs passes
    (numbers and determinism; rejection cases are skipped, as it does not claim "status")."""
    from suite.backends.torch_backend import TorchBackend
    from tests.mutants import harness

    cases = harness.all_cases()
    outcome = harness.run_backend(TorchBackend(), cases)
    rejections = sum(1 for c in cases if "rejection" in harness.checks_of(c))
    assert outcome.ran > 8000 and outcome.skipped == rejections
    assert not outcome.failures, dict(list(outcome.failures.items())[:5])


def test_result_rounded_through_the_operators_result_dtype(backend):
    """An operator whose kernel rounds its result to another dtype before out's (result_dtype: the
    promoted bfloat16 of all-bfloat16 inputs) gets the same two roundings from this backend: a
    float32 out holds bfloat16 values. (Operators whose result_dtype is out's are unaffected.)"""
    from suite import ops
    from suite.ops.base import Signature
    rng = np.random.default_rng(5)
    checked = []
    for op in ops.OPERATORS.values():
        if op.result_dtype({n: "bfloat16" for n in op.inputs}, "float32") != "bfloat16":
            continue
        # positive values: a negative KL target is NaN by contract, and NaN would hide the rounding
        inputs = {n: rng.uniform(0.5, 5, 257).astype(np.float32).astype(BF16) for n in op.inputs}
        attrs = {"reduction": 1,  # mean: a division, so the rounding shows
                 **{a.name: a.default for a in op.attributes}}
        out = op.out_shape({n: (257,) for n in op.inputs}, attrs)      # () for a forward loss's mean
        sig = Signature({n: (257,) for n in op.inputs}, {n: "bfloat16" for n in op.inputs}, out, "float32",
                        attrs, "atlas-a2")
        if out is None or op.check(sig)[0] != 0:     # not a valid call of this operator (class indices...)
            continue
        got = backend.run(OpCall(op.name, inputs, attrs, out, F32, "atlas-a2"))
        assert got.dtype == F32
        assert np.array_equal(got, got.astype(BF16).astype(F32), equal_nan=True), op.name
        once = TorchBackend().run(OpCall(op.name, {n: a.astype(F32) for n, a in inputs.items()}, attrs,
                                         out, F32, "atlas-a2"))
        assert not np.array_equal(got, once, equal_nan=True), f"{op.name}: nothing was rounded"
        checked.append(op.name)
    assert checked, "no operator declares a result dtype other than out's"


def test_a_one_element_out_of_another_accepted_shape(backend, monkeypatch):
    """A forward loss's mean into an out of [1] or [1, 1] (a contract that takes any one-element out,
    KlDiv's): the mapping gives the operator's canonical () and the backend reshapes it to the
    call's out, as the reference does (Operator.canonical_out); an out of another element count is
    still an error, never reshaped."""
    base = ops.get("MseLoss")

    class AnyOneElementOut(type(base)):
        name = "AnyOneElementOutTest"

    op = AnyOneElementOut()
    monkeypatch.setitem(ops.OPERATORS, op.name, op)
    rng = np.random.default_rng(3)
    x, t = (rng.uniform(-5, 5, (4, 3)).astype(F32) for _ in range(2))
    want = np.mean((x.astype(np.float64) - t) ** 2)
    for out in [(), (1,), (1, 1)]:
        got = backend.run(OpCall(op.name, {"self": x, "target": t}, {"reduction": 1}, out, F32, "atlas-a2"))
        assert got.shape == out and float(got.reshape(())) == pytest.approx(want, rel=1e-6), out
    with pytest.raises(ValueError, match="out_shape"):
        backend.run(OpCall(op.name, {"self": x, "target": t}, {"reduction": 1}, (2,), F32, "atlas-a2"))


# -- time_launches (docs/timing.md) -------------------------------------------------------------
def test_time_launches_uses_one_event_pair_per_launch_and_one_synchronize(monkeypatch) -> None:
    """The event protocol, on this CPU build with torch.cuda's events, synchronize and device
    properties stood in for: each launch between its own pair of events, the flush before the
    launch's start event (outside the timed region), one synchronize before and one after the
    loop (none inside it); the seconds are the events' elapsed_time in ms / 1000. On a device the
    same code runs with the real events (not run here: no GPU on the project's machines)."""
    import suite.backends.torch_backend as tb
    log = []

    class Event:
        made = 0

        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing
            Event.made += 1
            self.n = Event.made

        def record(self) -> None:
            log.append(("record", self.n))

        def elapsed_time(self, end: "Event") -> float:
            return float(end.n - self.n)                # ms: launches apart, so each pair says its own

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: log.append(("synchronize",)))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: type("P", (), {"L2_cache_size": 1024})())
    monkeypatch.setattr(tb, "FLUSH_FLOOR", 4096)
    b = TorchBackend()
    b.device_name = "cuda"                              # the tensors stay on the CPU
    launch = b._launch
    monkeypatch.setattr(b, "_launch", lambda *a: (log.append(("launch",)), launch(*a))[1])
    fill = torch.Tensor.fill_
    monkeypatch.setattr(torch.Tensor, "fill_", lambda self, v: (log.append(("flush", self.numel())), fill(self, v))[1])
    x = np.ones(6, dtype=np.float32)
    call = OpCall("MseLossBackward", {"gradOutput": x, "self": x, "target": x}, {"reduction": 0}, (6,),
                  np.dtype(np.float32), "atlas-a2")
    t = b.time_launches(call, 3, flush=True)
    assert (t.clock, t.source) == ("device", "torch.cuda.Event")
    # Events 1..3 are the starts, 4..6 the ends: launch i is timed by (i, i + 3), 3 ms apart.
    assert t.seconds == (0.003, 0.003, 0.003)
    per_launch = [("flush", 4096), ("record", 1), ("launch",), ("record", 4),
                  ("flush", 4096), ("record", 2), ("launch",), ("record", 5),
                  ("flush", 4096), ("record", 3), ("launch",), ("record", 6)]
    assert log == [("synchronize",)] + per_launch + [("synchronize",)]
    log.clear()
    b.time_launches(call, 1, flush=False)
    assert [e[0] for e in log] == ["synchronize", "record", "launch", "record", "synchronize"]


def test_a_one_element_second_output_of_another_accepted_shape(backend):
    """NLLLoss's totalWeightOut may be any one-element shape ([1], [1, 1]); its mapping gives (),
    reshaped to the call's, as out is; a second output of more elements is still an error."""
    rng = np.random.default_rng(5)
    x, w = rng.uniform(-5, 5, (6, 4)).astype(F32), rng.uniform(0.5, 2, 4).astype(F32)
    t = np.array([0, 3, 1, -100, 2, 3], dtype=np.int64)
    keep = t != -100
    want = float(w[t[keep]].astype(np.float64).sum())
    for shape in [(), (1,), (1, 1)]:
        call = OpCall("NLLLoss", {"self": x, "target": t, "weight": w}, {"reduction": 2, "ignoreIndex": -100},
                      (1,), F32, "atlas-a2", outputs={"out": ((1,), F32), "totalWeightOut": (shape, F32)})
        got = backend.run(call)
        assert got["totalWeightOut"].shape == shape and float(got["totalWeightOut"].reshape(())) == pytest.approx(want)
    bad = OpCall("NLLLoss", {"self": x, "target": t, "weight": w}, {"reduction": 2, "ignoreIndex": -100},
                 (1,), F32, "atlas-a2", outputs={"out": ((1,), F32), "totalWeightOut": ((2,), F32)})
    with pytest.raises(ValueError, match="totalWeightOut shape"):
        backend.run(bad)
