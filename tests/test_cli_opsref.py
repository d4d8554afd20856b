"""The backend author's reference (`aclnn-conform ops`, docs/operators/reference.md) says what the
operator modules say: it is read from them, and the committed page is the same text."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite import ops
from suite.cli import opsref
from suite.cli.main import main
from suite.contract import PRODUCTS
from suite.ops.base import Signature

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_page_is_current() -> None:
    page = (ROOT / opsref.PAGE).read_text()
    assert page == opsref.markdown(ops.OPERATORS), \
        "docs/operators/reference.md is behind suite/ops/: run `aclnn-conform ops --write-docs`"


def test_every_operator_has_a_section_and_a_page() -> None:
    text = opsref.markdown(ops.OPERATORS)
    for name in ops.OPERATORS:
        assert f"\n## {name}\n" in text and f"({name}.md)" in text
        assert (ROOT / "docs" / "operators" / f"{name}.md").is_file()


@pytest.mark.parametrize("name", sorted(ops.OPERATORS))
def test_the_reference_is_the_module(name: str) -> None:
    op = ops.get(name)
    d = opsref.describe(op)
    assert [i["name"] for i in d["inputs"]] == list(op.inputs)
    assert [i["name"] for i in d["inputs"] if i["optional"]] == list(op.optional)
    assert d["reduction"] == dict(op.reductions)
    assert [a["name"] for a in d["attributes"]] == [a.name for a in op.attributes]
    # The C signature names every C parameter in order, then the outputs, workspaceSize, executor.
    names = [p.rsplit(" ", 1)[-1].lstrip("*") for p in d["c_signature"].split("(", 1)[1].rstrip(")").split(", ")]
    assert names == [n for n, _, _ in op.c_params] + list(opsref.outputs(op)) + ["workspaceSize", "executor"]
    for ex in d["out_shape_examples"]:
        shapes = {k: None if v is None else tuple(v) for k, v in ex["inputs"].items()}
        for r, out in ex["out"].items():
            want = op.out_shape(shapes, {"reduction": op.reductions[r]} if r else {})
            assert (None if want is None else list(want)) == out
    assert d["out_shape_examples"], "no accepted page call to work the out shape from"


def test_the_accepted_dtypes_are_what_the_check_accepts() -> None:
    """Each listed dtype passes the operator's check in an accepted call with that tensor changed
    alone or with every floating tensor; an integral out is not listed."""
    op = ops.get("L1LossBackward")
    per = opsref.tensor_dtypes(op, "atlas-training")
    assert "int32" in per["self"] and "bool" in per["target"]      # integer operands (the page)
    assert "bfloat16" not in opsref.tensor_dtypes(ops.get("MseLoss"), "atlas-training")["self"]
    assert "int32" not in per["out"]                                 # an integral out is rejected
    base = next(s for s in opsref._accepted(op) if set(s.dtypes.values()) == {"float32"})
    for d in per["self"]:
        sig = Signature(base.shapes, {**base.dtypes, "self": d}, base.out_shape, base.out_dtype,
                        base.attrs, "atlas-training")
        assert op.check(sig)[0] == 0, d


@pytest.mark.parametrize("name", sorted(ops.OPERATORS))
def test_every_input_and_output_has_its_dtypes_on_every_product(name: str) -> None:
    """Issue 42 item 13: the reference named only the floating dtypes ("every tensor one of") and
    listed nothing per tensor where an input is an integer (a class-index target). Every tensor, the
    outputs beyond out included, has its dtypes on every product, and the page prints each one."""
    op = ops.get(name)
    d, text = opsref.describe(op), opsref.markdown({name: op})
    tensors = [*op.inputs, *opsref.outputs(op)]
    assert d["products"] == [p for p in PRODUCTS if p in op.product_dtypes] and "ascend-950" in d["products"]
    for p in d["products"]:
        assert list(d["tensor_dtypes"][p]) == tensors
        for n in tensors:
            if n not in op.optional:
                assert bool(d["tensor_dtypes"][p][n]) == bool(op.product_dtypes[p]), (p, n)
    for n in tensors:
        row = next(ln for ln in text.splitlines() if ln.startswith(f"| `{n}` | ") and ln.count("|") == 2 + len(PRODUCTS))
        assert "| - |" not in row or n in op.optional, row
        # the families it does not serve (Operator.serves) say so, in PRODUCTS' column order
        cells = [c.strip() for c in row.split("|")[2:-1]]
        assert [c == "not served" for c in cells] == [p not in d["products"] for p in PRODUCTS], row
    assert "every tensor one of" not in text
    assert [o["name"] for o in d["other_outputs"]] == list(opsref.outputs(op)[1:])


def test_nll_loss_names_its_targets_and_total_weights_shape_dtype_and_when_it_is_written() -> None:
    d = opsref.describe(ops.get("NLLLoss"))
    text = opsref.markdown({"NLLLoss": ops.get("NLLLoss")})
    for p in d["products"]:
        assert d["tensor_dtypes"][p]["target"] == ["int64", "int32", "uint8"]
        assert "bfloat16" in d["tensor_dtypes"][p]["totalWeightOut"] or p in ("atlas-training", "atlas-inference")
    assert ("| `target` | int64, int32, uint8 | int64, int32, uint8 | int64, int32, uint8 | int64, int32, uint8 | "
            "int64, int32, uint8 | not served |") in text
    [tw] = d["other_outputs"]
    assert (tw["name"], tw["shape"], tw["written"]) == ("totalWeightOut", [], ["mean", "sum"])
    assert tw["shapes_passed"][:3] == [[], [1], [1, 1]] and [2] not in tw["shapes_passed"]
    assert tw["dtype_for_inputs"] == {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}
    assert ("`totalWeightOut`: written under mean, sum; shape [] as the suite allocates it (accepted: [], [1], "
            "[1, 1], [1, 1, 1]); dtype float32 for float32 inputs, float16 for float16 inputs, bfloat16 for "
            "bfloat16 inputs.") in text
    assert "-> out [2], totalWeightOut not written under none; [], totalWeightOut [] under mean" in text


def test_the_command(capsys) -> None:
    assert main(["ops", "MseLoss", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in doc] == ["MseLoss"] and doc[0]["reduction"] == {"none": 0, "mean": 1, "sum": 2}
    assert main(["ops", "HuberLoss"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown operator HuberLoss (known: ") and "L1LossBackward" in err
    assert main(["ops", "aclnnNLLLoss"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown operator aclnnNLLLoss (did you mean NLLLoss?) (known: ")


def test_write_docs_writes_the_page_atomically(tmp_path: Path) -> None:
    path = opsref.write_docs(tmp_path)
    assert path == tmp_path / opsref.PAGE and path.read_text() == opsref.markdown(ops.OPERATORS)
