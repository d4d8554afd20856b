"""The backend author's reference (`aclnn-conform ops`, docs/operators/reference.md) says what the
operator modules say: it is read from them, and the committed page is the same text."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite import ops
from suite.cli import opsref
from suite.cli.main import main
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
    """Each listed dtype passes the operator's check, and the first unlisted one a probe tries fails."""
    op = ops.get("L1LossBackward")
    per = opsref.operand_dtypes(op, "atlas-training")
    assert "int32" in per["self"] and "bool" in per["target"]      # integer operands (the page)
    assert "bfloat16" not in opsref.operand_dtypes(ops.get("MseLoss"), "atlas-training")["self"]
    assert "int32" not in per["out"]                                 # an integral out is rejected
    base = next(s for s in opsref._accepted(op) if set(s.dtypes.values()) == {"float32"})
    for d in per["self"]:
        sig = Signature(base.shapes, {**base.dtypes, "self": d}, base.out_shape, base.out_dtype,
                        base.attrs, "atlas-training")
        assert op.check(sig)[0] == 0, d


def test_the_command(capsys) -> None:
    assert main(["ops", "MseLoss", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in doc] == ["MseLoss"] and doc[0]["reduction"] == {"none": 0, "mean": 1, "sum": 2}
    assert main(["ops", "L1Loss"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown operator L1Loss (known: ") and "L1LossBackward" in err
    assert main(["ops", "aclnnNLLLoss"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown operator aclnnNLLLoss (did you mean NLLLoss?) (known: ")


def test_write_docs_writes_the_page_atomically(tmp_path: Path) -> None:
    path = opsref.write_docs(tmp_path)
    assert path == tmp_path / opsref.PAGE and path.read_text() == opsref.markdown(ops.OPERATORS)
