"""suite/ops/loss.py, the loss-backward family's base: the C signature it derives for each operator
is the one the operator's page states; `sig` fills in a page row as its docstring says; the rows
every page shares are rejected as they claim; the reduction check, the torch guard and the
promotion. (Every row of every page against `check`: tests/test_ops_checks.py.)"""
from __future__ import annotations

import pytest

from suite import ops
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.ops.base import Attr
from suite.ops.loss import R9, ROW_SHAPE, LossBackward, promote

FAMILY = sorted((op for op in ops.OPERATORS.values() if isinstance(op, LossBackward)), key=lambda op: op.name)

# The "API" section of each operator's page (docs/operators/*.md): aclnn<name>GetWorkspaceSize's
# parameters before `out`, as (name, C type, default).
_G, _S, _T, _R = ("gradOutput", "tensor", None), ("self", "tensor", None), ("target", "tensor", None), \
    ("reduction", "int64", 1)
PAGES = {
    "BinaryCrossEntropy": (_S, _T, ("weight", "tensor", None), _R),   # the forward (BinaryCrossEntropy.md)
    "BinaryCrossEntropyBackward": (_G, _S, _T, ("weight", "tensor", None), _R),
    "BinaryCrossEntropyWithLogits": (_S, _T, ("weight", "tensor", None), ("posWeight", "tensor", None), _R),
    "KlDiv": (_S, _T, _R, ("logTarget", "bool", False)),   # the forward (KlDiv.md)
    "KlDivBackward": (_G, _S, _T, _R, ("logTarget", "bool", False)),
    "KlDivTargetBackward": (_G, _S, _T, _R, ("logTarget", "bool", False)),   # KlDivTargetBackward.md
    "L1Loss": (_S, _T, _R),                   # the forward, as MseLoss (L1Loss.md)
    "L1LossBackward": (_G, _S, _T, _R),
    "MseLoss": (_S, _T, _R),                  # the forward: self, target, reduction (MseLoss.md)
    "MseLossBackward": (_G, _S, _T, _R),
    # the forward: two outputs, out and totalWeightOut, follow the attributes (NLLLoss.md, "API")
    "NLLLoss": (_S, _T, ("weight", "tensor", None), _R, ("ignoreIndex", "int64", -100)),
    "NLLLoss2d": (_S, _T, ("weight", "tensor", None), _R, ("ignoreIndex", "int64", -100)),   # NLLLoss2d.md, "API"
    # totalWeight after the two attributes (NLLLossBackward.md, "API")
    "NLLLossBackward": (_G, _S, _T, ("weight", "tensor", None), _R, ("ignoreIndex", "int64", -100),
                        ("totalWeight", "tensor", None)),
    "NLLLoss2dBackward": (_G, _S, _T, ("weight", "tensor", None), _R, ("ignoreIndex", "int64", -100),
                          ("totalWeight", "tensor", None)),   # NLLLoss2dBackward.md, "API"
    "SmoothL1Loss": (_S, _T, _R, ("beta", "float", 1.0)),   # the forward (SmoothL1Loss.md)
    "SmoothL1LossBackward": (("gradOut", "tensor", None), _S, _T, _R, ("beta", "float", 1.0)),
    "SoftMarginLoss": (_S, _T, _R),           # the forward: self, target, reduction (SoftMarginLoss.md)
    "SoftMarginLossBackward": (_G, _S, _T, _R),
}


def _one(row_out: str) -> LossBackward:
    """The first family member whose rows default out to `row_out` and that takes the three
    tensors the tests below name (a forward takes two)."""
    return next(op for op in FAMILY if op.row_out == row_out and len(op.inputs) == 3)


def test_every_loss_backward_is_in_the_family() -> None:
    assert [op.name for op in FAMILY] == sorted(PAGES)


@pytest.mark.parametrize("op", FAMILY, ids=lambda op: op.name)
def test_the_derived_c_signature_is_the_pages(op: LossBackward) -> None:
    assert op.c_params == PAGES[op.name]


def test_a_declared_c_signature_is_kept_and_a_subclass_derives_its_own() -> None:
    class Declared(LossBackward):
        inputs = ("x",)
        c_params = (("x", "tensor", None), ("mode", "int64", 0))

    class Derived(LossBackward):
        inputs = ("x", "y")
        attributes = (Attr("scale", float, (1.0,), 2.0, str), Attr("flag", bool, (False,), True, str))

    assert Declared.c_params == (("x", "tensor", None), ("mode", "int64", 0))
    assert Derived.c_params == (("x", "tensor", None), ("y", "tensor", None), ("reduction", "int64", 1),
                                ("scale", "float", 2.0), ("flag", "bool", True))


def test_sig_fills_in_what_a_row_does_not_name() -> None:
    op = _one("broadcast")
    g, s, t = op.inputs
    row = op.sig()
    assert all(row.shapes[n] == ROW_SHAPE and row.dtypes[n] == "float32" for n in op.inputs)
    assert (row.out_shape, row.out_dtype, row.product) == (ROW_SHAPE, "float32", "atlas-a2")
    assert row.attrs == {"reduction": op.row_reduction, **{a.name: a.default for a in op.attributes}}
    row = op.sig(g=(4, 1, 3), s=(1, 5, 1), t=(5, 3), sdt="float16", reduction=2, product="atlas-a3")
    assert row.out_shape == (4, 5, 3) and row.shapes[s] == (1, 5, 1)
    assert (row.dtypes[g], row.dtypes[s], row.out_dtype) == ("float32", "float16", "float16")   # out: self's
    assert row.attrs["reduction"] == 2 and row.product == "atlas-a3"
    assert op.sig(s=None).out_shape == ROW_SHAPE and op.sig(s=None).shapes[s] is None
    assert op.sig(dt="bfloat16", odt="float32").dtypes[t] == "bfloat16"
    assert op.sig(out=(7,)).out_shape == (7,) and op.sig(out=None).out_shape is None
    with pytest.raises(TypeError, match="unknown q"):
        op.sig(q=(1,))


def test_sig_out_of_self_shape_and_an_optional_null_input() -> None:
    op = _one("self")
    assert op.sig(s=(4,), t=(2, 4)).out_shape == (4,)
    assert op.sig(s=None).out_shape == ROW_SHAPE
    opt = next(o for o in FAMILY if o.optional)
    for n in opt.optional:
        row = opt.sig(**{n[0].lower(): None})
        assert row.shapes[n] is None and row.dtypes[n] is None          # NULL: no dtype at all
        assert opt.sig().dtypes[n] == "float32"


@pytest.mark.parametrize("op", FAMILY, ids=lambda op: op.name)
def test_the_shared_rows_are_rejected_as_they_claim(op: LossBackward) -> None:
    nulls = op.null_rows()
    assert list(nulls) == [f"{n} NULL" for n in op.inputs if n not in op.optional] + ["out NULL"]
    for what, (sig, status) in nulls.items():
        assert status == op.null_status and op.check(sig)[0] == op.null_status, what
    ranks = op.rank_rows((*op.inputs, "out"))
    for n, (what, (sig, status)) in zip((*op.inputs, "out"), ranks.items()):
        assert len(sig.out_shape if n == "out" else sig.shapes[n]) == len(R9) and status == INVALID, what
        assert op.check(sig)[0] == INVALID or op.outside_contract(sig), what   # no rank check: undocumented
    past = max(op.reductions.values()) + 1
    assert {k: v[0].attrs["reduction"] for k, v in op.reduction_rows().items()} == \
        {f"reduction {past}": past, "reduction -1": -1}


@pytest.mark.parametrize("op", FAMILY, ids=lambda op: op.name)
def test_the_reduction_check_and_the_torch_guard(op: LossBackward) -> None:
    known = sorted(op.reductions.values())
    for r in known:
        assert op._reduction(op.sig(reduction=r)) is None
        assert op.torch_reduction({"reduction": r}) == r
    assert op._reduction(op.sig(reduction=-1))[0] == INVALID
    past = known[-1] + 1
    status, why = op._reduction(op.sig(reduction=past))
    assert status == INVALID and why == f"reduction {past} is not {', '.join(map(str, known[:-1]))} or {known[-1]}"
    with pytest.raises(ValueError, match=f"{op.name} reduction {past} not in"):
        op.torch_reduction({"reduction": past})


def test_promote_is_opbase_promote_type() -> None:
    assert promote(["float16", "float16", None]) == "float16"          # a NULL optional input takes no part
    assert promote(["bfloat16", "bfloat16"]) == "bfloat16"
    assert promote(["float16", "bfloat16"]) == "float32"
    assert promote(["bfloat16", "float32", "bfloat16"]) == "float32"
    assert promote(["float32", "float64"]) == "float64"                 # DOUBLE anywhere gives DOUBLE
    assert promote([None]) is None and promote([]) is None
    # integer and BOOL operands (docs/operators/L1LossBackward.md, "Integer operands")
    assert promote(["int32", "float32", "float32"]) == "float32"
    assert promote(["float16", "int32", "float16"]) == "float16"
    assert promote(["bool", "bfloat16", "bfloat16"]) == "bfloat16"
    assert promote(["int8", "uint8"]) == "int16" and promote(["int8", "uint8", "float32"]) == "float32"
    assert promote(["uint8", "bfloat16", "int64"]) == "bfloat16"
    assert promote(["int32", "int32", "int32"]) == "int32" and promote(["bool", "bool"]) == "bool"
    assert promote(["uint16", "float32"]) is None and promote(["float32", "uint64", "float32"]) is None
