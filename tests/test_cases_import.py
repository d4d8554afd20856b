"""`aclnn-conform cases import` (suite/cases/vendor/, docs/vendor-cases.md): the vendor's ATK JSON
and TTK kernel CSV files into single cases. The sample files here are written by the project
itself: they carry the formats' facts (field names, value forms), not the vendor's text.

Each vendor form is checked at the translation (vendor case -> the case-file mapping the importer
emits); the end-to-end runs use cases today's loader reads, the rest is the loader's to judge."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from suite import ops
from suite.cases.load import load_cases
from suite.cases.vendor import atk, run, spec, ttk
from suite.judge.table import load_table

ROOT = Path(__file__).resolve().parents[1]
from suite.cases.vendor.emit import Call, entry, tier_of
from suite.cases.vendor.spec import Refused
from suite.cli.main import main

TTK_HEADER = ("testcase_name,network_name,op_name,input_shapes,input_dtypes,input_formats,output_shapes,"
              "output_dtypes,attributes,input_data_ranges,precision_tolerances,absolute_precision,is_enabled,"
              "soc_series")


def tensor(name: str, dtype: str, shape: List[int], rv: Any, required: bool = True) -> Dict[str, Any]:
    return {"name": name, "type": "tensor", "required": required, "dtype": dtype, "shape": shape,
            "range_values": rv}


def attr(name: str, dtype: str, rv: Any) -> Dict[str, Any]:
    return {"name": name, "type": "attr", "required": True, "dtype": dtype, "shape": None, "range_values": rv}


def atk_case(ident: int, aclnn: str, inputs: List[dict], acc: Any = "single_bm") -> Dict[str, Any]:
    return {"id": ident, "name": "sample", "aclnn_name": aclnn, "api_type": "sample_api",
            "standard": {"acc": acc, "perf": "not_key"}, "inputs": inputs, "is_boundary": True}


def mse_grad(ident: int, *, go: Any = (-1, 1), s: Any = (-1, 1), t: Any = (-1, 1), red: Any = 1,
             shape=(2, 3), dtype="fp32", acc: Any = "single_bm") -> Dict[str, Any]:
    sh = list(shape)
    rv = [list(x) if isinstance(x, tuple) else x for x in (go, s, t)]
    return atk_case(ident, "MseLossBackward", [tensor("gradOutput", dtype, sh, rv[0]), tensor("self", dtype, sh, rv[1]),
                                               tensor("target", dtype, sh, rv[2]), attr("reduction", "int", red)], acc)


def translated(case: Dict[str, Any], product: str = "atlas-a2") -> Dict[str, Any]:
    op = ops.get(atk.operators()[case["aclnn_name"]].name)
    return entry(op, atk.translate(op, case, product), "f.json#1")


# -- ATK fields ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("rv, spec_", [
    ([-100, 100], [-100, 100]),                 # a list of two numbers: uniform on the range
    ([0, 0], 0),                                # lo == hi: that constant
    (0, 0),                                     # a bare number
    (2.5, 2.5),
    ("nan", "nan"), ("-inf", "-inf"),           # a bare word
    (["inf"], "inf"), (["nan"], "nan"),         # a list of one: that constant
    (["-inf", "inf"], "full"),                  # the whole range: every finite magnitude
    ([-0.0, 1], [-0.0, 1]),
])
def test_atk_range_values_forms(rv, spec_) -> None:
    e = translated(mse_grad(1, t=rv))
    assert e["values"]["target"] == spec_
    assert e["values"]["self"] == [-1, 1] and e["values"]["gradOutput"] == [-1, 1]


@pytest.mark.parametrize("rv, why", [
    ([0, "inf"], "a range with an infinite or NaN end"),
    ([5, 1], "an empty range"),
    ({"name": "nd", "mean": 0}, "names a distribution"),
    ([1, 2, 3], "a list of 1 or 2 values"),
    ("default", "is not a number"),
])
def test_atk_range_values_that_cannot_be_said_are_refused(rv, why) -> None:
    with pytest.raises(Refused, match=why):
        translated(mse_grad(1, s=rv))


def test_atk_attributes_values_lists_and_ranges() -> None:
    assert translated(mse_grad(1, red=2))["reduction"] == "sum"
    assert translated(mse_grad(1, red=[0, 2]))["reduction"] == ["none", "mean", "sum"]   # every value
    assert translated(mse_grad(1, red=5))["reduction"] == 5               # raw: the contract's to reject
    nll = atk_case(7, "NLLLossBackward", [
        tensor("gradOutput", "fp32", [], [-100, 100]), tensor("self", "fp32", [4, 21], [-100, 100]),
        tensor("target", "int64", [4], [0, 20]), tensor("weight", "fp32", [21], [-10, 10]),
        tensor("totalWeight", "fp32", [1], [-1000, 1000]), attr("reduction", "int", 1),
        attr("ignoreIndex", "int", [-1000, 1000])])
    e = translated(nll)
    assert e["ignoreIndex"] == {"range": [-1000, 1000], "count": spec.RANGE_COUNT}
    assert e["values"]["target"] == [0, 20] and e["values"]["totalWeight"] == [-1000, 1000]
    assert e["dtypes"] == {"inputs": "float32", "target": "int64"}
    assert e["shapes"] == [[], [4, 21], [4], [21], [1]]


def test_atk_standard_forms() -> None:
    """The ATK word is kept, and the tolerance table knows every one (a standard or an alias)."""
    table = load_table(ROOT / "cases" / "tolerances.yaml")
    forms = {"single_bm": "single_bm", "double_benchmark": "double_benchmark", "default": "mixed"}
    for kind in ("high_performance", "high_precision"):
        assert translated(mse_grad(1, acc={"single_bm": {"type": kind}}))["standard"] == kind
    assert translated(mse_grad(1, acc={"single_bm": {"type": "other"}}))["standard"] == "single_bm"
    for acc, want in forms.items():
        assert translated(mse_grad(1, acc=acc))["standard"] == want
    for acc in ("md5", {"md5": {}}, None):
        assert "standard" not in translated(mse_grad(1, acc=acc))      # the table's choice
    assert {table.resolve(w) for w in list(forms.values()) + ["high_precision", "high_performance"]} \
        == {"single_bm", "mixed"}


def test_atk_names_come_from_the_operator_declaration() -> None:
    kl = atk_case(3, "KlDivBackward", [
        tensor("grad_output", "bf16", [2, 3], [-1, 1]), tensor("input", "bf16", [2, 3], [-1, 1]),
        tensor("target", "bf16", [2, 3], [0, 1]), attr("reduction", "int", 3), attr("log_target", "bool", True)])
    e = translated(kl)
    assert e["logTarget"] is True and e["reduction"] == "batchmean" and e["dtypes"] == "bfloat16"
    assert set(e["values"]) == {"gradOutput", "self", "target"}


def test_atk_optional_input_of_shape_scalar_is_null() -> None:
    def bce(weight_shape):
        return atk_case(4, "BinaryCrossEntropyBackward", [
            tensor("gradOutput", "fp16", [3], [-1, 1]), tensor("self", "fp16", [3], [0.1, 0.9]),
            tensor("target", "fp16", [3], [0, 1]), tensor("weightOptional", "fp16", weight_shape, [0, 0], False),
            attr("reduction", "int", 0)])
    assert translated(bce([]))["shapes"][3] is None and "weight" not in translated(bce([]))["values"]
    assert translated(bce([3]))["shapes"][3] == [3] and translated(bce([3]))["values"]["weight"] == 0


@pytest.mark.parametrize("inputs, why", [
    ([tensor("grad", "fp32", [2], [0, 1])], "not an input of aclnnMseLossBackward"),
    ([tensor("gradOutput", "complex64", [2], [0, 1])], "dtype 'complex64' is not one the suite runs"),
    ([attr("alpha", "float", 1.0)], "not an attribute of aclnnMseLossBackward"),
    ([tensor("gradOutput", "fp32", [2, -1], [0, 1])], "is not a list of dimensions"),
])
def test_atk_inputs_that_are_not_the_operators_are_refused(inputs, why) -> None:
    case = mse_grad(1)
    case["inputs"] = inputs + case["inputs"][1:]
    with pytest.raises(Refused, match=why):
        translated(case)


# -- TTK fields ----------------------------------------------------------------------------------------
def row(op_name: str, shapes: str, dts: str, attrs: str, ranges: str = "", *, out: str = "", enabled: str = "1",
        soc: str = "", name: str = "r1") -> Dict[str, str]:
    return {"testcase_name": name, "op_name": op_name, "input_shapes": shapes, "input_dtypes": dts,
            "attributes": attrs, "input_data_ranges": ranges, "output_dtypes": out, "is_enabled": enabled,
            "soc_series": soc}


def ttk_entry(r: Dict[str, str], product: str = "ascend-950") -> Dict[str, Any]:
    op = ttk.operators()[r["op_name"]]
    return entry(op, ttk.translate(op, r, product), "f.csv#r1")


def test_ttk_kernel_input_order_and_dtype_broadcast() -> None:
    # the kernel takes (predict, label, dout): self, target, gradOutput; one dtype is every input's
    e = ttk_entry(row("mse_loss_grad", "((2, 3), (1, 3), (2, 1))", "('float16',)", "{'reduction': 'sum'}"))
    assert e["shapes"] == [[2, 1], [2, 3], [1, 3]]            # gradOutput, self, target
    assert e["dtypes"] == "float16" and e["reduction"] == "sum" and e["product"] == "ascend-950"
    assert "values" not in e                                   # no ranges: the operator's own set


def test_ttk_input_data_ranges_forms() -> None:
    r = row("smooth_l1_loss_grad_v2", "((4,), (4,), (4,))", "('float32', 'float32', 'float32')",
            "{'sigma': 0.8, 'reduction': 'none'}", "((-100, 100,0,-0,inf,-inf,nan), (inf, inf), (None, None))")
    e = ttk_entry(r)
    assert e["beta"] == 0.8                                    # sigma is beta
    assert e["values"] == {"self": {"range": [-100, 100], "specials": [0, "-0", "inf", "-inf", "nan"]},
                           "target": "inf"}
    one = ttk_entry(row("kl_div_v2", "((5,), (5,))", "('bfloat16', 'bfloat16')",
                        "{'reduction': 'batchmean', 'log_target': True}", "((0.0, 1.0),)"))
    assert one["values"] == {"self": [0, 1], "target": [0, 1]}    # one range is every input's
    assert one["logTarget"] is True and one["reduction"] == "batchmean"
    assert ttk_entry(row("kl_div_v2", "((5,), (5,))", "('float32',)", "{'reduction': 'sum'}",
                         "((-inf, inf), (nan, nan))"))["values"] == {"self": "full", "target": "nan"}
    assert ttk_entry(row("kl_div_v2", "((5,), (5,))", "('float32',)", "{'reduction': 'sum'}",
                         "((None, 3),)"))["values"] == {"self": [-2, 3], "target": [-2, 3]}   # the kit's -2


def test_ttk_attribute_names_and_defaults() -> None:
    r = row("nll_loss_grad", "((8, 3), (), (8,), (3,), ())", "('float32', 'float32', 'int32', 'float32', 'float32')",
            "{'reduction': 'mean'}", "((-1, 1), (-1, 1), (0, 2), (-1, 1), (1, 2))")
    e = ttk_entry(r)
    assert e["ignoreIndex"] == -100                            # the kernel's default
    assert e["shapes"] == [[], [8, 3], [8], [3], []]           # x, y_grad, target, weight, total_weight
    assert e["values"]["target"] == [0, 2] and e["dtypes"] == {"inputs": "float32", "target": "int32"}
    r["attributes"] = "{'ignore_index': 2, 'reduction': 'sum'}"
    assert ttk_entry(r)["ignoreIndex"] == 2 and ttk_entry(r)["reduction"] == "sum"
    nll = ttk_entry(row("nll_loss", "((4, 3), (4,), (3,))", "('bfloat16', 'uint8', 'bfloat16')",
                        "{'reduction': 'none', 'ignore_index': 0}", out="('bfloat16', 'bfloat16')"))
    assert nll["dtypes"] == {"inputs": "bfloat16", "target": "uint8"} and nll["ignoreIndex"] == 0


def test_ttk_attribute_the_call_fixes() -> None:
    r = row("lp_loss", "((4,), (4,))", "('float16',)", "{'p': 1, 'reduction': 'sum'}")
    assert ttk_entry(r)["reduction"] == "sum" and "p" not in ttk_entry(r)
    r["attributes"] = "{'p': 2, 'reduction': 'sum'}"
    with pytest.raises(Refused, match=r"\(p\): 2, but aclnnL1Loss runs the kernel with 1"):
        ttk_entry(r)


def test_ttk_optional_input_none_is_null() -> None:
    e = ttk_entry(row("binary_cross_entropy_grad", "((3,), (3,), (3,), None)",
                      "('float16', 'float16', 'float16', None)", "{'reduction': 'mean'}"))
    assert e["shapes"] == [[3], [3], [3], None]                # gradOutput, self, target, weight


@pytest.mark.parametrize("change, why", [
    ({"is_enabled": "0"}, "disabled in the vendor file"),
    ({"is_enabled": "FALSE"}, "disabled in the vendor file"),
    ({"is_enabled": "maybe"}, "field 'is_enabled'"),
    ({"attributes": "{'reduction': 'average'}"}, "is not one of none, mean, sum"),
    ({"attributes": "{'reduction': 'sum', 'weight_decay': 1}"}, "not an attribute of aclnnMseLossBackward"),
    ({"input_shapes": "((2,), (2,))"}, "is not 3 shapes"),
    ({"input_shapes": "((2,), (2,), __import__('os'))"}, "field 'input_shapes': cannot read"),
    ({"input_dtypes": "('float64',)"}, "dtype 'float64' is not one the suite runs"),
    ({"input_data_ranges": "((0, inf),)"}, "a range with an infinite or NaN end"),
    ({"soc_series": "('Ascend910B', 'Ascend950')"}, "names several SoCs"),
])
def test_ttk_rows_that_cannot_be_said_are_refused(change, why) -> None:
    r = row("mse_loss_grad", "((2,), (2,), (2,))", "('float32',)", "{'reduction': 'sum'}")
    r.update(change)
    with pytest.raises(Refused, match=why):
        ttk_entry(r)


def test_ttk_soc_series_of_one_soc_is_the_product() -> None:
    r = row("mse_loss_grad", "((2,), (2,), (2,))", "('float32',)", "{'reduction': 'sum'}", soc="('Ascend910B',)")
    assert ttk_entry(r)["product"] == "ascend910b"             # the loader resolves a SoC name to its family


def test_ttk_literals_keep_negative_zero_and_refuse_code() -> None:
    v = spec.literal("(-0, -0.0, 0, inf, -inf)", "x")
    assert [str(x) for x in v] == ["-0.0", "-0.0", "0", "inf", "-inf"]
    with pytest.raises(Refused):
        spec.literal("(1, 2) + (3,)", "x")


# -- tiers ---------------------------------------------------------------------------------------------
def test_tier_from_the_largest_array() -> None:
    op = ops.get("MseLoss")
    limits = {"default": 100, "huge": 1000}
    assert tier_of(op, {"self": (10, 10), "target": (10,)}, limits) == "default"
    assert tier_of(op, {"self": (10, 1), "target": (1, 11)}, limits) == "huge"        # the broadcast shape
    with pytest.raises(Refused, match="too large: the broadcast shape 40x30 is 1200 elements"):
        tier_of(op, {"self": (40, 1), "target": (1, 30)}, limits)
    big = Call("atlas-a2", {"self": "float32", "target": "float32"}, {"self": (3, 1 << 29), "target": (3, 1 << 29)},
               reduction=1)
    assert entry(op, big, "n")["tier"] == "huge"                # ~1.6e9 elements: past 2^28, within 2^33
    big.shapes = {"self": (1 << 20, 1 << 14), "target": (1,)}
    with pytest.raises(Refused, match="too large: self"):
        entry(op, big, "n")


def test_huge_from_moves_cases_past_it_to_the_huge_tier_at_its_boundary() -> None:
    """`--huge-from N`: an array of N elements stays in the default tier, N + 1 goes to huge; a
    value above the default tier's limit cannot keep a case out of the huge tier."""
    op = ops.get("MseLoss")
    limits = {"default": 100, "huge": 1000}
    assert tier_of(op, {"self": (6,), "target": (6,)}, limits, huge_from=6) == "default"
    assert tier_of(op, {"self": (7,), "target": (7,)}, limits, huge_from=6) == "huge"
    assert tier_of(op, {"self": (101,), "target": (101,)}, limits, huge_from=500) == "huge"
    call = Call("atlas-a2", {"self": "float32", "target": "float32"}, {"self": (2, 4), "target": (2, 4)}, reduction=1)
    assert "tier" not in entry(op, call, "n", huge_from=8)
    assert entry(op, call, "n", huge_from=7)["tier"] == "huge"


def test_huge_from_on_the_command_line(tmp_path, capsys) -> None:
    vendor = tmp_path / "st"
    vendor.mkdir()
    write_ttk(vendor / "ttk_kernel_l1_loss_grad_st.csv", [L1_ROW.format(n=2), L1_ROW.format(n=3)])
    out = tmp_path / "o"
    assert main(["cases", "import", str(vendor), "--out", str(out), "--product", "atlas-a2", "--huge-from", "2**2"]) == 0
    lines = (out / "l1_loss_backward.yaml").read_text().splitlines()
    assert ["tier: huge" in ln for ln in lines if ln.startswith("  - ")] == [False, True]   # 2x2 stays, 2x3 goes
    capsys.readouterr()
    for bad, why in (("0", "1 or more"), ("many", "a count of elements")):
        with pytest.raises(SystemExit) as e:
            main(["cases", "import", str(vendor), "--out", str(tmp_path / "p"), "--huge-from", bad])
        assert e.value.code == 2 and why in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


# -- the command ---------------------------------------------------------------------------------------
def write_ttk(path: Path, rows: List[str]) -> Path:
    path.write_text(TTK_HEADER + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


L1_ROW = 'l1_a{n},,l1_loss_grad,"((2, {n}), (2, {n}), (2, {n}))","(\'float32\',)",,"((2, {n}),)","(\'float32\',)",' \
         '{{\'reduction\': \'sum\'}},"((None, None),)",,,1,'


def test_import_writes_a_file_the_loader_reads_and_reports_each_case(tmp_path, capsys) -> None:
    vendor = tmp_path / "st" / "arch35"
    vendor.mkdir(parents=True)
    write_ttk(vendor / "ttk_kernel_l1_loss_grad_st.csv",
              [L1_ROW.format(n=1), L1_ROW.format(n=2), L1_ROW.format(n=3).replace(",1,", ",0,")])
    (tmp_path / "st" / "atk_aclnnMseLossOut.json").write_text(json.dumps(
        [atk_case(0, "MseLossOut", [tensor("self", "fp32", [2], [0, 1])])]))
    out = tmp_path / "imported"
    assert main(["cases", "import", str(tmp_path / "st"), "--out", str(out), "--product", "atlas-a2"]) == 0
    o, err = capsys.readouterr()
    written = out / "l1_loss_backward.yaml"
    cases, _ = load_cases([written])                         # what `cases validate` reads
    assert len(cases) == 2 and {c.product for c in cases} == {"atlas-a2"}
    doc = yaml.safe_load(written.read_text())
    assert [c["name"] for c in doc["cases"]] == ["arch35/ttk_kernel_l1_loss_grad_st.csv#l1_a1",
                                                 "arch35/ttk_kernel_l1_loss_grad_st.csv#l1_a2"]
    assert err.splitlines() == [
        "arch35/ttk_kernel_l1_loss_grad_st.csv: case l1_a3 (line 4): refused: disabled in the vendor file (is_enabled)",
        "atk_aclnnMseLossOut.json: case 0: refused: operator not covered: aclnnMseLossOut"]
    table = {line.split()[0]: line.split()[1:] for line in o.splitlines() if line and not line.startswith(" ")}
    assert table["L1LossBackward"] == ["3", "2", "0", "1"] and table["aclnnMseLossOut"] == ["1", "0", "0", "1"]
    assert "1 refused: disabled in the vendor file" in o and "1 refused: operator not covered" in o


def test_a_case_the_loader_refuses_is_refused_with_its_message(tmp_path, capsys) -> None:
    f = write_ttk(tmp_path / "ttk_kernel_x.csv", [L1_ROW.format(n=1)])
    assert main(["cases", "import", str(f), "--out", str(tmp_path / "o"), "--product", "atlas-z9"]) == 1
    err = capsys.readouterr().err
    assert "ttk_kernel_x.csv: case l1_a1 (line 2): refused: the loader: field 'product': unknown product " \
           "'atlas-z9'" in err
    assert not (tmp_path / "o").exists()


def test_a_rejected_call_is_imported_as_the_rejection_it_is(tmp_path) -> None:
    # bfloat16 on atlas-training: the contract's 161002, imported as a rejection case
    f = write_ttk(tmp_path / "ttk_kernel_x.csv", [L1_ROW.format(n=1).replace("float32", "bfloat16")])
    tallies, written = run.run([f], tmp_path / "o", product="atlas-training", say=lambda s: None)
    assert tallies["L1LossBackward"].rejections == 1 and tallies["L1LossBackward"].imported == 1
    (case,) = load_cases(written)[0]
    assert case.expect == 161002


def test_a_repeated_call_gets_the_next_seed(tmp_path, monkeypatch) -> None:
    """Two vendor cases of one call: the second is written with `seed: 1` (its own id and data).
    The loader is stood in for by one whose ids follow the seed, as the format's do."""
    class Fake:
        def __init__(self, i, expect=0):
            self.id, self.expect = i, expect

    def cases(self, op, e):
        return [Fake(f"{e['shapes']}-seed{e.get('seed', 0)}")]
    monkeypatch.setattr(run.Checker, "cases", cases)
    monkeypatch.setattr(run, "load_cases", lambda paths: ([], 0))
    f = write_ttk(tmp_path / "ttk_kernel_x.csv", [L1_ROW.format(n=1), L1_ROW.format(n=1), L1_ROW.format(n=2)])
    _, written = run.run([f], tmp_path / "o", say=lambda s: None)
    doc = yaml.safe_load(written[0].read_text())
    assert [c.get("seed") for c in doc["cases"]] == [None, 1, None]


def test_no_overwrite_without_force(tmp_path, capsys) -> None:
    f = write_ttk(tmp_path / "ttk_kernel_x.csv", [L1_ROW.format(n=1)])
    out = tmp_path / "o"
    out.mkdir()
    (out / "l1_loss_backward.yaml").write_text("mine\n")
    args = ["cases", "import", str(f), "--out", str(out), "--product", "atlas-a2"]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == f"error: {out / 'l1_loss_backward.yaml'}: exists; --force overwrites it"
    assert (out / "l1_loss_backward.yaml").read_text() == "mine\n"
    assert main(args + ["--force"]) == 0
    assert load_cases([out / "l1_loss_backward.yaml"])[0]


def test_the_write_is_atomic(tmp_path, monkeypatch) -> None:
    """A write that fails at its rename leaves the old file whole and no partial file beside it."""
    f = write_ttk(tmp_path / "ttk_kernel_x.csv", [L1_ROW.format(n=1)])
    out = tmp_path / "o"
    out.mkdir()
    (out / "l1_loss_backward.yaml").write_text("old\n")

    def fail(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        run.run([f], out, force=True, product="atlas-a2", say=lambda s: None)
    assert (out / "l1_loss_backward.yaml").read_text() == "old\n"
    assert sorted(p.name for p in out.iterdir()) == ["l1_loss_backward.yaml"]


def test_no_file_is_written_unless_every_file_validates(tmp_path, monkeypatch) -> None:
    """The whole-file check (duplicate ids across cases) runs on every file before any is written."""
    f = write_ttk(tmp_path / "ttk_kernel_x.csv", [L1_ROW.format(n=1),
                  'm1,,mse_loss_grad,"((2,), (2,), (2,))","(\'float32\',)",,"((2,),)","(\'float32\',)",'
                  "{'reduction': 'sum'},,,,1,"])
    seen = []

    def whole(paths):
        seen.append(Path(paths[0]).name)
        if len(seen) == 2:
            from suite.common.yamlfile import FileError
            raise FileError(paths[0], 3, "id", "duplicate case id")
        return [], 0
    monkeypatch.setattr(run, "load_cases", whole)
    with pytest.raises(Exception, match="duplicate case id"):
        run.run([f], tmp_path / "o", product="atlas-a2", say=lambda s: None)
    assert len(seen) == 2 and not (tmp_path / "o").exists()


@pytest.mark.parametrize("name, text, message", [
    ("atk_aclnnX.json", '[{"id": 0,\n "inputs": [}]', "atk_aclnnX.json:2: not JSON"),
    ("atk_aclnnX.json", '{"id": 0}', "atk_aclnnX.json:1: an ATK file is a JSON list of cases"),
    ("ttk_kernel_x.csv", "testcase_name,op_name,input_dtypes\nr,mse_loss_grad,\n",
     "ttk_kernel_x.csv:1: field 'input_shapes': a TTK kernel file's header names op_name, input_shapes"),
    ("ttk_kernel_x.csv", "", "ttk_kernel_x.csv:1: field 'op_name': a TTK kernel file's header"),
])
def test_a_file_that_cannot_be_read_is_one_line_and_exit_2(tmp_path, capsys, name, text, message) -> None:
    (tmp_path / name).write_text(text)
    assert main(["cases", "import", str(tmp_path / name), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not (tmp_path / "o").exists()


def test_a_bad_case_in_a_good_file_is_refused_naming_case_and_field(tmp_path, capsys) -> None:
    bad = mse_grad(5)
    bad["inputs"] = "nothing"
    (tmp_path / "atk_aclnnMseLossBackward.json").write_text(json.dumps([bad, "oops"]))
    assert main(["cases", "import", str(tmp_path), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "atk_aclnnMseLossBackward.json: case 5: refused: field 'inputs': missing or not a list"
    assert err[1] == "atk_aclnnMseLossBackward.json: case #1: refused: entry 1 is not an object"


def test_a_ragged_or_aclnn_mode_row_is_refused(tmp_path, capsys) -> None:
    write_ttk(tmp_path / "ttk_kernel_x.csv", [L1_ROW.format(n=1) + ",extra"])
    (tmp_path / "ttk_aclnn_y.csv").write_text("testcase_name,api_name,tensor_view_shapes\nc1,aclnnL1LossBackward,\n")
    assert main(["cases", "import", str(tmp_path), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["ttk_aclnn_y.csv: case c1 (line 2): refused: a TTK row of the kit in aclnn or end-to-end mode: only kernel-mode files are read",
                   "ttk_kernel_x.csv: case l1_a1 (line 2): refused: the row has 15 cells, the header 14",
                   "no case imported: nothing written"]
    from suite.cases.vendor.run import reason_kind       # the table names the whole reason, not its start
    assert reason_kind(err[0].split("refused: ", 1)[1]) == err[0].split("refused: ", 1)[1].split(":")[0]


def test_paths_that_hold_no_vendor_file(tmp_path, capsys) -> None:
    assert main(["cases", "import", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "holds no ATK (atk_aclnn*.json) or TTK (ttk_*.csv) file" in capsys.readouterr().err
    assert main(["cases", "import", str(tmp_path / "none.json")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_the_emitted_line_round_trips_through_yaml() -> None:
    e = translated(mse_grad(1, t=["-inf", "inf"], s=[-0.0, 3.38e38], go=[0, 0], red=[0, 2]))
    from suite.cases.vendor.emit import case_line
    assert yaml.safe_load(case_line(e)) == e
    e["values"]["gradOutput"] = "-0"
    assert yaml.safe_load(case_line(e))["values"]["gradOutput"] == "-0"      # quoted: not the integer 0


@pytest.mark.parametrize("op", list(ops.OPERATORS.values()), ids=lambda op: op.name)
def test_each_operators_vendor_names_name_its_own_parts(op) -> None:
    """A declared kernel order holds each input once; a renamed ATK or kernel name lands on an
    input or attribute of the operator (a typo would refuse every case of the files)."""
    vn = op.vendor
    if vn.ttk is None:  # its kernel is another operator's (NLLLoss2d's is NLLLoss's): TTK rows are that one's
        assert not (vn.ttk_inputs or vn.ttk_attrs or vn.ttk_defaults or vn.ttk_fixed)
    else:
        assert sorted(vn.ttk_inputs) == sorted(op.inputs)
        # one operator per kernel: the importer's kernel table (suite/cases/vendor/ttk.py) keeps one
        assert [o.name for o in ops.OPERATORS.values() if o.vendor.ttk == vn.ttk] == [op.name]
    ours = {*op.inputs, *(a.name for a in op.attributes)}
    assert set(vn.atk_names.values()) <= ours and set(vn.ttk_attrs.values()) <= ours
    assert set(vn.ttk_defaults) <= {"reduction", *vn.ttk_attrs}
