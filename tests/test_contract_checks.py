"""op.check against the rejection tables of docs/operators/MseLossBackward.md and KlDivBackward.md,
row by row, on hand-made Signatures (nothing here comes from the case files)."""
from __future__ import annotations

from typing import Optional

import numpy as np
import pytest

from suite import ops
from suite.ops.base import Signature

NULLPTR, INVALID = 161001, 161002
MSE, KL = ops.get("MseLossBackward"), ops.get("KlDivBackward")
R9 = (1, 1, 1, 1, 1, 1, 1, 2, 2)
R8 = (1, 2, 1, 2, 1, 1, 2, 1)


def sig(g=(2, 3), s=(2, 3), t=(2, 3), out="B", dt="float32", gdt=None, sdt=None, tdt=None,
        odt=None, reduction=0, product="atlas-a2", log_target: Optional[bool] = None) -> Signature:
    """A call's metadata; out="B" means the shape the contract wants (MSE: broadcast, KL: self's)."""
    shapes = {"gradOutput": g, "self": s, "target": t}
    dts = {"gradOutput": gdt or dt, "self": sdt or dt, "target": tdt or dt}
    attrs = {"reduction": reduction}
    if log_target is not None:
        attrs["logTarget"] = log_target
    if out == "B":
        out = s if log_target is not None else _bcast(g, s, t)
    return Signature(shapes, dts, out, odt or sdt or dt, attrs, product)


def _bcast(*shapes):
    """The broadcast shape (NumPy rules); (2, 3) when a tensor is NULL."""
    return (2, 3) if None in shapes else tuple(np.broadcast_shapes(*shapes))


def kl(**kw) -> Signature:
    kw.setdefault("log_target", False)
    return sig(**kw)


# -- aclnnMseLossBackward ----------------------------------------------------------------------
MSE_REJECT = {
    "gradOutput NULL": (sig(g=None), NULLPTR),
    "self NULL": (sig(s=None, out=(2, 3)), NULLPTR),
    "target NULL": (sig(t=None), NULLPTR),
    "out NULL": (sig(out=None), NULLPTR),
    "gradOutput dtype differs from self": (sig(gdt="float16"), INVALID),
    "target dtype differs from self": (sig(tdt="float16"), INVALID),
    "gradOutput and target agree, self differs": (sig(sdt="float16", odt="float32"), INVALID),
    "self bfloat16 on atlas-training": (sig(dt="bfloat16", product="atlas-training"), INVALID),
    "self bfloat16 on atlas-inference": (sig(dt="bfloat16", odt="float32", product="atlas-inference"), INVALID),
    "out bfloat16 on atlas-training": (sig(odt="bfloat16", product="atlas-training"), INVALID),
    "out bfloat16 on atlas-inference": (sig(dt="float16", odt="bfloat16", product="atlas-inference"), INVALID),
    "reduction 3": (sig(reduction=3), INVALID),
    "reduction -1": (sig(reduction=-1), INVALID),
    "gradOutput 9-d": (sig(g=R9, s=(2, 2), t=(2, 2)), INVALID),
    "self 9-d": (sig(g=(2, 2), s=R9, t=(2, 2)), INVALID),
    "target 9-d": (sig(g=(2, 2), s=(2, 2), t=R9), INVALID),
    "shapes do not broadcast": (sig(s=(2, 4), out=(2, 3)), INVALID),
    "gradOutput does not broadcast": (sig(g=(3,), s=(2, 3), t=(2, 2), out=(2, 3)), INVALID),
    "out is self's shape, not B": (sig(s=(2, 1), out=(2, 1)), INVALID),
    "out transposed": (sig(out=(3, 2)), INVALID),
    "out with an extra 1": (sig(out=(1, 2, 3)), INVALID),
    "0-d out of 1-element B": (sig(g=(), s=(), t=(), out=(1,)), INVALID),
}


@pytest.mark.parametrize("row", sorted(MSE_REJECT))
def test_mse_rejections(row: str) -> None:
    s, want = MSE_REJECT[row]
    status, why = MSE.check(s)
    assert status == want, (row, why)
    assert why


MSE_ACCEPT = {
    "float16 in, float32 out": sig(dt="float16", odt="float32", product="atlas-training"),
    "float32 in, float16 out": sig(dt="float32", odt="float16", product="atlas-inference"),
    "bfloat16 in, float16 out": sig(dt="bfloat16", odt="float16", product="atlas-a3"),
    "bfloat16 on atlas-a2": sig(dt="bfloat16"),
    "0-d everything": sig(g=(), s=(), t=()),
    "0-d self": sig(g=(2, 3), s=(), t=(2, 3)),
    "empty": sig(g=(0, 3), s=(0, 3), t=(0, 3)),
    "only gradOutput empty": sig(g=(0, 3), s=(3,), t=(1, 3)),
    "8-d": sig(g=R8, s=R8, t=R8),
    "all three broadcast": sig(g=(4, 1, 3), s=(1, 5, 1), t=(5, 3)),
    "every reduction": sig(reduction=2),
    "mean": sig(reduction=1),
}


@pytest.mark.parametrize("row", sorted(MSE_ACCEPT))
def test_mse_accepts(row: str) -> None:
    assert MSE.check(MSE_ACCEPT[row]) == (0, "")


# -- aclnnKlDivBackward ------------------------------------------------------------------------
KL_REJECT = {
    "gradOutput NULL": (kl(g=None), NULLPTR),
    "self NULL": (kl(s=None, out=(2, 3)), NULLPTR),
    "target NULL": (kl(t=None), NULLPTR),
    "out NULL": (kl(out=None), NULLPTR),
    "gradOutput bfloat16 on atlas-training": (kl(gdt="bfloat16", product="atlas-training"), INVALID),
    "self bfloat16 on atlas-training": (kl(sdt="bfloat16", odt="float32", product="atlas-training"), INVALID),
    "target bfloat16 on atlas-inference": (kl(tdt="bfloat16", product="atlas-inference"), INVALID),
    "out bfloat16 on atlas-inference": (kl(odt="bfloat16", product="atlas-inference"), INVALID),
    "gradOutput 9-d": (kl(g=R9, s=(2, 2), t=(2, 2)), INVALID),
    "self 9-d": (kl(g=(2, 2), s=R9, t=(2, 2)), INVALID),
    "target 9-d": (kl(g=(2, 2), s=(2, 2), t=R9), INVALID),
    "out 9-d": (kl(g=(2, 2), s=(2, 2), t=(2, 2), out=R9), INVALID),
    "self and target do not broadcast": (kl(s=(2, 4)), INVALID),
    "gradOutput does not broadcast to B": (kl(g=(3, 3), s=(2, 3), t=(2, 3)), INVALID),
    "gradOutput broadcasts with B but is larger": (kl(g=(2, 3), s=(3,), t=(3,)), INVALID),
    "out is B, not self's shape": (kl(s=(2, 1), out=(2, 3)), INVALID),
    "out transposed": (kl(out=(3, 2)), INVALID),
    "0-d out for 1-d self": (kl(g=(4,), s=(4,), t=(4,), out=()), INVALID),
}


@pytest.mark.parametrize("row", sorted(KL_REJECT))
def test_kl_rejections(row: str) -> None:
    s, want = KL_REJECT[row]
    status, why = KL.check(s)
    assert status == want, (row, why)
    assert why


KL_ACCEPT = {
    "mixed input dtypes": kl(gdt="float16", sdt="float32", tdt="float16", odt="float32"),
    "mixed with bfloat16 on atlas-a2": kl(gdt="bfloat16", sdt="float32", tdt="float16"),
    "out float16 from float32 self": kl(odt="float16", product="atlas-training"),
    "out float32 from float16 self": kl(dt="float16", odt="float32", product="atlas-inference"),
    "0-d": kl(g=(), s=(), t=()),
    "0-d self, 2-d target": kl(g=(), s=(), t=(3, 4)),
    "empty self": kl(g=(0, 3), s=(0, 3), t=(0, 3)),
    "8-d": kl(g=R8, s=R8, t=R8),
    "self fewer dims than target": kl(g=(2, 3, 4), s=(4,), t=(2, 3, 4), reduction=3),
    "logTarget": kl(log_target=True, reduction=1),
    # phase 1 does not look at reduction: values outside 0-3 are outside the contract, not rejected
    "reduction 7": kl(reduction=7),
}


@pytest.mark.parametrize("row", sorted(KL_ACCEPT))
def test_kl_accepts(row: str) -> None:
    assert KL.check(KL_ACCEPT[row]) == (0, "")


def test_kl_outside_contract() -> None:
    assert "batchmean" in KL.outside_contract(kl(g=(), s=(), t=(), reduction=3))
    assert KL.outside_contract(kl(reduction=4))
    assert KL.outside_contract(kl(g=(2, 3), s=(2, 3), t=(2, 3), reduction=3)) is None
    assert KL.outside_contract(kl(g=(), s=(), t=(), reduction=2)) is None


# -- NULL first --------------------------------------------------------------------------------
@pytest.mark.parametrize("op,make", [(MSE, sig), (KL, kl)], ids=["mse", "kl"])
@pytest.mark.parametrize("null", ["g", "s", "t", "out"])
def test_null_is_checked_before_anything_else(op, make, null: str) -> None:
    """A NULL tensor is 161001 even when every other check would also fail."""
    kw = dict(g=R9, s=(2, 4), t=(3, 3), out=(7,), dt="bfloat16", gdt="float16", odt="bfloat16",
              reduction=9, product="atlas-training")
    kw[null] = None
    status, why = op.check(make(**kw))
    assert status == NULLPTR, why
    name = {"g": "gradOutput", "s": "self", "t": "target", "out": "out"}[null]
    assert why == f"{name} is NULL"
