"""Issue 44 item 3: the Ascend 950 (ascend-950) and Atlas 200I/500 A2 (atlas-200i-500-a2) families,
held against the vendor's op_api code operator by operator.

VENDOR is written out here from the code (hicann/ops-nn @e5c3fa93 and hicann/ops-math @c4193324,
the files named per row), not read from the modules: a module that drops the 950's BFLOAT16 or
claims a status on the 200I/500 A2 the code does not settle fails here.
- ascend-950 is DAV_3510, a "regbase" chip: GetDtypeSupportListV2 (common/inc/op_api/level2_base.h),
  KlDivBackward's and KlDiv's own lists and the NLL losses' DAV_3510 case give it the three-dtype
  list; L1LossBackward's SocVersion range ASCEND910B..ASCEND910E holds ASCEND950 (the SocVersion
  enum of tests/ut/op_api/stub/opdev/platform.h).
- atlas-200i-500-a2 (Ascend310B, DAV_3002): KlDivBackward's GetSupportDtypeList returns an empty
  list for it, so every call is 161002; the other eight give it the two-dtype list and then reach
  kernels no public source places on that chip, and every page says "not supported": not served
  (None), what aclnn returns there is not established.
"""
from __future__ import annotations

import numpy as np
import pytest

from suite import ops
from suite.backends.reference import ReferenceBackend
from suite.common import dtypes
from suite.contract import PRODUCTS, AclnnError, OpCall, Unsupported
from suite.ops.base import LOSS_DTYPES

THREE = frozenset({"float32", "float16", "bfloat16"})
VENDOR = {  # operator -> (its dtypes on ascend-950, on atlas-200i-500-a2: None = not served)
    "BinaryCrossEntropy": (THREE, None),           # loss/binary_cross_entropy/op_api/aclnn_binary_cross_entropy.cpp
    "BinaryCrossEntropyBackward": (THREE, None),   # loss/binary_cross_entropy_grad/op_api/aclnn_..._backward.cpp
    "BinaryCrossEntropyWithLogits": (THREE, None),  # loss/sigmoid_cross_entropy_with_logits_v2/op_api/aclnn_binary_..._with_logits.cpp
    "KlDiv": (THREE, None),                        # ops-math math/kl_div_v2/op_api/aclnn_kl_div.cpp (IsRegBase)
    "KlDivBackward": (THREE, frozenset()),         # loss/kl_div_loss_grad/op_api/aclnn_kl_div_backward.cpp
    "KlDivTargetBackward": (THREE, frozenset()),   # loss/kl_div_target_loss_grad/op_api/aclnn_kl_div_target_backward.cpp
    "L1Loss": (THREE, None),                       # loss/lp_loss/op_api/aclnn_l1_loss.cpp (ASCEND910B..ASCEND910E)
    "L1LossBackward": (THREE, None),               # loss/l1_loss_grad/op_api/aclnn_l1_loss_backward.cpp
    "MseLoss": (THREE, None),                      # loss/mse_loss/op_api/aclnn_mse_loss.cpp
    "SoftMarginLoss": (THREE, None),               # loss/soft_margin_loss/op_api/aclnn_soft_margin_loss.cpp
    "SoftMarginLossBackward": (THREE, None),       # loss/soft_margin_loss_grad/op_api/aclnn_soft_margin_loss_backward.cpp
    "MseLossBackward": (THREE, None),              # loss/mse_loss_grad_v2/op_host/op_api/aclnn_mse_loss_backward.cpp
    "NLLLoss": (THREE, None),                      # loss/nll_loss/op_api/aclnn_nll_loss.cpp (DAV_3510)
    "NLLLossBackward": (THREE, None),              # loss/nll_loss_grad/op_api/aclnn_nll_loss_backward.cpp
    "NLLLoss2d": (THREE, None),                    # loss/nll_loss/op_api/aclnn_nll_loss2d.cpp (IsRegbase)
    "NLLLoss2dBackward": (THREE, None),            # loss/nll_loss_grad/op_api/aclnn_nll_loss2d_backward.cpp
    "SmoothL1Loss": (THREE, None),                 # loss/smooth_l1_loss_v2/op_api/aclnn_smooth_l1_loss.cpp (IsRegbase)
    "SmoothL1LossBackward": (THREE, None),         # loss/smooth_l1_loss_grad_v2/op_api/aclnn_..._backward.cpp
}
# The operators' pages ("Determinism") and ops-nn's API list: deterministic by default on the 950,
# NLLLoss included (its 950 kernel sums without atomics).
NONDETERMINISTIC_ON_950 = set()


def test_the_six_families_in_their_order():
    assert PRODUCTS == ("atlas-training", "atlas-inference", "atlas-a2", "atlas-a3", "ascend-950", "atlas-200i-500-a2")
    assert LOSS_DTYPES["ascend-950"] == THREE and "atlas-200i-500-a2" not in LOSS_DTYPES


@pytest.mark.parametrize("name", sorted(VENDOR))
def test_each_operator_takes_the_vendors_lists_on_the_new_families(name):
    op, (on_950, on_200i) = ops.get(name), VENDOR[name]
    assert set(VENDOR) == set(ops.OPERATORS)
    assert op.serves("ascend-950") and op.product_dtypes["ascend-950"] == on_950
    assert op.serves("atlas-200i-500-a2") == (on_200i is not None)
    if on_200i is not None:
        assert op.product_dtypes["atlas-200i-500-a2"] == on_200i
    assert all(op.serves(p) for p in PRODUCTS[:4])          # the four families: as before


@pytest.mark.parametrize("name", sorted(VENDOR))
def test_the_950_is_deterministic(name):
    op = ops.get(name)
    attrs = {"reduction": 1} if op.reductions else {}
    assert op.deterministic_on("ascend-950", attrs) == (name not in NONDETERMINISTIC_ON_950)
    assert "ascend-950" not in op.nondeterministic


def _call(op, sig, product):
    """An OpCall of a page row's signature, filled with small values (class indices where exact)."""
    rng = np.random.default_rng(0)
    inputs = {}
    for n, shape in sig.shapes.items():
        if shape is None:
            inputs[n] = None
            continue
        dt = dtypes.dtype_of(sig.dtypes[n])
        inputs[n] = (np.zeros(shape) if n in op.indices else rng.uniform(0.1, 0.9, shape)).astype(dt)
    outs = None if sig.outputs is None else {
        k: (s, None if d is None else dtypes.dtype_of(d)) for k, (s, d) in sig.outputs.items()}
    return OpCall(op.name, inputs, dict(sig.attrs), sig.out_shape, dtypes.dtype_of(sig.out_dtype),
                  product, outs)


def _accepted(op):
    return next(e.signature for e in op.examples() if e.status == 0 and not e.outside)


@pytest.mark.parametrize("name", sorted(VENDOR))
def test_the_reference_backend_on_the_new_families(name):
    """The 950: a bfloat16 call runs. The 200I/500 A2: KlDivBackward rejects every call with
    161002; an operator that does not serve it is Unsupported (a skip with the reason), no status."""
    op, backend = ops.get(name), ReferenceBackend()
    assert set(backend.products) == set(PRODUCTS)
    row = next(e for e in op.examples() if e.status == 0 and e.signature.product == "ascend-950")
    assert row.signature.dtypes[op.primary] == "bfloat16"
    out = backend.run(_call(op, row.signature, "ascend-950"))
    first = out[op.outputs[0]] if isinstance(out, dict) else out
    assert np.asarray(first).dtype == dtypes.dtype_of("bfloat16")
    call = _call(op, _accepted(op), "atlas-200i-500-a2")
    if VENDOR[name][1] is None:
        with pytest.raises(Unsupported, match=f"{name} is not served on atlas-200i-500-a2"):
            backend.run(call)
    else:
        with pytest.raises(AclnnError) as err:
            backend.run(call)
        assert err.value.status == 161002 and "no dtype is" in str(err.value)
