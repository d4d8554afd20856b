"""aclnnL1LossBackward's module against docs/operators/L1LossBackward.md (its phase-1 rows are its
`examples`, run by tests/test_ops_checks.py): the promoted dtype, the golden's sign by comparison and numel(B) divisor, the
kernel's coefficient, the value sets that carry this operator's hazards, and the planted defects'
where predicates."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from suite.cases import load as cases_load
from suite.cases import model as cases_model
from suite.common import dtypes
from suite import ops
from suite.contract import OpCall
from suite.ops.base import Signature
from suite.ops.loss import promote
from suite.cases.inputs import draw_inputs
from tests.mutants import l1_loss_backward as kit, registry

ROOT = Path(__file__).resolve().parent.parent
L1 = ops.get("L1LossBackward")
NULLPTR, INVALID = 161001, 161002
R9 = (1, 1, 1, 1, 1, 1, 1, 2, 2)


def sig(**kw) -> Signature:
    return L1.sig(**kw)


def test_promotion_and_result_dtype():
    assert promote(["float16", "float16", "float16"]) == "float16"
    assert promote(["bfloat16", "float16", "bfloat16"]) == "float32"
    assert promote(["float16", "float32", "float16"]) == "float32"
    assert promote(["float32", "float64"]) == "float64"
    assert promote(["int32", "float32", "float32"]) == "float32"
    dts = {"gradOutput": "bfloat16", "self": "bfloat16", "target": "bfloat16"}
    assert L1.result_dtype(dts, "float16") == "bfloat16"
    assert L1.result_dtype({**dts, "self": "float16"}, "float16") == "float32"


def test_bfloat16_passing_phase_1_on_910_is_outside_the_contract():
    mixed = sig(gdt="bfloat16", product="atlas-training")
    assert L1.check(mixed) == (0, "") and L1.outside_contract(mixed)
    out_bf16 = sig(odt="bfloat16", product="atlas-inference")
    assert L1.check(out_bf16) == (0, "") and L1.outside_contract(out_bf16)
    assert L1.outside_contract(sig(dt="bfloat16", product="atlas-training")) is None   # rejected: inside
    assert L1.outside_contract(sig(gdt="bfloat16", product="atlas-a2")) is None


def test_golden_sign_by_comparison_and_mean_over_numel_b():
    inf = np.inf
    x = {"gradOutput": np.array([2.0, 2.0, 2.0, 2.0, inf, 3.0]),
         "self": np.array([1.0, 1.0, 0.0, inf, 5.0, 2.0 ** -149]),
         "target": np.array([0.5, 1.5, -0.0, inf, 5.0, 0.0])}
    g = L1.golden(x, {"reduction": 0}).out
    assert g[:4].tolist() == [2.0, -2.0, 0.0, 0.0]          # +-1; +0 against -0 and inf against inf tie
    assert np.isnan(g[4])                                     # 0 * inf
    assert g[5] == 3.0                                        # a subnormal difference keeps its sign
    shaped = {"gradOutput": np.ones(3), "self": np.ones(3), "target": np.full((2, 3), 0.5)}
    assert np.all(L1.golden(shaped, {"reduction": 1}).out == 1.0 / 6)       # numel(B), not numel(self)
    assert np.all(L1.golden(shaped, {"reduction": 2}).out == 1.0)


def test_reference_coefficient_is_successive_float32_division():
    shapes = {"gradOutput": (3, 7, 11), "self": (3, 7, 11), "target": (3, 7, 11)}
    want = np.float32(np.float32(np.float32(np.float32(1.0) / np.float32(3)) / np.float32(7)) / np.float32(11))
    assert L1._cof({"reduction": 1}, shapes) == want
    assert L1._cof({"reduction": 2}, shapes) == np.float32(1.0)
    g = np.full((3, 7, 11), 2.0, dtype=np.float16)
    call = OpCall("L1LossBackward", {"gradOutput": g, "self": g, "target": g - np.float16(1)},
                  {"reduction": 1}, (3, 7, 11), np.dtype(np.float32), "atlas-a2")
    r = L1.reference(call)
    assert r.dtype == np.float32 and np.all(r == np.float32(np.float16(np.float32(2.0) * want)))  # rounded to P


def _case(values, dtype="float16", shapes=("16x16", "16x16", "16x16")):
    text = (f"op: L1LossBackward\ncases:\n  - {{product: atlas-a2, dtypes: {dtype}, reduction: none, "
            f"shapes: [{', '.join(shapes)}], values: {values}}}\n")
    return text


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_hazard_value_sets_carry_their_hazards(tmp_path, dtype):
    """ties: exact ties (+0/-0 and equal infinities among them) and both signs; one_ulp: pairs one
    ulp apart of either sign and a subnormal difference; tiny: subnormal differences in float32."""
    found = {}
    for values in ("ties", "one_ulp", "tiny", "specials"):
        f = tmp_path / f"{values}.yaml"
        f.write_text(_case(values, dtype))
        (case,) = cases_load.load_file(f).cases
        x = draw_inputs(case)
        found[values] = (x["self"], x["target"])
    a, t = (v.astype(np.float64) for v in found["ties"])
    assert np.sum(a == t) >= 16 and np.any((a == 0) & (t == 0) & (np.signbit(a) != np.signbit(t)))
    assert np.any(np.isinf(a) & (a == t)) and np.any(a > t) and np.any(a < t)
    ra, rt = found["one_ulp"]
    ba, bt = (dtypes.to_bits(v).astype(np.int64) for v in (ra, rt))
    a, t = ra.astype(np.float64), rt.astype(np.float64)
    same_sign = (np.signbit(a) == np.signbit(t)) & (a != 0) & (t != 0)
    ulp_apart = (same_sign & (np.abs(ba - bt) == 1)) | ((np.minimum(np.abs(a), np.abs(t)) == 0)
                                                         & (np.abs(a - t) == dtypes.finfo(ra.dtype).smallest_subnormal))
    assert np.any(ulp_apart & (a > t)) and np.any(ulp_apart & (a < t))
    assert np.any(ulp_apart & (np.abs(a - t) < dtypes.finfo(ra.dtype).tiny))         # a subnormal difference
    a, t = (v.astype(np.float64) for v in found["tiny"])
    if dtype != "float16":                                   # float16 subnormals are float32 normals
        assert np.any((a != t) & (np.abs(a - t) < 2.0 ** -126))
    a, t = (v.astype(np.float64) for v in found["specials"])
    assert not np.isnan(a).any() and not np.isnan(t).any()   # NaN in self/target is outside the contract


def test_every_mutant_has_cases_where_it_shows_and_the_control_none():
    cases, _ = cases_load.load_cases([ROOT / "cases" / "l1_loss_backward.yaml"])
    small = [c for c in cases if c.elements <= cases_model.STORED_LIMIT]
    mutants = registry.declared(L1)[0]            # its own and the loss family's
    assert len(mutants) >= 4 and len({m.name for m in mutants}) == len(mutants)
    for m in mutants:
        assert m.kernel.name == L1.name and type(m.kernel) is not type(L1)
        assert any(m.where(c) for c in small), f"{m.name}: its where names no case"
        assert not any(m.where(c) for c in small if c.expect != 0), f"{m.name}: where names a rejection"
    assert kit.VARIANTS
