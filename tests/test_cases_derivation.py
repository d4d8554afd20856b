"""What a case file derives (suite/cases/): for each call, the status the contract expects and
the kinds of test that run it, at every boundary of the contract (rank 8 against 9, empty tensors,
the dtypes each product takes, broadcasting or not, NULL tensors, the operator's own attributes),
what a matrix keeps and drops, and every mistake in a file as one error naming the file, the line
and the field, the field never first in its mapping. On a made-up operator registered for the
test; and, for every registered operator, each row of its page's phase-1 table written as a case."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from suite.cases import load as cases_load
from suite.cases import model as cases_model
from suite.cases import expand as cases_expand
from suite.cases import ids as cases_ids
from suite import ops
from suite.common import dtypes
from suite.values import sets as V
from suite.cases.model import NUMBERS, STORED_LIMIT, Kind, kinds_of
from suite.cases.load import load_cases, load_file
from suite.ops.base import MAX_RANK, Attr, Operator, Signature, broadcast, element_inputs
from suite.common.yamlfile import FileError
from suite.contract import PRODUCTS
from tests.core_helpers import marked_line

NULLPTR, INVALID = 161001, 161002

# float32 only on the oldest product, no bfloat16 before atlas-a2: three different dtype lists
PRODUCT_DTYPES = {"atlas-training": frozenset({"float32"}), "atlas-inference": frozenset({"float32", "float16"}),
                  "atlas-a2": frozenset({"float32", "float16", "bfloat16"}),
                  "atlas-a3": frozenset({"float32", "float16", "bfloat16"})}


class Derive(Operator):
    """out = x * y (* w), on the broadcast shape; w optional. Phase 1 in this order: NULL, each
    tensor's dtype on the product, x's dtype against y's, reduction, rank (out too), broadcasting,
    out's shape. A negative `scale` is outside the documented contract."""

    name = "DeriveTestOp"
    inputs = ("x", "y", "w")
    optional = ("w",)
    primary = "y"                     # not the first input: a dtype mapping's default comes from y
    reductions = {"none": 0, "mean": 1, "sum": 2}
    product_dtypes = PRODUCT_DTYPES
    attributes = (Attr("flip", bool, (False, True), False, lambda v: "flip" if v else "keep"),
                  Attr("scale", float, (1.0,), 1.0, lambda v: f"s{v:g}"),
                  Attr("steps", int, (1,), 1, lambda v: f"n{v}"))
    value_sets = {"uniform": V.uniform_set, "tiny": V.uniform_set}
    tiling_names = ("tile",)

    def tiling(self, hw, dts):
        return {"tile": 100}

    def out_shape(self, shapes, attrs):
        if shapes.get("x") is None or shapes.get("y") is None:
            return None
        return broadcast(*(s for s in shapes.values() if s is not None))

    def b_shape(self, shapes):
        return broadcast(*shapes.values())

    def check(self, sig: Signature):
        bad = self._nulls(sig) or self._unsupported_dtype(sig, [*self.inputs, "out"])
        if bad:
            return bad
        if sig.dtypes["x"] != sig.dtypes["y"]:
            return INVALID, f"x dtype {sig.dtypes['x']} differs from y's {sig.dtypes['y']}"
        if sig.attrs["reduction"] not in (0, 1, 2):
            return INVALID, f"reduction {sig.attrs['reduction']} is not 0, 1 or 2"
        bad = self._rank(sig, with_out=True)
        if bad:
            return bad
        b = broadcast(*(s for s in sig.shapes.values() if s is not None))
        if b is None:
            return INVALID, "x, y and w do not broadcast together"
        if tuple(sig.out_shape) != b:
            return INVALID, f"out shape {tuple(sig.out_shape)} is not the broadcast shape {b}"
        return 0, ""

    def outside_contract(self, sig: Signature) -> Optional[str]:
        return "a negative scale is undocumented" if sig.attrs.get("scale", 1.0) < 0 else None

    def terms(self, x, attrs, shapes):
        return x["x"] * x["y"]

    def reference_terms(self, x, attrs, shapes):
        return x["x"] * x["y"]

    def describe(self, x, attrs, out_shape, index):
        return element_inputs(x, out_shape, index)


class Lax(Derive):
    """An operator whose check accepts anything, NULL tensors too: the loader still refuses a
    numeric case with a NULL tensor."""

    name = "LaxTestOp"

    def check(self, sig: Signature):
        return 0, ""


class Unary(Derive):
    """One input: a case's dtype token has one dtype to name."""

    name = "UnaryTestOp"
    inputs = ("x",)
    optional = ()
    primary = "x"
    attributes = ()

    def out_shape(self, shapes, attrs):
        return shapes.get("x")

    def check(self, sig: Signature):
        return self._nulls(sig) or self._unsupported_dtype(sig, ["x", "out"]) or (0, "")


@pytest.fixture(autouse=True)
def made_up_operators(monkeypatch):
    for op in (Derive(), Lax(), Unary()):
        monkeypatch.setitem(ops.OPERATORS, op.name, op)


def _write(tmp_path: Path, text: str, name: str = "derive.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def _load(tmp_path: Path, text: str) -> Tuple[List[cases_model.Case], int]:
    return load_cases([_write(tmp_path, text)])


def _single(tmp_path: Path, case: str, op: str = "DeriveTestOp") -> cases_model.Case:
    cs, dropped = _load(tmp_path, f"op: {op}\ncases:\n  - {{{case}}}\n")
    assert len(cs) == 1 and dropped == 0
    return cs[0]


BASE = "product: atlas-a2, dtypes: float32, reduction: none"
R8, R9, R16 = "1x" * 6 + "2x3", "1x" * 7 + "2x3", "1x" * 14 + "2x3"
TYPE = "(supported: float32)"

# a single case (after BASE unless it names a product) -> (expect, why, out_shape)
SINGLE = {
    "accepted": (f"{BASE}, shapes: [2x3, 2x3, 2x3]", 0, "", (2, 3)),
    "rank 8 input": (f"{BASE}, shapes: [{R8}, 2x3, 2x3]", 0, "", (1,) * 6 + (2, 3)),
    "rank 9 input x": (f"{BASE}, shapes: [{R9}, 2x3, 2x3]", INVALID, "x has 9 dimensions (at most 8)", (1,) * 7 + (2, 3)),
    "rank 9 optional w": (f"{BASE}, shapes: [2x3, 2x3, {R9}]", INVALID, "w has 9 dimensions (at most 8)", (1,) * 7 + (2, 3)),
    "rank 9 out only": (f"{BASE}, shapes: [2x3, 2x3, 2x3], out_shape: {R9}", INVALID,
                        "out has 9 dimensions (at most 8)", (1,) * 7 + (2, 3)),
    "rank 8 out, explicit": (f"{BASE}, shapes: [{R8}, 3, 3], out_shape: {R8}", 0, "", (1,) * 6 + (2, 3)),
    "rank 16 parses, rejected": (f"{BASE}, shapes: [{R16}, 2x3, 2x3]", INVALID, "x has 16 dimensions (at most 8)",
                                 (1,) * 14 + (2, 3)),
    "empty": (f"{BASE}, shapes: [0x3, 0x3, 0x3]", 0, "", (0, 3)),
    "empty broadcast": (f"{BASE}, shapes: [0x3, 3, 1]", 0, "", (0, 3)),
    # (a call whose shapes do not broadcast has no broadcast shape: out takes the primary input's, y)
    "empty against 2": (f"{BASE}, shapes: [0x3, 2x3, null]", INVALID, "x, y and w do not broadcast together", (2, 3)),
    "empty 1-d": (f"{BASE}, shapes: [0, 0, null]", 0, "", (0,)),
    "0-d": (f"{BASE}, shapes: [scalar, scalar, scalar]", 0, "", ()),
    "0-d with empty": (f"{BASE}, shapes: [scalar, 0x3, null]", 0, "", (0, 3)),
    "broadcast both ways": (f"{BASE}, shapes: [2x1, 1x3, 3]", 0, "", (2, 3)),
    "broadcast fails": (f"{BASE}, shapes: [2x3, 2, null]", INVALID, "x, y and w do not broadcast together", (2,)),
    "broadcast fails on w": (f"{BASE}, shapes: [2x3, 2x3, 2]", INVALID, "x, y and w do not broadcast together", (2, 3)),
    "out given, right": (f"{BASE}, shapes: [2x1, 3, null], out_shape: 2x3", 0, "", (2, 3)),
    "out given, transposed": (f"{BASE}, shapes: [2x1, 3, null], out_shape: 3x2", INVALID,
                              "out shape (3, 2) is not the broadcast shape (2, 3)", (3, 2)),
    "out given, x's shape": (f"{BASE}, shapes: [2x1, 3, null], out_shape: 2x1", INVALID,
                             "out shape (2, 1) is not the broadcast shape (2, 3)", (2, 1)),
    "x NULL": (f"{BASE}, shapes: [null, 2x3, 2x3]", NULLPTR, "x is NULL", (2, 3)),
    "y NULL": (f"{BASE}, shapes: [2x3, null, 2x3]", NULLPTR, "y is NULL", ()),
    "x and y NULL": (f"{BASE}, shapes: [null, null, null]", NULLPTR, "x is NULL", ()),
    "w NULL": (f"{BASE}, shapes: [2x3, 2x3, null]", 0, "", (2, 3)),
    "out NULL": (f"{BASE}, shapes: [2x3, 2x3, 2x3], out_shape: null", NULLPTR, "out is NULL", None),
    "NULL before a bad dtype": ("product: atlas-training, dtypes: bfloat16, reduction: 9, shapes: [null, 2x3, 7]",
                                NULLPTR, "x is NULL", (2, 3)),
    "float16 on atlas-training": ("product: atlas-training, dtypes: float16, reduction: none, shapes: [2, 2, 2]",
                                  INVALID, f"x dtype float16 is not supported on atlas-training {TYPE}", (2,)),
    "float16 on atlas-inference": ("product: atlas-inference, dtypes: float16, reduction: none, shapes: [2, 2, 2]",
                                   0, "", (2,)),
    "bfloat16 on atlas-inference": ("product: atlas-inference, dtypes: bfloat16, reduction: none, shapes: [2, 2, 2]",
                                    INVALID, "x dtype bfloat16 is not supported on atlas-inference "
                                    "(supported: float16, float32)", (2,)),
    "bfloat16 on atlas-a3": ("product: atlas-a3, dtypes: bf16, reduction: none, shapes: [2, 2, 2]", 0, "", (2,)),
    "w's dtype on atlas-training": ("product: atlas-training, dtypes: {inputs: float32, w: float16}, reduction: none, "
                                    "shapes: [2, 2, 2]", INVALID,
                                    f"w dtype float16 is not supported on atlas-training {TYPE}", (2,)),
    "w NULL, its dtype ignored": ("product: atlas-training, dtypes: {inputs: float32, w: float16}, reduction: none, "
                                  "shapes: [2, 2, null]", 0, "", (2,)),
    "out's dtype on atlas-training": ("product: atlas-training, dtypes: {inputs: float32, out: float16}, "
                                      "reduction: none, shapes: [2, 2, 2]", INVALID,
                                      f"out dtype float16 is not supported on atlas-training {TYPE}", (2,)),
    "x against y": ("product: atlas-a2, dtypes: {x: float16, y: float32}, reduction: none, shapes: [2, 2, 2]",
                    INVALID, "x dtype float16 differs from y's float32", (2,)),
    "a raw reduction": ("product: atlas-a2, dtypes: float32, reduction: 3, shapes: [2, 2, 2]", INVALID,
                        "reduction 3 is not 0, 1 or 2", (2,)),
    "a raw reduction it knows": ("product: atlas-a2, dtypes: float32, reduction: 2, shapes: [2, 2, 2]", 0, "", (2,)),
    "expect agrees (numbers)": (f"{BASE}, shapes: [2, 2, 2], expect: 0", 0, "", (2,)),
    "expect agrees (status)": (f"{BASE}, shapes: [2, 2, 2], out_shape: 3, expect: 161002", INVALID,
                               "out shape (3,) is not the broadcast shape (2,)", (3,)),
}


@pytest.mark.parametrize("name", list(SINGLE))
def test_the_status_each_single_case_expects(tmp_path: Path, name: str) -> None:
    text, expect, why, out_shape = SINGLE[name]
    case = _single(tmp_path, text)
    assert (case.expect, case.why, case.out_shape) == (expect, why, out_shape)
    assert kinds_of(case) == [Kind.NUMBERS if expect == NUMBERS else Kind.REJECTION]
    assert case.determinism is False


def test_the_contract_decides_not_the_loader(tmp_path: Path) -> None:
    """Every single case's expectation is the operator's check of the call the case makes."""
    op = Derive()
    for name, (text, expect, why, _) in SINGLE.items():
        case = _single(tmp_path, text)
        assert op.check(case.signature) == (expect, why), name


@pytest.mark.parametrize("text,kinds,determinism", [
    (f"{BASE}, shapes: [2, 2, 2], determinism: true", [Kind.NUMBERS, Kind.DETERMINISM], True),
    (f"{BASE}, shapes: [2, 2, 2], determinism: false", [Kind.NUMBERS], False),
    (f"{BASE}, shapes: [0x2, 2, 2], determinism: true", [Kind.NUMBERS, Kind.DETERMINISM], True),
    (f"{BASE}, shapes: [2, 2, 3], determinism: true", [Kind.REJECTION], False),     # rejected: never rerun
    (f"{BASE}, shapes: [null, 2, 2], determinism: true", [Kind.REJECTION], False),
])
def test_the_kinds_of_test_a_case_runs_under(tmp_path: Path, text: str, kinds: list, determinism: bool) -> None:
    case = _single(tmp_path, text)
    assert kinds_of(case) == kinds and case.determinism is determinism
    assert [str(k) for k in kinds] == [k.value for k in kinds]


def test_what_a_single_case_holds(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        op: DeriveTestOp
        cases:
          - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2x3, 3, 1]}
          - product: atlas-a3
            dtypes: {y: float16, w: float32}
            reduction: sum
            shapes: [2x3, 3, null]
            flip: true
            scale: 2
            steps: 4
            layout: strided
            values: tiny
          - {product: atlas-a2, dtypes: {inputs: float32, out: float16}, reduction: 7, shapes: [2, 2, 2], out_shape: 2}
        """)
    a, b, c = load_file(path).cases
    assert a.id == "DeriveTestOp-float32-atlas-a2-none-keep-s1-n1-2x3.3.1-contiguous-uniform"
    assert (a.source, a.layout, a.values, dict(a.attrs)) == (
        f"{path}:3", "contiguous", "uniform", {"reduction": 0, "flip": False, "scale": 1.0, "steps": 1})
    assert a.datakey == "DeriveTestOp-float32-none-keep-s1-n1-2x3.3.1-uniform"
    assert dict(a.shapes) == {"x": (2, 3), "y": (3,), "w": (1,)} and a.tier == "default" and not a.generated
    # y is the primary input: the mapping's default dtype, and out's; w NULL has no dtype
    assert dict(b.dtypes) == {"x": "float16", "y": "float16", "w": None} and b.out_dtype == "float16"
    assert dict(b.attrs) == {"reduction": 2, "flip": True, "scale": 2.0, "steps": 4}
    assert isinstance(b.attrs["scale"], float)
    assert b.id == "DeriveTestOp-float16-atlas-a3-sum-flip-s2-n4-2x3.3.null-strided-tiny"
    assert (b.expect, b.source) == (0, f"{path}:4")
    assert c.id == "DeriveTestOp-float32-to-float16-atlas-a2-reduction7-keep-s1-n1-2.2.2-out2-contiguous-uniform"
    assert (c.expect, c.why) == (INVALID, "reduction 7 is not 0, 1 or 2")
    assert c.datakey == "DeriveTestOp-float32-to-float16-reduction7-keep-s1-n1-2.2.2-out2-uniform"


def test_mixed_dtypes_name_each_input_in_the_id(tmp_path: Path) -> None:
    case = _single(tmp_path, "product: atlas-a2, dtypes: {x: float16, y: float16, w: float32, out: float32}, "
                             "reduction: none, shapes: [2, 2, 2]")
    assert case.dtype_token == "xfloat16.yfloat16.wfloat32-to-float32"
    assert case.id.startswith("DeriveTestOp-xfloat16.yfloat16.wfloat32-to-float32-atlas-a2-none-")
    assert case.expect == 0


def test_an_operator_of_one_input(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        op: UnaryTestOp
        cases:
          - {product: atlas-a2, dtypes: float16, reduction: none, shapes: [2x3]}
          - {product: atlas-a2, dtypes: {x: float16, out: float32}, reduction: sum, shapes: [scalar]}
          - {product: atlas-training, dtypes: bfloat16, reduction: none, shapes: [2]}
        """)
    a, b, c = load_cases([path])[0]
    assert (a.id, a.dtype_token, a.expect) == ("UnaryTestOp-float16-atlas-a2-none-2x3-contiguous-uniform", "float16", 0)
    assert (b.id, b.expect) == ("UnaryTestOp-float16-to-float32-atlas-a2-sum-scalar-contiguous-uniform", 0)
    assert (c.expect, c.why) == (INVALID, f"x dtype bfloat16 is not supported on atlas-training {TYPE}")


def test_a_numeric_case_never_has_a_null_required_tensor(tmp_path: Path) -> None:
    """Even where an operator's check would accept it (LaxTestOp accepts anything). The error is
    at the case's first line, naming shapes."""
    path = _write(tmp_path, "op: LaxTestOp\ncases:\n  - product: atlas-a2\n    dtypes: float32\n"
                            "    reduction: none\n    shapes: [null, 2, 2]\n")
    with pytest.raises(FileError) as e:
        load_cases([path])
    assert str(e.value) == f"{path}:3: field 'shapes': NULL tensors are for rejection cases"
    for shapes, extra in (("[null, 2, 2]", ""), ("[2, 2, 2]", ", out_shape: null")):
        path = _write(tmp_path, f"op: LaxTestOp\ncases:\n  - {{{BASE}, shapes: {shapes}{extra}}}\n")
        with pytest.raises(FileError) as e:
            load_cases([path])
        assert str(e.value) == f"{path}:3: field 'shapes': NULL tensors are for rejection cases"
    assert _single(tmp_path, f"{BASE}, shapes: [2, 2, null]", op="LaxTestOp").expect == 0   # optional: fine


# -- matrices ----------------------------------------------------------------------------------
def _statuses(cases: List[cases_model.Case]) -> Dict[Tuple[str, str], int]:
    return {(c.product, c.dtype_token): c.expect for c in cases}


def test_each_dtype_on_each_product(tmp_path: Path) -> None:
    cs, dropped = _load(tmp_path, """
        op: DeriveTestOp
        matrices:
          - dtypes: [float32, float16, bfloat16]
            reductions: [none]
            flip: [false]
            shapes: [[2x3, 2x3, 2x3]]
        """)
    assert dropped == 0 and _statuses(cs) == {
        ("atlas-training", "float32"): 0, ("atlas-training", "float16"): INVALID,
        ("atlas-training", "bfloat16"): INVALID,
        ("atlas-inference", "float32"): 0, ("atlas-inference", "float16"): 0,
        ("atlas-inference", "bfloat16"): INVALID,
        ("atlas-a2", "float32"): 0, ("atlas-a2", "float16"): 0, ("atlas-a2", "bfloat16"): 0,
        ("atlas-a3", "float32"): 0, ("atlas-a3", "float16"): 0, ("atlas-a3", "bfloat16"): 0}
    for c in cs:
        allowed = ", ".join(sorted(PRODUCT_DTYPES[c.product]))
        want = "" if c.expect == 0 else f"x dtype {c.out_dtype} is not supported on {c.product} (supported: {allowed})"
        assert c.why == want


def test_a_rejection_is_made_once_per_call(tmp_path: Path) -> None:
    """In the first layout that applies to its shapes and the first value set; numbers in all."""
    cs, dropped = _load(tmp_path, """
        op: DeriveTestOp
        matrices:
          - products: [atlas-training]
            dtypes: [float32, bfloat16]
            reductions: [none]
            flip: [false]
            shapes: [[3, 3, 3], [2x3, 2x3, 2x3]]
            layouts: [transposed, strided, contiguous]
            values: [tiny, uniform]
            determinism: true
        """)
    got = sorted((c.dtype_token, c.shapes["x"], c.layout, c.values, c.expect, c.determinism) for c in cs)
    numbers = [("float32", s, lay, v, 0, True) for s, lays in (((3,), ("strided", "contiguous")),
                                                               ((2, 3), ("transposed", "strided", "contiguous")))
               for lay in lays for v in ("tiny", "uniform")]
    rejections = [("bfloat16", (3,), "strided", "tiny", INVALID, False),       # a 1-d transpose changes nothing
                  ("bfloat16", (2, 3), "transposed", "tiny", INVALID, False)]
    assert got == sorted(numbers + rejections)
    assert dropped == 2 * 2 * 3 * 2 - len(got)


def test_rejections_of_the_first_layout_that_applies_only(tmp_path: Path) -> None:
    cs, _ = _load(tmp_path, """
        op: DeriveTestOp
        matrices:
          - {products: [atlas-training], dtypes: [bfloat16], reductions: [none], flip: [false],
             shapes: [[3, 3, 3]], layouts: [transposed, contiguous]}
        """)
    assert [(c.layout, c.expect) for c in cs] == [("contiguous", INVALID)]


@pytest.mark.parametrize("shapes,elements,kept", [
    ("[16383, 1, null]", STORED_LIMIT - 1, True),
    ("[16383, 1, 1]", STORED_LIMIT, True),
    ("[16384, 1, null]", STORED_LIMIT + 1, False),
])
def test_rejections_of_small_shapes_only(tmp_path: Path, shapes: str, elements: int, kept: bool) -> None:
    """The inputs' and the broadcast shape's elements, up to STORED_LIMIT (2^15)."""
    cs, dropped = _load(tmp_path, f"""
        op: DeriveTestOp
        matrices:
          - {{products: [atlas-training, atlas-a2], dtypes: [bfloat16], reductions: [none], flip: [false],
             shapes: [{shapes}]}}
        """)
    assert STORED_LIMIT == 32768 and cs[-1].elements == elements and cs[-1].product == "atlas-a2"
    assert [c.expect for c in cs] == ([INVALID, 0] if kept else [0]) and dropped == (0 if kept else 1)


def test_what_a_matrix_drops_and_what_it_excludes(tmp_path: Path) -> None:
    cs, dropped = _load(tmp_path, """
        op: DeriveTestOp
        matrices:
          - products: [atlas-a2, atlas-a3]
            dtypes: [float32]
            reductions: [none, sum]
            flip: [false, true]
            scale: [1, -1]
            shapes: [[2x3, 2x3, 2x3]]
            exclude:
              - {product: atlas-a3, reduction: sum}
              - {flip: true, product: atlas-a2}
        """)
    got = sorted((c.product, c.reduction, c.attrs["flip"]) for c in cs)
    assert got == [("atlas-a2", 0, False), ("atlas-a2", 2, False), ("atlas-a3", 0, False), ("atlas-a3", 0, True)]
    assert all(c.attrs["scale"] == 1.0 for c in cs)
    assert dropped == 4            # scale -1 is outside the contract (excluded points are not counted)


def test_an_exclusion_on_each_axis(tmp_path: Path) -> None:
    """dtype as the id writes it, a shape set by name or 'inline', layout and value set."""
    cs, dropped = _load(tmp_path, """
        op: DeriveTestOp
        shapes:
          s: [[2, 2, 2]]
        matrices:
          - products: [atlas-a2]
            dtypes: [float32, {inputs: float16, out: float32}]
            reductions: [none]
            flip: [false]
            shapes: [s, [3, 3, 3]]
            layouts: [contiguous, strided]
            values: [uniform, tiny]
            exclude:
              - {dtype: float16-to-float32, shapes: s}
              - {shapes: inline, layout: strided}
              - {values: tiny, dtype: float32, shapes: s}
        """)
    assert dropped == 0 and sorted((c.dtype_token, c.shapes["x"], c.layout, c.values) for c in cs) == [
        ("float16-to-float32", (3,), "contiguous", "tiny"), ("float16-to-float32", (3,), "contiguous", "uniform"),
        ("float32", (2,), "contiguous", "uniform"), ("float32", (2,), "strided", "uniform"),
        ("float32", (3,), "contiguous", "tiny"), ("float32", (3,), "contiguous", "uniform")]


def test_a_matrix_skips_the_products_the_operator_does_not_serve(tmp_path: Path) -> None:
    """Issue 44: DeriveTestOp's product_dtypes name four families, not ascend-950 nor
    atlas-200i-500-a2. A matrix over every product, or one that names them, makes no case there
    and says nothing; it drops no case either (nothing was made to be dropped)."""
    assert {"ascend-950", "atlas-200i-500-a2"} <= set(PRODUCTS) and not set(PRODUCT_DTYPES) >= set(PRODUCTS)
    assert Derive().serves("atlas-a2") and not Derive().serves("ascend-950")
    cs, dropped = _load(tmp_path, """
        op: DeriveTestOp
        matrices:
          - dtypes: float32
            reductions: none
            flip: false
            shapes: [[2, 2, 2]]
          - products: [atlas-a2, ascend-950, atlas-200i-500-a2]
            dtypes: float16
            reductions: none
            flip: false
            shapes: [[2, 2, 2]]
        """)
    assert dropped == 0
    assert sorted((c.product, c.dtype_token) for c in cs) == [
        ("atlas-a2", "float16"), ("atlas-a2", "float32"), ("atlas-a3", "float32"),
        ("atlas-inference", "float32"), ("atlas-training", "float32")]


def test_a_matrix_with_the_defaults(tmp_path: Path) -> None:
    """Every product, reduction and attribute value the operator declares; contiguous, uniform."""
    cs, dropped = _load(tmp_path, """
        op: DeriveTestOp
        matrices:
          - dtypes: float32
            shapes: [[2, 2, 2]]
        """)
    assert dropped == 0 and len(cs) == 4 * 3 * 2
    assert {c.product for c in cs} == set(PRODUCT_DTYPES) and {c.reduction for c in cs} == {0, 1, 2}
    assert {c.attrs["flip"] for c in cs} == {False, True} and {(c.layout, c.values) for c in cs} == {("contiguous", "uniform")}
    assert all(c.expect == 0 and not c.determinism and c.tier == "default" for c in cs)


def test_shape_sets_generated_sets_and_tiers(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        op: DeriveTestOp
        shapes:
          small:
            - [2, 2, 2]
            - [99, 99, 99]
          gen:
            generate:
              shapes: [[N], [N], [N]]
              N: [tile - 1, tile + 1]
        matrices:
          - products: [atlas-training]
            dtypes: [float32, float16]
            reductions: [none]
            flip: [false]
            shapes: [small, gen]
            determinism: true
          - {products: [atlas-a2], dtypes: [float32], reductions: [none], flip: [false], tier: huge,
             shapes: [[3, 3, 3]]}
        """)
    exp = load_file(path)
    got = [(c.dtype_token, c.shapes["x"], c.expect, c.generated, c.determinism, c.tier, c.source) for c in exp.cases]
    m1, m2 = f"{path}:11", f"{path}:17"
    assert got == [
        ("float32", (2,), 0, False, True, "default", m1),
        ("float32", (99,), 0, False, True, "default", m1),
        ("float32", (101,), 0, True, True, "default", m1),      # 99 again is dropped: made already
        ("float16", (2,), INVALID, False, False, "default", m1),
        ("float16", (99,), INVALID, False, False, "default", m1),
        ("float32", (3,), 0, False, False, "huge", m2),           # generated: no rejections
    ]
    assert exp.dropped == 1 + 2


# -- every row of every operator's page, written as a case --------------------------------------
REGISTERED = list(ops.OPERATORS)           # the real operators (read before the made-up ones join)
ROWS = [(op, e) for op in ops.OPERATORS.values() for e in op.examples()]


def _as_case(op: Operator, sig: Signature) -> str:
    """A single case making exactly this call."""
    def shape(s):
        return "null" if s is None else "[" + ", ".join(map(str, s)) + "]"
    some = next(d for d in sig.dtypes.values() if d is not None)
    dts = {n: sig.dtypes.get(n) or some for n in op.inputs}
    dts["out"] = sig.out_dtype or some
    attrs = {a.name: _yaml_scalar(sig.attrs[a.name]) for a in op.attributes if a.name in sig.attrs}
    # The outputs after the first, each with the row's shape (null: a NULL tensor) and dtype.
    others = [f"{n}: {{shape: {shape(s)}" + (f", dtype: {d}" if d else "") + "}"
              for n, (s, d) in (sig.outputs or {}).items() if n != op.outputs[0]]
    return ("{" + f"product: {sig.product}, reduction: {sig.attrs['reduction']}, "
            + "dtypes: {" + ", ".join(f"{n}: {d}" for n, d in dts.items()) + "}, "
            + "shapes: [" + ", ".join(shape(sig.shapes[n]) for n in op.inputs) + "], "
            + f"out_shape: {shape(sig.out_shape)}"
            + (", outputs: {" + ", ".join(others) + "}" if others else "")
            + "".join(f", {k}: {v}" for k, v in attrs.items()) + "}")


def _yaml_scalar(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float) and not math.isfinite(v):
        return ".nan" if math.isnan(v) else ("-.inf" if v < 0 else ".inf")
    if isinstance(v, float):
        return f"{v:.17e}"           # YAML 1.1 reads 1e-30 (no dot) as a string: -1.00000000000000000e-30
    return repr(v)


@pytest.mark.parametrize("op,row", ROWS, ids=[f"{op.name}-{e.what}" for op, e in ROWS])
def test_every_row_of_every_page_as_a_case(tmp_path: Path, op: Operator, row) -> None:
    named = [*row.signature.dtypes.values(), row.signature.out_dtype]
    unnamed = sorted({d for d in named if d is not None and d not in dtypes.DTYPES})
    if unnamed:       # (L1LossBackward's UINT16/32 and DOUBLE rows: checked, never passed)
        pytest.skip(f"{', '.join(unnamed)}: a dtype no case file can name (the suite passes no such tensor)")
    path = _write(tmp_path, f"op: {op.name}\ncases:\n  - {_as_case(op, row.signature)}\n")
    if row.outside:
        with pytest.raises(FileError) as e:
            load_cases([path])
        assert str(e.value) == (f"{path}:3: this case is outside the documented contract: "
                                f"{op.outside_contract(row.signature)}")
        return
    (case,), _ = load_cases([path])
    assert (case.expect, case.why) == op.check(row.signature)
    assert case.expect == row.status, (row.what, case.why)
    sig = row.signature                  # the case makes exactly the row's call
    assert (dict(case.shapes), case.out_shape, case.product) == (dict(sig.shapes), sig.out_shape, sig.product)
    assert {n: d for n, d in case.dtypes.items() if sig.dtypes[n]} == {n: d for n, d in sig.dtypes.items() if d}
    assert case.out_dtype == (sig.out_dtype or case.out_dtype)
    assert {k: repr(case.attrs[k]) for k in sig.attrs} == {k: repr(v) for k, v in sig.attrs.items()}
    for n, (s, d) in (sig.outputs or {}).items():     # every output as the row has it
        got_shape, got_dtype = dict(case.outputs)[n]
        assert (got_shape, got_dtype if d else d) == (s, d), n


def test_the_rows_cover_the_statuses() -> None:
    assert {e.status for _, e in ROWS} >= {0, NULLPTR, INVALID} and any(e.outside for _, e in ROWS)
    assert sorted({op.name for op, _ in ROWS}) == sorted(REGISTERED) and REGISTERED


# -- mistakes: one error naming file, line and field (never the first key of its mapping) --------
H = "op: DeriveTestOp\n"
M = H + "matrices:\n  - products: [atlas-a2]\n    dtypes: [float32]\n"          # a matrix, its first keys given
S = H + "cases:\n  - product: atlas-a2\n    dtypes: float32\n"                   # a single case likewise
SS = S + "    reduction: none\n"
OK3 = "    shapes: [[2, 2, 2]]\n"
LIMIT = "(`tier: huge` on a matrix, or a top-level `limits:`, raises it)"

# name -> (text with the bad line marked #<, field, the whole message after "field '...': ")
BAD: Dict[str, Tuple[str, Optional[str], str]] = {
    # the file
    "not a mapping": ("- op: DeriveTestOp #<\n", None,
                      "a case file is a mapping with keys op, shapes, matrices, cases"),
    "file key": (H + "cases: []\nlimit: 3 #<\n", "limit", "unknown key (allowed: cases, family, limits, matrices, op, shapes)"),
    "no op": ("cases: [] #<\n", "op", "is required"),
    "unknown op": ("cases: []\nop: NoSuchOp #<\n", "op", "unknown operator 'NoSuchOp' (known: {ops})"),
    "op a list": ("cases: []\nop: [a] #<\n", "op", "unknown operator ['a'] (known: {ops})"),
    "limits not a mapping": (H + "limits: [3] #<\n", "limits", "a mapping of tier (default, huge) to elements per array"),
    "limits tier": (H + "limits:\n  default: 3\n  small: 3 #<\n", "limits.small", "unknown tier (known: default, huge)"),
    "limits zero": (H + "limits:\n  huge: 3\n  default: 0 #<\n", "limits.default", "a positive number of elements, not 0"),
    "limits negative": (H + "limits:\n  huge: 3\n  default: -5 #<\n", "limits.default",
                        "a positive number of elements, not -5"),
    "limits true": (H + "limits:\n  huge: 3\n  default: true #<\n", "limits.default",
                    "a positive number of elements, not True"),
    "limits text": (H + "limits:\n  huge: 3\n  default: lots #<\n", "limits.default",
                    "a positive number of elements, not 'lots'"),
    "shapes not a mapping": (H + "cases: []\nshapes: [1] #<\n", "shapes",
                             "is a mapping of set name to a list of shape combinations"),
    # a mapping's key that YAML reads as a number or a boolean is still a key, not a list index
    # (found by tests/test_fuzz.py: this raised AttributeError)
    "file key a number": (H + "cases: []\n0: 3 #<\n", "0", "unknown key (allowed: cases, family, limits, matrices, op, shapes)"),
    "file key a boolean": (H + "cases: []\ntrue: 3 #<\n", "True",
                           "unknown key (allowed: cases, family, limits, matrices, op, shapes)"),
    "shape set named by a number": (H + "shapes:\n  a: [[1, 1, 1]]\n  0: null #<\n", "0",
                                    "a shape set is a non-empty list of shape combinations, or a mapping with one key, generate"),
    "shape set empty": (H + "shapes:\n  a: [[1, 1, 1]]\n  b: [] #<\n", "b",
                        "a shape set is a non-empty list of shape combinations, or a mapping with one key, generate"),
    "shape set a mapping": (H + "shapes:\n  a: [[1, 1, 1]]\n  b: {make: 3} #<\n", "b",
                            "a shape set is a non-empty list of shape combinations, or a mapping with one key, generate"),
    "shape set count": (H + "shapes:\n  s:\n    - [2, 2, 2]\n    - [2, 2] #<\n", "shapes.s[1]",
                        "a shape combination lists 3 shapes (x, y, w), or is {{each: SHAPE}}, got [2, 2]"),
    "shape set bad shape": (H + "shapes:\n  s:\n    - [2, 2, 2]\n    - [2, 2x, 2] #<\n", "shapes.y",
                            "malformed shape '2x' (write e.g. 2x3, 5, scalar)"),
    "matrices not a list": (H + "cases: []\nmatrices: {a: 1} #<\n", "matrices", "is a list"),
    "matrices an empty mapping": (H + "cases: []\nmatrices: {} #<\n", "matrices", "is a list"),
    "cases not a list": (H + "matrices: []\ncases: 3 #<\n", "cases", "is a list"),
    "cases zero": (H + "matrices:\ncases: 0 #<\n", "cases", "is a list"),
    "shapes an empty list": (H + "cases: []\nshapes: [] #<\n", "shapes",
                             "is a mapping of set name to a list of shape combinations"),
    "matrix not a mapping": (M + OK3 + "  - 5 #<\n", "matrices[1]", "each entry of matrices is a mapping"),
    "case not a mapping": (H + "cases:\n  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2, 2, 2]}\n"
                           "  - [] #<\n", "cases[1]", "each entry of cases is a mapping"),
    # a matrix
    "matrix key": (M + OK3 + "    colour: red #<\n", "colour",
                   "unknown key (allowed: determinism, dtypes, exclude, flip, layouts, name, products, reductions, "
                   "scale, seed, shapes, standard, steps, tier, timing, values)"),
    "matrix product": (H + "matrices:\n  - dtypes: [float32]\n    products:\n      - atlas-a2\n      - atlas-z9 #<\n",
                       "products[1]", "unknown product 'atlas-z9' (known: atlas-training, atlas-inference, atlas-a2, "
                       "atlas-a3, ascend-950, atlas-200i-500-a2)"),
    "matrix product scalar": (H + "matrices:\n  - dtypes: [float32]\n    products: atlas-z9 #<\n", "products[0]",
                              "unknown product 'atlas-z9' (known: atlas-training, atlas-inference, atlas-a2, atlas-a3, "
                              "ascend-950, atlas-200i-500-a2)"),
    "matrix products empty": (H + "matrices:\n  - dtypes: [float32]\n    products: [] #<\n", "products", "is empty"),
    "matrix no dtypes": (H + "matrices:\n  - products: [atlas-a2] #<\n    shapes: [[2, 2, 2]]\n", "dtypes",
                         "is required"),
    "matrix dtypes null": (H + "matrices:\n  - products: [atlas-a2]\n    dtypes: #<\n", "dtypes", "is required"),
    "matrix dtypes empty": (H + "matrices:\n  - products: [atlas-a2]\n    dtypes: [] #<\n", "dtypes", "is empty"),
    "matrix dtype": (H + "matrices:\n  - products: [atlas-a2]\n    dtypes:\n      - float32\n      - float64 #<\n",
                     "dtypes[1]", "unknown dtype 'float64' (known: float32, float16, bfloat16, int64, int32, int16, int8, uint8, bool)"),
    "matrix dtype a number": (H + "matrices:\n  - products: [atlas-a2]\n    dtypes:\n      - float32\n      - 16 #<\n",
                              "dtypes[1]", "a dtype is a name or a mapping, not 16"),
    "dtype mapping key": (M.replace("dtypes: [float32]", "dtypes:\n      - inputs: float32\n        z: float16 #<"),
                          "z", "unknown key (allowed: inputs, out, w, x, y)"),
    "dtype mapping without a base": (M.replace("dtypes: [float32]", "dtypes:\n      - float32\n      - {x: float16} #<"),
                                     "dtypes[1]", "give 'inputs' or 'y'"),
    "dtype mapping inputs": (M.replace("dtypes: [float32]", "dtypes:\n      - out: float16\n        inputs: uint16 #<"),
                             "inputs", "unknown dtype 'uint16' (known: float32, float16, bfloat16, int64, int32, int16, int8, uint8, bool)"),
    "dtype mapping primary": (M.replace("dtypes: [float32]", "dtypes:\n      - out: float16\n        y: uint16 #<"),
                              "y", "unknown dtype 'uint16' (known: float32, float16, bfloat16, int64, int32, int16, int8, uint8, bool)"),
    "dtype mapping other": (M.replace("dtypes: [float32]", "dtypes:\n      - y: float16\n        w: uint16 #<"),
                            "w", "unknown dtype 'uint16' (known: float32, float16, bfloat16, int64, int32, int16, int8, uint8, bool)"),
    "dtype mapping out": (M.replace("dtypes: [float32]", "dtypes:\n      - y: float16\n        out: uint16 #<"),
                          "out", "unknown dtype 'uint16' (known: float32, float16, bfloat16, int64, int32, int16, int8, uint8, bool)"),
    "matrix reduction": (M + "    reductions:\n      - none\n      - batchmean #<\n", "reductions[1]",
                         "unknown reduction 'batchmean' (known: none, mean, sum; single cases may give an integer)"),
    "matrix raw reduction": (M + "    reductions:\n      - none\n      - 2 #<\n", "reductions[1]",
                             "unknown reduction 2 (known: none, mean, sum; single cases may give an integer)"),
    "matrix reduction scalar": (M + "    reductions: batchmean #<\n", "reductions[0]",
                                "unknown reduction 'batchmean' (known: none, mean, sum; single cases may give an "
                                "integer)"),
    "matrix bool attribute": (M + "    flip: [true, 1] #<\n", "flip[1]", "expected true or false, not 1"),
    "matrix float attribute": (M + "    scale: [1, '2'] #<\n", "scale[1]", "expected float, not '2'"),
    "matrix float attribute bool": (M + "    scale: [1, true] #<\n", "scale[1]", "expected float, not True"),
    "matrix int attribute": (M + "    steps: [1, 2.5] #<\n", "steps[1]", "expected int, not 2.5"),
    "matrix int attribute bool": (M + "    steps: [1, false] #<\n", "steps[1]", "expected int, not False"),
    "matrix no shapes": (M + "    layouts: [contiguous]\n", "shapes", "is required"),
    "matrix shapes empty": (M + "    shapes: [] #<\n", "shapes", "is empty"),
    "matrix shape set unknown": (M + "    shapes:\n      - [2, 2, 2]\n      - nosuch #<\n", "shapes[1]",
                                 "unknown shape set 'nosuch' (defined: none)"),
    "matrix shape set scalar": (H + "shapes:\n  a: [[1, 1, 1]]\nmatrices:\n  - dtypes: [float32]\n    shapes: b #<\n",
                                "shapes[0]", "unknown shape set 'b' (defined: a)"),
    "matrix shape count": (M + "    shapes:\n      - [2, 2, 2]\n      - [2, 2] #<\n", "shapes[1]",
                           "a shape combination lists 3 shapes (x, y, w), or is {{each: SHAPE}}, got [2, 2]"),
    "matrix shape null": (M + "    shapes:\n      - [2, 2, 2]\n      - [2, null, 2] #<\n", "shapes.y",
                          "a shape may be null (a NULL tensor) only in single cases"),
    "matrix shape bad": (M + "    shapes:\n      - [2, 2, 2]\n      - [2, 2, 2x] #<\n", "shapes.w",
                         "malformed shape '2x' (write e.g. 2x3, 5, scalar)"),
    "matrix layout": (M + OK3 + "    layouts:\n      - contiguous\n      - diagonal #<\n", "layouts[1]",
                      "unknown layout 'diagonal' (known: contiguous, transposed, strided, negstride)"),
    "matrix values": (M + OK3 + "    values:\n      - uniform\n      - gaussian #<\n", "values[1]",
                      "unknown value set 'gaussian' (known: uniform, tiny)"),
    "matrix determinism": (M + OK3 + "    determinism: 1 #<\n", "determinism", "expected true or false, not 1"),
    "matrix tier": (M + OK3 + "    tier: small #<\n", "tier", "unknown tier 'small' (known: default, huge)"),
    "matrix exclude not a list": (M + OK3 + "    exclude: {product: atlas-a2} #<\n", "exclude", "is a list of mappings"),
    "matrix exclude empty mapping": (M + OK3 + "    exclude: {} #<\n", "exclude", "is a list of mappings"),
    "matrix exclude null": (M + OK3 + "    exclude: #<\n", "exclude", "is a list of mappings"),
    "matrix exclusion not a mapping": (M + OK3 + "    exclude:\n      - {product: atlas-a2}\n      - 3 #<\n",
                                       "exclude[1]", "each exclusion is a mapping of axis: value"),
    "matrix exclusion empty": (M + OK3 + "    exclude:\n      - {product: atlas-a2}\n      - {} #<\n",
                               "exclude[1]", "each exclusion is a mapping of axis: value"),
    "matrix exclusion key": (M + OK3 + "    exclude:\n      - product: atlas-a2\n        colour: red #<\n", "colour",
                             "unknown key (allowed: dtype, flip, layout, product, reduction, scale, shapes, steps, "
                             "values)"),
    "matrix exclusion excludes nothing": (M + OK3 + "    exclude:\n      - {product: atlas-a2}\n"
                                          "      - {dtype: bf16, reduction: none} #<\n", "exclude[1]",
                                          "excludes nothing: no combination of this matrix has dtype 'bf16' and "
                                          "reduction 'none'"),
    "matrix exclusion of another product": (M + OK3 + "    exclude:\n      - {reduction: sum}\n"
                                            "      - product: atlas-a3 #<\n", "exclude[1]",
                                            "excludes nothing: no combination of this matrix has product 'atlas-a3'"),
    "matrix reductions empty": (M + "    reductions: [] #<\n", "reductions", "is empty"),
    "matrix reductions null": (M + "    reductions: #<\n", "reductions", "is required"),
    "matrix attribute empty": (M + "    flip: [] #<\n", "flip", "is empty"),
    "matrix layouts empty": (M + OK3 + "    layouts: [] #<\n", "layouts", "is empty"),
    "matrix values empty": (M + OK3 + "    values: [] #<\n", "values", "is empty"),
    "matrix shape set unknown, two defined": (H + "shapes:\n  a: [[1, 1, 1]]\n  b: [[2, 2, 2]]\n" + M[len(H):]
                                              + "    shapes: [a, c] #<\n", "shapes[1]",
                                              "unknown shape set 'c' (defined: a, b)"),
    "shape set null": (H + "shapes:\n  s:\n    - [2, 2, 2]\n    - [2, 2, null]\n    - [null, 2, 2] #<\n", "shapes.x",
                       "a shape may be null (a NULL tensor) only in single cases"),
    "generator bad expression": (H + "shapes:\n  g:\n    generate:\n      shapes: [[N], [N], [N]]\n"
                                 "      N: [tile ** 2] #<\n", "shapes.g.generate.N[0]",
                                 "'tile ** 2': only integers, names, + - * // %, min() and max() are allowed"),
    "generator divides by zero": (H + "shapes:\n  g:\n    generate: #<\n      shapes: [[N], [N], [N]]\n"
                                  "      N: [tile // (tile - 100)]\n" + M[len(H):] + "    shapes: [g]\n", "shapes.g",
                                  "'tile // (tile - 100)' divides by zero for N"),
    "limits one": (H + "limits: {default: 1}\n" + M[len(H):] + "    shapes:\n      - [1, 1, 1]\n"
                   "      - [1, 2, 1] #<\n", "shapes.y",
                   f"2 is 2 elements, past the default tier's limit of 1 per array {LIMIT}"),
    "no op, after a comment": ("# a case file\n\ncases: [] #<\n", "op", "is required"),
    "matrix past the limit": (H + "limits: {default: 10}\n" + M[len(H):] + "    shapes:\n      - [2, 2, 2]\n"
                              "      - [10, 11, 1] #<\n", "shapes.y",
                              f"11 is 11 elements, past the default tier's limit of 10 per array {LIMIT}"),
    "matrix broadcast past the limit": (H + "limits: {default: 10}\n" + M[len(H):] + "    shapes:\n"
                                        "      - [5x1, 1x2, 1]\n      - [11x1, 1x1, 1] #<\n", "shapes.x",
                                        f"11x1 is 11 elements, past the default tier's limit of 10 per array {LIMIT}"),
    "matrix broadcast alone past the limit": (H + "limits: {default: 10}\n" + M[len(H):] + "    shapes:\n"
                                              "      - [5x1, 1x2, 1]\n      - [6x1, 1x2, 1] #<\n", "shapes",
                                              f"the broadcast shape 6x2 is 12 elements, past the default tier's "
                                              f"limit of 10 per array {LIMIT}"),
    "matrix huge tier limit": (H + "limits: {huge: 10}\n" + M[len(H):] + "    tier: huge\n    shapes:\n"
                               "      - [2, 2, 2]\n      - [11, 1, 1] #<\n", "shapes.x",
                               f"11 is 11 elements, past the huge tier's limit of 10 per array {LIMIT}"),
    # a single case
    "case key": (SS + "    shapes: [2, 2, 2]\n    colour: red #<\n", "colour",
                 "unknown key (allowed: determinism, dtypes, expect, flip, layout, name, out_shape, product, "
                 "reduction, scale, seed, shapes, standard, steps, tier, values)"),
    "case no product": (H + "cases:\n  - dtypes: float32 #<\n    reduction: none\n    shapes: [2, 2, 2]\n",
                        "product", "is required"),
    "case no dtypes": (H + "cases:\n  - product: atlas-a2 #<\n    reduction: none\n    shapes: [2, 2, 2]\n",
                       "dtypes", "is required"),
    "case no shapes": (SS + "    layout: strided\n", "shapes", "is required"),
    "case no reduction": (S + "    shapes: [2, 2, 2]\n", "reduction", "is required"),
    "case product": (H + "cases:\n  - dtypes: float32\n    product: atlas-z9 #<\n    reduction: none\n"
                     "    shapes: [2, 2, 2]\n", "product",
                     "unknown product 'atlas-z9' (known: atlas-training, atlas-inference, atlas-a2, atlas-a3, "
                     "ascend-950, atlas-200i-500-a2)"),
    "case product not served": (H + "cases:\n  - dtypes: float32\n    product: ascend-950 #<\n    reduction: none\n"
                                "    shapes: [2, 2, 2]\n", "product",
                                "DeriveTestOp is not served on ascend-950: its page marks it not supported there "
                                "and what aclnn returns is not established (served: atlas-training, "
                                "atlas-inference, atlas-a2, atlas-a3)"),
    "case dtype": (H + "cases:\n  - product: atlas-a2\n    dtypes: uint16 #<\n    reduction: none\n    shapes: [2, 2, 2]\n",
                   "dtypes", "unknown dtype 'uint16' (known: float32, float16, bfloat16, int64, int32, int16, int8, uint8, bool)"),
    "case reduction": (S + "    shapes: [2, 2, 2]\n    reduction: batchmean #<\n", "reduction",
                       "unknown reduction 'batchmean' (known: none, mean, sum)"),
    "case reduction true": (S + "    shapes: [2, 2, 2]\n    reduction: true #<\n", "reduction",
                            "unknown reduction True (known: none, mean, sum)"),
    "case attribute": (SS + "    shapes: [2, 2, 2]\n    flip: 'no' #<\n", "flip", "expected true or false, not 'no'"),
    "case shapes not a list": (SS + "    shapes: 2x2 #<\n", "shapes",
                               "a shape combination lists 3 shapes (x, y, w), or is {{each: SHAPE}}, got '2x2'"),
    "case shape a mapping": (SS + "    shapes:\n      - 2\n      - {a: 1} #<\n      - 2\n", "shapes.y",
                             "malformed shape {{'a': 1}}"),
    "case shape a float": (SS + "    shapes:\n      - 2\n      - 2\n      - 2.5 #<\n", "shapes.w",
                           "malformed shape 2.5"),
    "case shape bool dim": (SS + "    shapes:\n      - [2, true] #<\n      - 2\n      - 2\n", "shapes.x",
                            "malformed shape [2, True]: dimensions are non-negative integers"),
    "case shape negative dim": (SS + "    shapes:\n      - 2\n      - 2x-1 #<\n      - 2\n", "shapes.y",
                                "malformed shape '2x-1': dimensions are non-negative integers"),
    "case shape rank 17": (SS + f"    shapes:\n      - {'1x' * 16}2 #<\n      - 2\n      - 2\n", "shapes.x",
                           f"shape '{'1x' * 16}2' has more than 16 dimensions"),
    "case out_shape bad": (SS + "    shapes: [2, 2, 2]\n    out_shape: 2y #<\n", "out_shape",
                           "malformed shape '2y' (write e.g. 2x3, 5, scalar)"),
    "case past the limit": (H + "limits: {default: 10}\n" + SS[len(H):] + "    shapes: [11, 1, 1] #<\n", "shapes.x",
                            f"11 is 11 elements, past the default tier's limit of 10 per array {LIMIT}"),
    "case broadcast past the limit": (H + "limits: {default: 10}\n" + SS[len(H):] + "    shapes: [11x1, 1x2, 1] #<\n",
                                      "shapes.x", f"11x1 is 11 elements, past the default tier's limit of 10 per "
                                                  f"array {LIMIT}"),
    "case broadcast past the limit, w NULL": (H + "limits: {default: 10}\n" + SS[len(H):] + "    shapes: [5x1, 1x3, null] #<\n",
                                             "shapes", f"the broadcast shape 5x3 is 15 elements, past the default tier's "
                                                       f"limit of 10 per array {LIMIT}"),
    "matrix broadcast past the limit, w NULL": (H + "limits: {default: 10}\n" + M[len(H):] + "    shapes:\n"
                                                "      - [5x1, 1x2, null]\n      - [5x1, 1x3, null] #<\n", "shapes",
                                                f"the broadcast shape 5x3 is 15 elements, past the default tier's "
                                                f"limit of 10 per array {LIMIT}"),
    "case out past the limit": (H + "limits: {default: 10}\n" + SS[len(H):] + "    shapes: [2, 2, 2]\n"
                                "    out_shape: 11 #<\n", "out_shape",
                                f"11 is 11 elements, past the default tier's limit of 10 per array {LIMIT}"),
    "case layout": (SS + "    shapes: [2, 2, 2]\n    layout: diagonal #<\n", "layout",
                    "unknown layout 'diagonal' (known: contiguous, transposed, strided, negstride)"),
    "case values": (SS + "    shapes: [2, 2, 2]\n    values: gaussian #<\n", "values",
                    "unknown value set 'gaussian' (known: uniform, tiny)"),
    "case determinism": (SS + "    shapes: [2, 2, 2]\n    determinism: 'yes' #<\n", "determinism",
                         "expected true or false, not 'yes'"),
    "case outside the contract": (H + "cases:\n  - product: atlas-a2 #<\n    dtypes: float32\n    reduction: none\n"
                                  "    shapes: [2, 2, 2]\n    scale: -1\n", None,
                                  "this case is outside the documented contract: a negative scale is undocumented"),
    "case expect text": (SS + "    shapes: [2, 2, 2]\n    expect: '0' #<\n", "expect",
                         "expect is an aclnn status integer, not '0'"),
    "case expect true": (SS + "    shapes: [2, 2, 2]\n    expect: true #<\n", "expect",
                         "expect is an aclnn status integer, not True"),
    "case expect a status, gets numbers": (SS + "    shapes: [2, 2, 2]\n    expect: 161002 #<\n", "expect",
                                           "says 161002 but the contract gives success"),
    "case expect numbers, gets a status": (SS + "    shapes: [2, 2, 3]\n    expect: 0 #<\n", "expect",
                                           "says 0 but the contract gives 161002 (x, y and w do not broadcast "
                                           "together)"),
    "case expect another status": (SS + "    shapes: [null, 2, 2]\n    expect: 161002 #<\n", "expect",
                                   "says 161002 but the contract gives 161001 (x is NULL)"),
    "case duplicate": (SS + "    shapes: [2, 2, 2]\n  - {product: atlas-a2, dtypes: float32, reduction: none, "
                       "shapes: [2, 2, 2]} #<\n", "id",
                       "duplicate case id DeriveTestOp-float32-atlas-a2-none-keep-s1-n1-2.2.2-contiguous-uniform "
                       "(also made by {path}:3); use 'exclude' or distinct shape sets"),
}


def _line(text: str) -> Optional[int]:
    return marked_line(text) if "#<" in text else None


@pytest.mark.parametrize("name", list(BAD))
def test_a_mistake_names_file_line_and_field(tmp_path: Path, name: str) -> None:
    text, field, message = BAD[name]
    path = _write(tmp_path, text)
    with pytest.raises(FileError) as e:
        load_cases([path])
    message = message.format(ops=", ".join(ops.OPERATORS), path=path)
    line = _line(text)
    if line is None:                      # a missing key: the line of the mapping it is missing from
        line = text.count("\n", 0, text.rindex("  - ")) + 1
    want = f"{path}:{line}: " + (f"field '{field}': " if field else "") + message
    assert (e.value.path, e.value.line, e.value.field) == (str(path), line, field)
    assert str(e.value) == want


def test_no_such_case_file(tmp_path: Path) -> None:
    with pytest.raises(FileError) as e:
        load_cases([tmp_path / "nope.yaml"])
    assert str(e.value) == f"{tmp_path / 'nope.yaml'}: no such case file or folder"


def test_the_limits_are_the_documented_ones(tmp_path: Path) -> None:
    assert (cases_model.ARRAY_LIMITS, cases_model.MAX_PARSED_RANK, MAX_RANK) == ({"default": 1 << 28, "huge": 1 << 33}, 16, 8)
    # at the limit: accepted (the broadcast shape 5x2 is exactly 10); a file's limits stay its own
    cs, _ = _load(tmp_path, H + "limits: {default: 10}\n" + M[len(H):] + "    shapes: [[5x1, 1x2, 1], [10, 10, 1]]\n")
    assert {c.shapes["x"] for c in cs} == {(5, 1), (10,)}
    cs, _ = _load(tmp_path, M + "    shapes: [[16384x16384, 1, 1]]\n")            # 2^28: the default limit
    assert cs[0].shapes["x"] == (16384, 16384)
    with pytest.raises(FileError, match="268435457 elements, past the default tier's limit of 268435456"):
        _load(tmp_path, M + "    shapes: [[268435457, 1, 1]]\n")


# -- the pieces a case is made of ---------------------------------------------------------------
def test_frozen_mappings_keep_order_and_hash() -> None:
    a, b = cases_model.Frozen({"x": 1, "y": None}), cases_model.Frozen([("x", 1), ("y", None)])
    assert a == b and hash(a) == hash(b) and a == {"x": 1, "y": None}
    assert a != cases_model.Frozen({"y": None, "x": 1}) and a != [("x", 1), ("y", None)] and a != {"x": 1}
    assert list(a) == ["x", "y"] and len(a) == 2 and a["y"] is None and repr(a) == "Frozen({'x': 1, 'y': None})"
    assert hash(a) != hash(cases_model.Frozen({"x": 2, "y": None}))
    with pytest.raises(KeyError):
        a["z"]
    c = cases_model.Case("i", "Op", "atlas-a2", {"x": "float32"}, "float32", {"x": (2,)}, (2,), {"reduction": 0},
               "contiguous", "uniform", 0, "", False, "f:1", "k")
    assert all(isinstance(getattr(c, f), cases_model.Frozen) for f in ("dtypes", "shapes", "attrs"))
    assert hash(c) == hash(cases_model.Case(**{**c.__dict__}))


@pytest.mark.parametrize("given,shape,token", [
    ("5", (5,), "5"), ("'2x3'", (2, 3), "2x3"), ("' 2x3 '", (2, 3), "2x3"), ("scalar", (), "scalar"),
    ("'()'", (), "scalar"), ("''", (), "scalar"), ("[]", (), "scalar"), ("[2, 0]", (2, 0), "2x0"),
    ("0x3", (0, 3), "0x3"), ("1x1x1", (1, 1, 1), "1x1x1"),
])
def test_each_way_to_write_a_shape(tmp_path: Path, given: str, shape: tuple, token: str) -> None:
    case = _single(tmp_path, f"{BASE}, shapes: [{given}, {given}, null]")
    assert case.shapes["x"] == shape and cases_ids.shape_token(shape) == token
    assert case.id.endswith(f"-{token}.{token}.null-contiguous-uniform")
    assert cases_ids.shape_token(None) == "null"


def test_what_a_case_derives_for_its_data(tmp_path: Path) -> None:
    a = _single(tmp_path, f"{BASE}, shapes: [2x3, 3, 1]")
    b = _single(tmp_path, "product: atlas-a3, dtypes: float32, reduction: none, shapes: [2x3, 3, 1], layout: strided")
    # products and layouts share their data: the same datakey and seed (pinned: every golden hangs on it)
    assert a.datakey == b.datakey and a.seed == b.seed == 18087491122389016430
    assert (a.reduction, a.elements, a.dtype_token) == (0, 6 + 3 + 1 + 6, "float32")
    assert _single(tmp_path, f"{BASE}, shapes: [2x3, 3, null]").elements == 6 + 3 + 6
    assert _single(tmp_path, f"{BASE}, shapes: [null, 3, 1]").elements == 3 + 1        # no broadcast shape
    assert _single(tmp_path, f"{BASE}, shapes: [2, 3, 1]").elements == 2 + 3 + 1      # does not broadcast


def test_the_names_a_generator_may_use() -> None:
    assert cases_expand.generator_names(Derive()) == ["cores", "ub", "block", "lanes", "reach", "tile"]


def test_a_generator_reads_the_hardware_file_beside_the_case_file(tmp_path: Path) -> None:
    text = """
        op: DeriveTestOp
        shapes:
          gen:
            generate:
              shapes: [[N], [N], [N]]
              N: [cores + 1]
        matrices:
          - {products: [atlas-training], dtypes: [float32], reductions: [none], flip: [false], shapes: [gen]}
        """
    path = _write(tmp_path, text)
    assert [c.shapes["x"] for c in load_file(path).cases] == [(33,)]          # the project's: 32 cores
    hw = (Path(__file__).resolve().parents[1] / "cases" / "hardware.yaml").read_text()
    (tmp_path / "hardware.yaml").write_text(hw.replace("cores: [32]", "cores: [6]", 1))
    assert [c.shapes["x"] for c in load_file(path).cases] == [(7,)]
    assert [c.shapes["x"] for c in load_cases([tmp_path])[0]] == [(7,)]        # hardware.yaml is no case file


def test_a_generated_repeat_of_an_earlier_matrix_is_dropped(tmp_path: Path) -> None:
    exp = load_file(_write(tmp_path, """
        op: DeriveTestOp
        shapes:
          gen:
            generate:
              shapes: [[N], [N], [N]]
              N: [tile - 1, tile]
        matrices:
          - {products: [atlas-a2], dtypes: [float32], reductions: [none], flip: [false], shapes: [[99, 99, 99]]}
          - {products: [atlas-a2], dtypes: [float32], reductions: [none], flip: [false], shapes: [gen]}
        """))
    assert [(c.shapes["x"], c.generated) for c in exp.cases] == [((99,), False), ((100,), True)]
    assert exp.dropped == 1 and len(exp.made) == 2


def test_a_folder_of_case_files(tmp_path: Path) -> None:
    one = f"op: DeriveTestOp\ncases:\n  - {{{BASE}, shapes: [1, 1, 1]}}\n"
    two = f"op: DeriveTestOp\ncases:\n  - {{{BASE}, shapes: [2, 2, 2]}}\n"
    _write(tmp_path, two, "b.yaml")
    _write(tmp_path, one, "a.yaml")
    _write(tmp_path, "not: a case file\n", "tolerances.yaml")
    _write(tmp_path, "not: a case file\n", "hardware.yaml")
    _write(tmp_path, one, "c.yml")
    _write(tmp_path, one, "notes.txt")
    assert cases_load.case_files(tmp_path) == [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    assert cases_load.case_files(tmp_path / "c.yml") == [tmp_path / "c.yml"]
    cs, dropped = load_cases([tmp_path])
    assert [c.shapes["x"] for c in cs] == [(1,), (2,)] and dropped == 0
    with pytest.raises(FileError) as e:
        load_cases([tmp_path, tmp_path / "a.yaml"])
    assert str(e.value) == (f"{tmp_path / 'a.yaml'}:3: field 'id': duplicate case id "
                            f"DeriveTestOp-float32-atlas-a2-none-keep-s1-n1-1.1.1-contiguous-uniform (also made by "
                            f"{tmp_path / 'a.yaml'}:3); use 'exclude' or distinct shape sets")


def test_a_duplicate_names_its_file_even_with_a_colon_in_the_path(tmp_path: Path) -> None:
    folder = tmp_path / "run:2"
    folder.mkdir()
    one = f"op: DeriveTestOp\ncases:\n  - {{{BASE}, shapes: [1, 1, 1]}}\n"
    _write(folder, one, "a.yaml")
    _write(folder, "# the same case, again\n" + one, "b.yaml")
    with pytest.raises(FileError) as e:
        load_cases([folder])
    assert (e.value.path, e.value.line, e.value.field) == (str(folder / "b.yaml"), 4, "id")
    assert str(e.value).endswith(f"(also made by {folder / 'a.yaml'}:3); use 'exclude' or distinct shape sets")


def test_dropped_counts_add_up_across_files(tmp_path: Path) -> None:
    m = "op: DeriveTestOp\nmatrices:\n  - {products: [atlas-a2], dtypes: [float32], reductions: [none], " \
        "flip: [false], scale: [1, -1], shapes: [[%s, 1, 1]]}\n"
    _write(tmp_path, m % 1, "a.yaml")
    _write(tmp_path, m % 2, "b.yaml")
    cs, dropped = load_cases([tmp_path])
    assert len(cs) == 2 and dropped == 2
