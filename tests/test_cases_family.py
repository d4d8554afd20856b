"""Families (suite/cases/family.py, docs/cases.md "Families"): a case file that takes its shape sets
and matrices from cases/families/<name>.yaml expands to exactly the cases it would written out,
for operators of two and three inputs alike; every mistake in the family's file or in the new keys
is one FileError naming the file it is in, its line and its field."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from suite.cases.load import load_cases
from suite.cli import main as cli
from suite.common.yamlfile import FileError
from tests.core_helpers import marked_line, write

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("cases_dump", ROOT / "benchmarks" / "cases_dump.py")
cases_dump = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases_dump)

FAMILY = """\
shapes:
  ranks:
    - {each: scalar}
    - {each: 2x3}
  tiles:
    generate:
      each: [N]
      N: [block + 1, 2*cores + 1]
matrices:
  - name: every dtype
    products: [atlas-a2, atlas-training]
    dtypes: [float32, float16]
    shapes: [ranks, tiles]
    determinism: true
  - name: views
    products: [atlas-a2]
    dtypes: [float32]
    reductions: [none, mean]
    shapes: [ranks]
    layouts: [transposed, strided]
"""
USES = """\
matrices:
  - use: every dtype
  - use: views
    dtypes: [float16]
    reductions: [sum]
"""
WRITTEN = {  # the same matrices written out, for an operator of 2 inputs and one of 3
    2: """\
shapes:
  ranks:
    - [scalar, scalar]
    - [2x3, 2x3]
  tiles:
    generate:
      shapes: [[N], [N]]
      N: [block + 1, 2*cores + 1]
""",
    3: """\
shapes:
  ranks:
    - [scalar, scalar, scalar]
    - [2x3, 2x3, 2x3]
  tiles:
    generate:
      shapes: [[N], [N], [N]]
      N: [block + 1, 2*cores + 1]
""",
}
WRITTEN_MATRICES = """\
matrices:
  - name: every dtype
    products: [atlas-a2, atlas-training]
    dtypes: [float32, float16]
    shapes: [ranks, tiles]
    determinism: true
  - name: views
    products: [atlas-a2]
    dtypes: [float16]
    reductions: [sum]
    shapes: [ranks]
    layouts: [transposed, strided]
"""


def _folder(tmp: Path, name: str, case_text: str, family_text: str = FAMILY) -> Path:
    folder = tmp / name
    (folder / "families").mkdir(parents=True)
    write(folder / "families", "fam.yaml", family_text)
    write(folder, "op.yaml", case_text)
    return folder


@pytest.mark.parametrize("op,inputs", [("MseLoss", 2), ("MseLossBackward", 3)])
def test_a_family_expands_to_what_the_file_would_written_out(tmp_path: Path, op: str, inputs: int) -> None:
    shared = _folder(tmp_path, "shared", f"op: {op}\nfamily: fam\n" + USES)
    own = tmp_path / "own"
    own.mkdir()
    write(own, "op.yaml", f"op: {op}\n" + WRITTEN[inputs] + WRITTEN_MATRICES)
    a, b = cases_dump.lines(shared), cases_dump.lines(own)
    assert len(a) > 10 and a == b          # every field, in load order too (the first line's hash)
    cases, _ = load_cases([shared])
    assert any(c.generated for c in cases) and any(c.layout == "strided" for c in cases)
    assert {c.source.rpartition(":")[0] for c in cases} == {str(shared / "op.yaml")}


def test_a_set_of_the_files_own_wins_over_the_familys(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "f", "op: MseLoss\nfamily: fam\nshapes:\n  ranks:\n    - [7, 7]\n"
                                    "matrices:\n  - use: views\n")
    cases, _ = load_cases([folder])
    assert {c.shapes["self"] for c in cases} == {(7,)}


def test_the_project_families_are_named_and_used() -> None:
    """Each family file is some case file's family, and each of its matrices is used (or it is
    content no case file shares)."""
    import yaml
    files = [yaml.safe_load(p.read_text()) for p in (ROOT / "cases").glob("*.yaml")]
    for fam in (ROOT / "cases" / "families").glob("*.yaml"):
        users = [d for d in files if isinstance(d, dict) and d.get("family") == fam.stem]
        assert users, f"{fam} is no case file's family"
        used = {m.get("use") for d in users for m in d.get("matrices") or []}
        names = {m["name"] for m in yaml.safe_load(fam.read_text()).get("matrices") or []}
        assert names <= used, f"{fam}: matrices no case file uses: {sorted(names - used)}"


# name -> (case file text, family file text, the file the error names, field, words)
OP = "op: MseLossBackward\nfamily: fam\n"
BAD = {
    "no_family": ("op: MseLossBackward\nfamily: nosuch #<\n", FAMILY, "op", "family", "no family 'nosuch'"),
    "family_path": ("op: MseLossBackward\nfamily: ../fam #<\n", FAMILY, "op", "family", "a family's name"),
    "use_without_family": ("op: MseLossBackward\nmatrices:\n  - use: views #<\n", FAMILY, "op", "use",
                           "give the file a `family:`"),
    "use_unknown": (OP + "matrices:\n  - use: nosuch #<\n", FAMILY, "op", "use", "no matrix 'nosuch'"),
    "use_override_key": (OP + "matrices:\n  - use: views\n    colour: red #<\n", FAMILY, "op", "colour", "unknown key"),
    "use_override_bad_dtype": (OP + "matrices:\n  - use: views\n    dtypes: [float64] #<\n", FAMILY, "op",
                               "dtypes[0]", "unknown dtype 'float64'"),
    "family_key": (OP, "colour: red #<\n", "family", "colour", "unknown key"),
    "family_shapes_a_list": (OP, "shapes: [] #<\n", "family", "shapes", "is a mapping of set name"),
    "family_matrices_a_mapping": (OP, "matrices: {} #<\n", "family", "matrices", "is a list"),
    "family_not_each": (OP, "shapes:\n  ranks:\n    - [2x3, 2x3, 2x3] #<\n", "family", "shapes.ranks[0]",
                        "{each: SHAPE}"),
    "family_generator_shapes": (OP, "shapes:\n  t:\n    generate:\n      shapes: [[N], [N], [N]] #<\n      N: [1]\n",
                                "family", "shapes.t.generate.shapes", "each: [template]"),
    "family_matrix_no_name": (OP, "matrices:\n  - dtypes: [float32] #<\n    shapes: [ranks]\n", "family", "name",
                              "has a name"),
    "family_matrix_twice": (OP, "matrices:\n  - name: a\n    shapes: [x]\n  - name: a #<\n    shapes: [y]\n",
                            "family", "name", "duplicate matrix name 'a'"),
    "family_matrix_uses": (OP, "matrices:\n  - name: a\n    use: b #<\n", "family", "use", "uses none"),
    # found only when an operator's matrix reads them: said with the operator and the line that took it
    "family_bad_shape": (OP + "matrices:\n  - use: a\n", "shapes:\n  s:\n    - {each: 2xx3} #<\n"
                         "matrices:\n  - name: a\n    dtypes: [float32]\n    shapes: [s]\n", "family",
                         "shapes.each", "(for MseLossBackward: "),
    "family_bad_dtype": (OP + "matrices:\n  - use: a\n", "matrices:\n  - name: a\n    dtypes:\n      - float32\n"
                         "      - float64 #<\n    shapes: [[2, 2, 2]]\n", "family", "dtypes[1]",
                         "unknown dtype 'float64' (known: "),
    "family_input_name": (OP + "matrices:\n  - use: a\n", "matrices:\n  - name: a\n    dtypes:\n"
                          "      - {inputs: float32, weight: float16} #<\n    shapes: [[2, 2, 2]]\n", "family",
                          "weight", "unknown key"),
    "family_matrix_key": (OP + "matrices:\n  - use: a\n", "matrices:\n  - name: a\n    dtypes: [float32]\n"
                          "    shapes: [[2, 2, 2]]\n    colour: red #<\n", "family", "colour", "unknown key"),
    "family_generator_name": (OP + "matrices:\n  - use: a\n", "shapes:\n  t:\n    generate:\n      each: [N] #<\n"
                              "      N: [nosuch + 1]\nmatrices:\n  - name: a\n    dtypes: [float32]\n    shapes: [t]\n",
                              "family", "shapes.t.generate", "names 'nosuch'"),
    "family_inline_shape": (OP + "matrices:\n  - use: a\n", "matrices:\n  - name: a\n    dtypes: [float32]\n"
                            "    shapes:\n      - [2x3, 2xx3, 2x3] #<\n", "family", "shapes.self", "malformed shape"),
    "family_set_unknown": (OP + "matrices:\n  - use: a\n", "matrices:\n  - name: a\n    dtypes: [float32]\n"
                           "    shapes:\n      - nosuch #<\n", "family", "shapes[0]", "unknown shape set 'nosuch'"),
}


def _bad(tmp_path: Path, name: str):
    case_text, family_text, where, field, words = BAD[name]
    folder = _folder(tmp_path, "f", case_text, family_text)
    path = folder / ("op.yaml" if where == "op" else "families/fam.yaml")
    line = marked_line(case_text if where == "op" else family_text)
    return folder, path, line, field, words


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_family_input_is_one_error_naming_file_line_field(tmp_path: Path, name: str) -> None:
    folder, path, line, field, words = _bad(tmp_path, name)
    assert line is not None
    with pytest.raises(FileError) as info:
        load_cases([folder])
    e = info.value
    assert (e.path, e.line, e.field) == (str(path), line, field), str(e)
    assert str(e).startswith(f"{path}:{line}: field '{field}': ") and words in str(e), str(e)
    assert "\n" not in str(e)
    # what a family's file holds is checked for the operator that uses it: said with the line that took it
    assert (f"(for MseLossBackward: {folder / 'op.yaml'}:" in str(e)) == (name in USED_FOR), str(e)


USED_FOR = {"family_bad_shape", "family_bad_dtype", "family_input_name", "family_matrix_key",
            "family_generator_name", "family_set_unknown", "family_inline_shape"}


@pytest.mark.parametrize("name", ["use_unknown", "family_bad_dtype"])
def test_cli_validate_reports_the_same_line(tmp_path: Path, name: str, capsys) -> None:
    folder, path, line, field, words = _bad(tmp_path, name)
    assert cli.main(["cases", "validate", str(folder / "op.yaml")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: {path}:{line}: field '{field}': ") and words in err
    assert err.count("\n") == 1
