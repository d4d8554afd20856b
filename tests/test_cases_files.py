"""Case files: every kind of mistake is one FileError naming file, line and field (in-process, via
the CLI and via pytest --cases), and what a valid file expands to is stable and countable."""
from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from suite.cli import main as cli
from suite.cases.load import load_cases
from suite.cases.inputs import draw_inputs
from suite.common.yamlfile import FileError
from tests.core_helpers import marked_line, write

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]
MSE = "op: MseLossBackward\n"
KL = "op: KlDivBackward\n"
CASE = "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2x3, 2x3, 2x3]\n"

# name -> (text with the bad line marked, field the error names, words the message contains)
BAD = {
    "file_key": (MSE + "colour: red #<\n", "colour", "unknown key"),
    "matrix_key": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes: [[2, 2, 2]]\n    colour: red #<\n",
                   "colour", "unknown key"),
    "case_key": (MSE + "cases:\n" + CASE + "    colour: red #<\n", "colour", "unknown key"),
    "dtype_mapping_key": (MSE + "cases:\n  - product: atlas-a2\n    dtypes:\n      self: float32\n"
                          "      weight: float16 #<\n    reduction: none\n    shapes: [2, 2, 2]\n",
                          "weight", "unknown key"),
    "bad_dtype_matrix": (MSE + "matrices:\n  - dtypes:\n      - float32\n      - float64 #<\n"
                         "    shapes: [[2, 2, 2]]\n", "dtypes[1]", "unknown dtype 'float64'"),
    "bad_dtype_case": (MSE + "cases:\n  - product: atlas-a2\n    dtypes: uint16 #<\n    reduction: none\n"
                       "    shapes: [2, 2, 2]\n", "dtypes", "unknown dtype 'uint16'"),
    "shape_2xx3": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes:\n      - [2x3, 2x3, 2xx3] #<\n",
                   "shapes.target", "malformed shape '2xx3'"),
    "shape_negative": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes:\n      - [2x3, -1, 2x3] #<\n",
                       "shapes.self", "malformed shape -1"),
    "shape_list_letter": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes:\n      - [2x3, [2, a], 2x3] #<\n",
                          "shapes.self", "malformed shape [2, 'a']"),
    "shape_true": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes:\n      - [true, 2x3, 2x3] #<\n",
                   "shapes.gradOutput", "malformed shape True"),
    "shape_in_set": (MSE + "shapes:\n  s:\n    - [2x3, 2x3, 2x3]\n    - [2x3, 2xx3, 2x3] #<\n"
                     "matrices:\n  - dtypes: [float32]\n    shapes: [s]\n", "shapes.self", "malformed shape"),
    "duplicate_single": (MSE + "cases:\n  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2, 2, 2]}\n"
                         "  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2, 2, 2]} #<\n",
                         "id", "duplicate case id MseLossBackward-float32-atlas-a2-none-2.2.2-contiguous-uniform"),
    "duplicate_matrix_and_case": (MSE + "matrices:\n  - products: [atlas-a2]\n    dtypes: [float32]\n"
                                  "    reductions: [none]\n    shapes: [[2, 2, 2]]\ncases:\n"
                                  "  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2, 2, 2]} #<\n",
                                  "id", ":3)"),
    "duplicate_yaml_key": (MSE + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    product: atlas-a3 #<\n",
                           "product", "duplicate key"),
    "unsafe_tag": (MSE + "cases: !!python/object/apply:os.system ['touch {sentinel}'] #<\n", None,
                   "python/object/apply:os.system"),
    "syntax_error": (MSE + "cases:\n  - {product: atlas-a2, dtypes: float32] #<\nmatrices: []\n", None,
                     "expected ',' or '}'"),
    "unknown_op": ("op: Conv2d #<\n", "op", "unknown operator 'Conv2d'"),
    "unknown_product": (MSE + "matrices:\n  - products:\n      - atlas-a2\n      - atlas-z9 #<\n"
                        "    dtypes: [float32]\n    shapes: [[2, 2, 2]]\n", "products[1]", "unknown product 'atlas-z9'"),
    "unknown_product_case": (MSE + "cases:\n  - product: atlas-z9 #<\n    dtypes: float32\n    reduction: none\n"
                             "    shapes: [2, 2, 2]\n", "product", "unknown product 'atlas-z9'"),
    "unknown_reduction": (MSE + "matrices:\n  - dtypes: [float32]\n    reductions:\n      - none\n"
                          "      - batchmean #<\n    shapes: [[2, 2, 2]]\n", "reductions[1]",
                          "unknown reduction 'batchmean'"),
    "unknown_value_set": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes: [[2, 2, 2]]\n    values:\n"
                          "      - uniform\n      - gaussian #<\n", "values[1]", "unknown value set 'gaussian'"),
    "unknown_layout": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes: [[2, 2, 2]]\n    layouts:\n"
                       "      - contiguous\n      - diagonal #<\n", "layouts[1]", "unknown layout 'diagonal'"),
    "unknown_layout_case": (MSE + "cases:\n" + CASE + "    layout: diagonal #<\n", "layout", "unknown layout"),
    "unknown_shape_set": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes:\n      - nosuch #<\n",
                          "shapes[0]", "unknown shape set 'nosuch'"),
    "expect_disagrees": (MSE + "cases:\n" + CASE + "    expect: 161002 #<\n", "expect",
                         "says 161002 but the contract gives success"),
    "expect_disagrees_status": (MSE + "cases:\n  - product: atlas-training\n    dtypes: bfloat16\n"
                                "    reduction: none\n    shapes: [2, 2, 2]\n    expect: 161001 #<\n",
                                "expect", "contract gives 161002"),
    "null_in_matrix": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes:\n      - [2, null, 2] #<\n",
                       "shapes.self", "null"),
    "timing_not_bool": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes: [[2, 2, 2]]\n    timing: 1 #<\n",
                        "timing", "expected true or false, not 1"),
    "kl_batchmean_0d": (KL + "cases:\n  - product: atlas-a2 #<\n    dtypes: float32\n    reduction: batchmean\n"
                        "    shapes: [scalar, scalar, scalar]\n", None, "batchmean of a 0-d"),
}


def _bad_file(tmp_path: Path, name: str) -> Path:
    text = BAD[name][0].replace("{sentinel}", str(tmp_path / "pwned"))
    return write(tmp_path, f"{name}.yaml", text)


def _expected(path: Path, name: str) -> str:
    _, field, _ = BAD[name]
    head = f"{path}:{marked_line(BAD[name][0])}: "
    return head + (f"field '{field}': " if field else "")


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_file_is_one_error_naming_file_line_field(tmp_path: Path, name: str) -> None:
    path = _bad_file(tmp_path, name)
    with pytest.raises(FileError) as info:
        load_cases([path])
    e = info.value
    assert e.path == str(path)
    assert e.line == marked_line(BAD[name][0])
    assert e.field == BAD[name][1]
    assert str(e).startswith(_expected(path, name)), str(e)
    assert BAD[name][2] in str(e)
    assert "\n" not in str(e)
    assert not (tmp_path / "pwned").exists()      # the unsafe tag was never constructed


@pytest.mark.parametrize("name", sorted(BAD))
def test_cli_validate_reports_the_same_line(tmp_path: Path, name: str, capsys) -> None:
    path = _bad_file(tmp_path, name)
    assert cli.main(["cases", "validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: " + _expected(path, name)) and BAD[name][2] in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_cli_subprocess_exit_code_and_no_traceback(tmp_path: Path) -> None:
    path = _bad_file(tmp_path, "shape_2xx3")
    r = subprocess.run([sys.executable, "-m", "suite.cli", "cases", "validate", str(path)],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"error: {_expected(path, 'shape_2xx3')}malformed shape '2xx3' (write e.g. 2x3, 5, scalar)"


@pytest.mark.parametrize("name", ["shape_2xx3", "unsafe_tag", "duplicate_matrix_and_case", "kl_batchmean_0d"])
def test_pytest_cases_option_is_a_usage_error(pytester: pytest.Pytester, tmp_path: Path, name: str) -> None:
    """The plugin turns a bad --cases file into one usage error (exit 4), once."""
    path = _bad_file(tmp_path, name)
    pytester.makepyfile(test_x="from suite.plugin import check\nCASE_KIND = 'numbers'\n"
                                "def test_results(case, request):\n    check(request, case)\n")
    r = pytester.runpytest("-p", "suite.plugin", f"--cases={path}",
                           "-p", "no:cacheprovider", "-p", "no:benchmark")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    err = r.stderr.str()
    assert f"ERROR: {_expected(path, name)}" in err and BAD[name][2] in err
    out = r.stdout.str()
    assert "Traceback" not in err + out and "_hooks.py" not in out and "suite/plugin/__init__.py" not in out
    assert err.count("ERROR:") == 1


# -- valid files -------------------------------------------------------------------------------
def test_ids_are_stable_and_readable(tmp_path: Path) -> None:
    """Ids name goldens and reproducers: these exact strings must keep coming out of this YAML."""
    path = write(tmp_path, "kl.yaml", KL + """
cases:
  - {product: atlas-a3, dtypes: bfloat16, reduction: batchmean, logTarget: true, shapes: [2x3, 3, 2x3]}
  - {product: atlas-a2, dtypes: {gradOutput: float16, self: float32, target: float16, out: float16},
     reduction: none, shapes: [scalar, 2x1, 2x3], layout: strided, values: tiny}
""")
    cases, _ = load_cases([path])
    assert [c.id for c in cases] == [
        "KlDivBackward-bfloat16-atlas-a3-batchmean-logtarget-2x3.3.2x3-contiguous-uniform",
        "KlDivBackward-gfloat16.sfloat32.tfloat16-to-float16-atlas-a2-none-plaintarget-scalar.2x1.2x3-strided-tiny",
    ]
    assert cases[0].datakey == "KlDivBackward-bfloat16-batchmean-logtarget-2x3.3.2x3-uniform"
    # The seed is part of every stored golden: pinned, so a change to its derivation is noticed.
    mse, _ = load_cases([write(tmp_path, "m.yaml", MSE + "cases:\n" + CASE)])
    assert mse[0].id == "MseLossBackward-float32-atlas-a2-none-2x3.2x3.2x3-contiguous-uniform"
    assert mse[0].seed == 2314075533623648505


def test_seeds_and_inputs_do_not_depend_on_order_or_neighbours(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", MSE + """
matrices:
  - products: [atlas-a2]
    dtypes: [float32, float16]
    shapes: [[2x3, 2x3, 2x3]]
""")
    (tmp_path / "b").mkdir()
    b = write(tmp_path / "b", "a.yaml", MSE + """
matrices:
  - products: [atlas-a3, atlas-a2]
    dtypes: [bfloat16, float16, float32]
    reductions: [sum, mean, none]
    shapes: [[4, 4, 4], [2x3, 2x3, 2x3]]
    values: [tiny, uniform]
cases:
  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [5, 5, 5]}
""")
    first = {c.id: c for c in load_cases([a])[0]}
    second = {c.id: c for c in load_cases([b])[0]}
    assert len(first) == 6 and set(first) <= set(second)
    for cid, c in first.items():
        assert second[cid].seed == c.seed and second[cid].datakey == c.datakey
        x, y = draw_inputs(c), draw_inputs(second[cid])
        for n in x:
            assert np.array_equal(x[n].view(np.uint8), y[n].view(np.uint8))
    # Products and layouts share their data: same datakey, seed and inputs.
    a2 = second["MseLossBackward-float32-atlas-a2-none-2x3.2x3.2x3-contiguous-uniform"]
    a3 = second["MseLossBackward-float32-atlas-a3-none-2x3.2x3.2x3-contiguous-uniform"]
    assert a2.seed == a3.seed
    seeds = {c.datakey: c.seed for c in second.values()}
    assert len(set(seeds.values())) == len(seeds)         # distinct data, distinct seeds


def test_matrix_expansion_counts(tmp_path: Path) -> None:
    """Cross product minus exclusions; layouts that change nothing dropped; contract rejections
    kept once per (product, dtype, reduction, shapes)."""
    path = write(tmp_path, "m.yaml", MSE + """
matrices:
  - products: [atlas-training, atlas-a2]
    dtypes: [float32, bfloat16]
    reductions: [none, mean]
    shapes:
      - [2x3, 2x3, 2x3]
      - [3, 3, 3]
    layouts: [contiguous, transposed]
    values: [uniform, tiny]
    exclude:
      - {product: atlas-a2, reduction: mean}
""")
    cases, dropped = load_cases([path])
    want = 0
    for prod, dt, red, shp, lay, vs in itertools.product(
            ["atlas-training", "atlas-a2"], ["float32", "bfloat16"], ["none", "mean"],
            ["2x3", "3"], ["contiguous", "transposed"], ["uniform", "tiny"]):
        if prod == "atlas-a2" and red == "mean":
            continue                                          # excluded: not counted as dropped
        if lay == "transposed" and shp == "3":
            continue                                          # a 1-d transpose is contiguous
        rejected = dt == "bfloat16" and prod == "atlas-training"
        if rejected and (lay, vs) != ("contiguous", "uniform"):
            continue                                          # one rejection case per call shape
        want += 1
    assert len(cases) == want == 28
    assert dropped == 2 * 2 * 2 * 2 * 2 * 2 - 16 - want       # 64 points, 16 excluded
    rej = [c for c in cases if c.expect]
    assert len(rej) == 4
    assert all(c.expect == 161002 and c.product == "atlas-training" and c.out_dtype == "bfloat16"
               and "bfloat16" in c.why and "atlas-training" in c.why for c in rej)
    assert not any(c.determinism for c in rej)


def test_cases_option_takes_a_file_or_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "cases"
    folder.mkdir()
    m = write(folder, "mse.yaml", MSE + "cases:\n" + CASE)
    k = write(folder, "kl.yaml", KL + "cases:\n" + CASE)
    write(folder, "tolerances.yaml", "this: is not a case file\n")
    write(folder, "notes.txt", "ignored\n")
    by_folder = [c.id for c in load_cases([folder])[0]]
    by_files = [c.id for c in load_cases([k, m])[0]]
    assert by_folder == by_files and len(by_folder) == 2
    with pytest.raises(FileError, match="no such case file or folder"):
        load_cases([tmp_path / "nope.yaml"])
    with pytest.raises(FileError, match="duplicate case id"):
        load_cases([m, folder])                              # the same case from two files


def test_only_named_operators_files_are_expanded(tmp_path: Path) -> None:
    """load_cases(only=...) (pytest --op) gives exactly those operators' cases of the full load,
    in the same order, and reads another operator's file no further than its `op`: a mistake
    in that file's matrices is not reported (nor paid for)."""
    folder = tmp_path / "cases"
    folder.mkdir()
    write(folder, "mse.yaml", MSE + "cases:\n" + CASE)
    write(folder, "kl.yaml", KL + "cases:\n" + CASE)
    full = load_cases([folder])[0]
    only = load_cases([folder], only={"KlDivBackward"})[0]
    assert [c.id for c in only] == [c.id for c in full if c.op == "KlDivBackward"] and only
    assert load_cases([folder], only=set())[0] == []
    write(folder, "mse.yaml", BAD["matrix_key"][0].replace(" #<", ""))
    with pytest.raises(FileError, match="unknown key"):
        load_cases([folder])
    assert [c.id for c in load_cases([folder], only={"KlDivBackward"})[0]] == [c.id for c in only]
    write(folder, "kl.yaml", "op: NoSuchLoss\n")                # the op itself is always checked
    with pytest.raises(FileError, match="unknown operator"):
        load_cases([folder], only={"MseLossBackward"})


def test_project_case_files_load() -> None:
    cases, _ = load_cases([ROOT / "cases"])
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)) > 1000
    bf16_training = [c for c in cases if c.product == "atlas-training" and "bfloat16" in c.dtype_token]
    # every one rejected: 161002 for its dtype, or its operator's NULL status where a tensor is NULL
    # (checked first; BinaryCrossEntropy's is 561103)
    assert bf16_training and all(c.expect == 161002 if None not in dict(c.shapes).values() and c.out_shape is not None
                                 else c.expect != 0 for c in bf16_training)


def test_shapes_that_yaml_1_1_reads_as_numbers_stay_shapes(tmp_path: Path) -> None:
    """YAML 1.1 reads 0x3 as hexadecimal 3 and 012 as octal 10: an empty 0x3 shape must not turn
    into the 1-d shape (3,), nor 0x10 into (16,)."""
    path = write(tmp_path, "hexlike.yaml", """
        op: MseLossBackward
        matrices:
          - products: [atlas-a2]
            dtypes: [float32]
            reductions: [none]
            shapes:
              - [0x3, 0x3, 0x3]
              - [0x10, 1x10, 0x10]
        """)
    cases, _ = load_cases([path])
    assert sorted({tuple(c.shapes.values()) for c in cases}) == [((0, 3),) * 3, ((0, 10), (1, 10), (0, 10))]


def test_a_matrix_is_in_the_timing_set_only_when_it_says_timing_true(tmp_path: Path) -> None:
    """`timing: true` puts a matrix's numeric cases in the timing set (pytest --timing); a matrix
    that does not say so, or says false, puts none there."""
    body = "matrices:\n  - dtypes: [float32]\n    reductions: [none, mean]\n    shapes: [[2, 2, 2]]\n"
    for extra, timed in (("", False), ("    timing: false\n", False), ("    timing: true\n", True)):
        cases = load_cases([write(tmp_path, "t.yaml", MSE + body + extra)])[0]
        numbers = [c for c in cases if c.expect == 0]
        assert len(numbers) >= 2 and {c.timing for c in numbers} == {timed}, extra
        assert not any(c.timing for c in cases if c.expect != 0)      # a rejection is never timed
