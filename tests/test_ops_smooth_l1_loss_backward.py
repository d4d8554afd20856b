"""SmoothL1LossBackward's own declarations: beta as a C float, the rejection rows in the code's
order, the golden at the band's edges, the band lattice that reaches them in every dtype, the
tiling's pinned numbers, and mutants and variants that differ (or agree) where they say."""
from __future__ import annotations

import dataclasses

import math

import numpy as np
import pytest

from suite.common import dtypes
from suite.cases import hardware
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR, OpCall
from suite.ops.base import Signature
from suite.ops.loss import promote
from suite.ops.smooth_l1_loss_backward import EPS, OP, _neighbour, band_lattice, beta32
from tests.mutants import registry, smooth_l1_loss_backward as kit

F32 = np.dtype(np.float32)
NAMES = ("gradOut", "self", "target")


def sig(shapes=((2, 3),) * 3, dts=("float32",) * 3, *, out=(2, 3), out_dtype="float32", reduction=1,
        beta=1.0, product="atlas-a2") -> Signature:
    return Signature(dict(zip(NAMES, shapes)), dict(zip(NAMES, dts)), out, out_dtype,
                     {"reduction": reduction, "beta": beta}, product)


def test_beta_is_the_c_float() -> None:
    assert beta32({"beta": 0.1}) == 0.10000000149011612
    assert math.copysign(1.0, beta32({"beta": -1e-46})) == -1.0 and beta32({"beta": -1e-46}) == 0.0
    assert beta32({"beta": 1e300}) == math.inf
    assert EPS == float(np.float32(1e-6)) != 1e-6


@pytest.mark.parametrize("beta, status", [(-1.0, INVALID), (-1e-30, INVALID), (-math.inf, INVALID),
                                          (math.nan, INVALID), (-0.0, 0), (-1e-46, 0), (0.0, 0),
                                          (math.inf, 0), (1e30, 0)])
def test_beta_must_be_at_least_zero(beta, status) -> None:
    assert OP.check(sig(beta=beta))[0] == status


def test_rejections_come_in_the_codes_order() -> None:
    """Each call breaks every row from one on; the status and reason are the first row's."""
    worst = dict(shapes=((2, 3), (2, 4), (1,) * 9), dts=("bfloat16",) * 3, out=(5,), reduction=3,
                 beta=math.nan, product="atlas-training")
    rows = [("gradOut is NULL", dict(shapes=(None, (2, 4), (1,) * 9))),
            ("gradOut dtype bfloat16", {}),
            ("target has 9 dimensions", dict(dts=("float32",) * 3)),
            ("reduction 3", dict(dts=("float32",) * 3, shapes=((2, 3), (2, 4), (2, 3)))),
            ("beta nan", dict(dts=("float32",) * 3, shapes=((2, 3), (2, 4), (2, 3)), reduction=0)),
            ("gradOut (2, 3) and self (2, 4)", dict(dts=("float32",) * 3, shapes=((2, 3), (2, 4), (2, 3)),
                                                     reduction=0, beta=0.0)),
            ("and target (3, 3)", dict(dts=("float32",) * 3, shapes=((2, 3), (1, 3), (3, 3)), reduction=0,
                                       beta=0.0)),
            ("out shape (5,)", dict(dts=("float32",) * 3, shapes=((2, 3), (1, 3), (2, 1)), reduction=0,
                                    beta=0.0))]
    for want, change in rows:
        status, why = OP.check(sig(**{**worst, **change}))
        assert status == (NULLPTR if "NULL" in want else INVALID) and want in why, (want, why)
    assert OP.check(sig(**{**worst, "dts": ("float32",) * 3, "shapes": ((2, 3), (1, 3), (2, 1)),
                           "reduction": 0, "beta": 0.0, "out": (2, 3)})) == (0, "")


def test_every_input_dtype_and_outs_is_checked_on_the_product() -> None:
    for i in range(4):
        dts = ["float32"] * 4
        dts[i] = "bfloat16"
        status, why = OP.check(sig(dts=tuple(dts[:3]), out_dtype=dts[3], product="atlas-inference"))
        assert status == INVALID and (NAMES + ("out",))[i] in why
        assert OP.check(sig(dts=tuple(dts[:3]), out_dtype=dts[3], product="atlas-a3"))[0] == 0


def test_promotion_and_result_dtype() -> None:
    assert promote(["float16"] * 3) == "float16" and promote(["bfloat16", "float16", "bfloat16"]) == "float32"
    assert OP.result_dtype({"gradOut": "bfloat16", "self": "bfloat16", "target": "bfloat16"}, "float16") == "bfloat16"


def _golden(g, s, t, beta, reduction=0):
    x = {"gradOut": np.asarray(g, F32), "self": np.asarray(s, F32), "target": np.asarray(t, F32)}
    return OP.golden(x, {"reduction": reduction, "beta": beta}).out


def test_golden_at_the_band_edges_and_specials() -> None:
    s = [1.5, 0.5, 1.25, -0.5, 0.0, np.nan, np.inf, 3.0]
    t = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, np.inf]
    g = _golden(1.0, s, t, 0.5)
    assert g[0] == 1.0 and g[1] == -1.0 and g[3] == -1.0          # |d| == beta: the +-1 branch
    assert g[2] == 0.25 / (0.5 + EPS) and g[4] == 0.0              # inside: d / (beta + 1e-6)
    assert np.isnan(g[5]) and g[6] == 1.0 and g[7] == -1.0         # NaN d with beta > 0 is NaN
    z = _golden([1.0, 1.0, np.inf, 2.0], [0.0, -0.0, 0.0, 1e-45], [0.0, 0.0, 0.0, 0.0], 0.0)
    assert z[0] == 0.0 and z[1] == 0.0 and np.isnan(z[2]) and z[3] == 2.0   # beta 0: sign, 0 at 0
    inf = _golden(2.0, [1e30, np.inf], [0.0, 0.0], math.inf)
    assert inf[0] == 0.0 and inf[1] == 2.0
    mean = _golden(np.ones((2, 3)), [3.0, 3.0, 3.0], np.zeros((2, 3)), 1.0, reduction=1)
    assert np.all(mean == 1.0 / 3.0)                               # numel(self), not numel(B)


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("beta", [0.0, 1.0, 0.5, 0.1, 1e-3, 1e-5, 1e-6])
def test_band_lattice_reaches_beta_and_both_sides(dt, beta) -> None:
    beta = float(np.float32(beta))
    s, t = band_lattice(beta, dt)
    d = dtypes.dtype_of(dt)
    for v in (*s, *t):
        assert float(dtypes.round_to(np.float64(v), d)) == v, v        # exact in the dtype
    diff = np.subtract.outer(np.asarray(s, F32), np.asarray(t, F32))  # what the kernel computes
    a = np.abs(diff).astype(np.float64)
    if beta == 0.0:
        assert (a == 0).any() and (a > 0).any() and a[a > 0].min() == dtypes.finfo(d).smallest_subnormal
        return
    inside, outside = a[a < beta].max(), a[a > beta].min()
    if float(dtypes.round_to(np.float64(beta), d)) == beta:       # |d| == beta, and an ulp each side
        assert (a == beta).any()                                  # at most an ulp away, each side
        assert inside >= _neighbour(beta, d, -1) and outside <= _neighbour(beta, d, 1)
    else:                                                         # the dtype's values around beta
        lo = float(dtypes.round_to(np.float64(beta), d))
        lo = lo if lo < beta else _neighbour(lo, d, -1)
        assert inside >= lo and outside <= _neighbour(lo, d, 1)


def test_tiling_on_a2() -> None:
    """The A2 Ascend C port's arithmetic on A2's 196352-byte UB (pinned)."""
    hw = hardware.load_hardware()["atlas-a2"]
    assert OP.tiling(hw, dict.fromkeys(NAMES, "float32")) == {"tile": 2432, "single_core": 2448}
    assert OP.tiling(hw, dict.fromkeys(NAMES, "bfloat16")) == {"tile": 4032, "single_core": 4080}
    assert OP.tiling(hw, {"gradOut": "float16", "self": "bfloat16", "target": "float16"})["tile"] == 2432


def _call(g, s, t, beta, reduction=0, out=F32):
    x = {"gradOut": np.asarray(g, F32), "self": np.asarray(s, F32), "target": np.asarray(t, F32)}
    shape = np.broadcast_shapes(*(a.shape for a in x.values()))
    return OpCall(OP.name, x, {"reduction": reduction, "beta": beta}, shape, out, "atlas-a2")


def _half_self(call: OpCall) -> OpCall:
    """The call with a float16 self (P stays float32: the other inputs are float32)."""
    return dataclasses.replace(call, inputs={**call.inputs, "self": call.inputs["self"].astype(np.float16)})


def test_each_mutant_kernel_differs_where_its_defect_is_and_variants_agree() -> None:
    """One small call per numeric mutant where its defect shows, and one where it cannot."""
    calls = {  # name: (a call it changes, a call it does not)
        "SmoothL1BandInclusive": (_call(1.0, [1.5], [1.0], 0.5), _call(1.0, [1.25], [1.0], 0.5)),
        "SmoothL1EpsilonDropped": (_call(1.0, [5e-7], [0.0], 1e-6), _call(1.0, [5.0], [0.0], 1e-6)),
        "SmoothL1BetaIgnored": (_call(1.0, [0.5], [0.0], 0.1), _call(1.0, [5.0], [0.0], 0.1)),
        "SmoothL1MeanDivisorNumelB": (_call(np.ones((2, 3)), [1.0, 2.0, 3.0], np.zeros((2, 3)), 1.0, 1),
                                      _call(np.ones(3), [1.0, 2.0, 3.0], np.zeros(3), 1.0, 1)),
        "SmoothL1BetaZeroDividesByZero": (_call(1.0, [2.0], [0.0], 0.0), _call(1.0, [2.0], [0.0], 1.0)),
        "SmoothL1ZeroSelectChain": (_call(1.0, [0.0], [0.0], 0.0), _call(1.0, [0.5], [0.0], 0.0)),
        # the loss family's (tests/mutants/family.py)
        "SmoothL1SumAsMean": (_call(1.0, [1.0, 2.0, 3.0], [0.0], 1.0, 2), _call(1.0, [2.0], [0.0], 1.0, 2)),
        "SmoothL1MeanAsSum": (_call(1.0, [1.0, 2.0, 3.0], [0.0], 1.0, 1), _call(1.0, [2.0], [0.0], 1.0, 1)),
        "SmoothL1BroadcastDropped": (_call(1.0, np.zeros((2, 3)), [[1.0], [3.0]], 10.0),
                                     _call(1.0, np.zeros((2, 3)), [1.0, 2.0, 3.0], 10.0)),
        "SmoothL1ResultInPrimaryDtype": (_half_self(_call(1.0, [0.25], [0.0], 0.7)), _call(1.0, [0.25], [0.0], 0.7)),
    }
    mutants = {m.name: m for m in registry.declared(OP)[0]}
    assert set(calls) | {"SmoothL1NanBetaAccepted"} == set(mutants) and len(mutants) >= 4
    with np.errstate(all="ignore"):
        for name, (bad, fine) in calls.items():
            k = mutants[name].kernel
            assert not np.array_equal(k.reference(bad), OP.reference(bad), equal_nan=True), name
            assert np.array_equal(k.reference(fine), OP.reference(fine), equal_nan=True), name
            assert mutants[name].fails == {"numbers"}
        nan = mutants["SmoothL1NanBetaAccepted"]
        assert nan.fails == {"rejection"} and nan.kernel.check(sig(beta=math.nan))[0] == 0
        assert nan.kernel.check(sig(beta=-1.0))[0] == INVALID
        for v in kit.VARIANTS:
            for bad, fine in calls.values():
                for c in (bad, fine):
                    want, got = OP.reference(c), v.kernel.reference(c)
                    assert np.allclose(got, want, rtol=4e-7, atol=0, equal_nan=True), (v.name, got, want)


def test_torch_mapping_follows_the_contract_where_aten_does_not() -> None:
    pytest.importorskip("torch")
    from suite.backends.torch_backend import TorchBackend
    tb = TorchBackend()
    c = _call([1.0, 1.0, 1.0, 2.0], [0.0, 0.25, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0], 0.5)
    assert np.array_equal(tb.run(c), OP.reference(c))              # 0.25 / (0.5 + 1e-6), not 0.5
    z = _call([1.0, -3.0], [0.0, 0.0], [0.0, -0.0], 0.0)
    assert np.array_equal(tb.run(z), [0.0, 0.0])                   # aten gives -1 and 3 at d = 0
