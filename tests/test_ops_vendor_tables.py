"""The vendor's own op_api unit tests, as each contract page tabulates them (`## The vendor's op_api
unit tests`), held against the suite's phase-1 model: every row becomes a Signature for the page's
registered operator and `op.check` must give the row's status.

Why: the pages copy those tables from the vendor's code, independently of the suite's modules; a
row the module decides differently is either a wrong check (fix the module) or a wrong row (fix
the page, citing the code). A page whose operator has no module yet is reported skipped by name,
and `unchecked` rows (tests that assert nothing) are skipped and listed, never dropped silently.
`any` rows run as atlas-a2: the vendor's UT stub defaults to Ascend910B, as the pages say."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from suite import ops
from suite.ops.base import Signature

PAGES = Path(__file__).resolve().parents[1] / "docs" / "operators"
HEADING = "## The vendor's op_api unit tests"
COLUMNS = ["test", "shapes", "dtypes", "attrs", "product", "status"]
# The UT stub's default SoC (ops-nn tests/ut/op_api/stub/opdev/platform.cpp): Ascend910B.
ANY_PRODUCT = "atlas-a2"
# aclDataType names as the pages write them -> the suite's dtype names (floats, and the exact
# dtypes suite/common/dtypes.py knows; the others are names the suite never passes, which phase 1
# may still be asked about).
DTYPE_NAMES = {"FLOAT": "float32", "FLOAT16": "float16", "BFLOAT16": "bfloat16", "DOUBLE": "float64",
               "INT8": "int8", "INT16": "int16", "INT32": "int32", "INT64": "int64", "UINT8": "uint8",
               "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64", "BOOL": "bool",
               "COMPLEX64": "complex64", "COMPLEX128": "complex128"}


@dataclass(frozen=True)
class Row:
    page: str
    line: int
    test: str
    cells: Dict[str, str]

    @property
    def where(self) -> str:
        return f"docs/operators/{self.page}.md:{self.line}"


def _cells(line: str) -> List[str]:
    return [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]


def table_rows(path: Path) -> Optional[List[Row]]:
    """The rows of a page's vendor unit-test table; None when the page has no such table."""
    lines = path.read_text(encoding="utf-8").splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == HEADING)
    except StopIteration:
        return None
    rows: List[Row] = []
    header: Optional[List[str]] = None
    for i in range(start + 1, len(lines)):
        ln = lines[i]
        if ln.startswith("## "):
            break
        if not ln.startswith("|"):
            if header is not None and rows:
                break                                  # the table ended
            continue
        cells = _cells(ln)
        if header is None:
            header = cells
            assert header == COLUMNS, f"{path.name}:{i + 1}: the table's columns are {header}, not {COLUMNS}"
            continue
        if set("".join(cells)) <= set("- :"):
            continue                                   # the separator
        assert len(cells) == len(COLUMNS), f"{path.name}:{i + 1}: {len(cells)} cells"
        rows.append(Row(path.stem, i + 1, cells[0], dict(zip(COLUMNS, cells))))
    return rows


def _pairs(text: str) -> List[Tuple[str, str]]:
    out = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, eq, value = part.partition("=")
        assert eq, f"{part!r} is not name=value"
        out.append((name.strip(), value.strip()))
    return out


def _shape(value: str) -> Optional[Tuple[int, ...]]:
    if value == "NULL":
        return None
    m = re.fullmatch(r"\[([0-9,\s]*)\]", value)
    assert m, f"malformed shape {value!r}"
    return tuple(int(d) for d in m.group(1).split(",") if d.strip())


def _attr(value: str) -> Any:
    if value in ("true", "false"):
        return value == "true"
    try:
        return int(value)
    except ValueError:
        return float(value)


def signature(op: Any, row: Row) -> Signature:
    """The row's call as the suite's phase-1 model takes it."""
    shapes = dict(_pairs(row.cells["shapes"]))
    dts = dict(_pairs(row.cells["dtypes"]))
    tensors = set(op.inputs) | set(op.outputs)
    unknown = (set(shapes) | set(dts)) - tensors
    assert not unknown, f"{row.where}: tensors {sorted(unknown)} are not {op.name}'s ({sorted(tensors)})"
    assert set(shapes) == tensors, f"{row.where}: shapes name {sorted(shapes)}, not every tensor"
    parsed = {n: _shape(v) for n, v in shapes.items()}
    for n, s in parsed.items():
        assert (s is None) == (n not in dts), f"{row.where}: {n} has a dtype exactly when it is not NULL"
    names = {}
    for n, d in dts.items():
        assert d in DTYPE_NAMES, f"{row.where}: unknown dtype {d!r} for {n}"
        names[n] = DTYPE_NAMES[d]
    known = {"reduction", *(a.name for a in op.attributes)}
    attrs: Dict[str, Any] = {a.name: a.default for a in op.attributes}
    for k, v in _pairs(row.cells["attrs"]):
        if "." in k:
            continue                    # a layout (x.strides, x.storage): phase 1 makes it contiguous
        assert k in known, f"{row.where}: unknown attribute {k!r} (known: {sorted(known)})"
        attrs[k] = _attr(v)
    product = ANY_PRODUCT if row.cells["product"] == "any" else row.cells["product"]
    # An operator with several outputs (aclnnNLLLoss's out and totalWeightOut): each in signature
    # order, as the suite's cases pass them (Signature.outputs); one output: none.
    outputs = {n: (parsed[n], names.get(n)) for n in op.outputs} if len(op.outputs) > 1 else None
    first = op.outputs[0]
    return Signature({n: parsed[n] for n in op.inputs}, {n: names.get(n) for n in op.inputs},
                     parsed[first], names.get(first), attrs, product, outputs)


PAGE_FILES = sorted(p for p in PAGES.glob("*.md") if p.name != "README.md")
TABLES = {p.stem: rows for p in PAGE_FILES for rows in [table_rows(p)] if rows is not None}
CHECKED = [r for page, rows in TABLES.items() if page in ops.OPERATORS for r in rows
           if r.cells["status"] != "unchecked"]
UNCHECKED = [r for page, rows in TABLES.items() if page in ops.OPERATORS for r in rows
             if r.cells["status"] == "unchecked"]
NO_MODULE = sorted(page for page in TABLES if page not in ops.OPERATORS)


@pytest.mark.parametrize("row", CHECKED, ids=[f"{r.page}-{r.test}" for r in CHECKED])
def test_the_suite_decides_each_row_as_the_vendor_test_expects(row: Row) -> None:
    op = ops.get(row.page)
    want = int(row.cells["status"])
    status, why = op.check(signature(op, row))
    assert status == want, f"{row.where}: {row.test}: {op.name}.check gives {status} ({why}), the vendor's test expects {want}"


@pytest.mark.parametrize("page", NO_MODULE)
def test_pages_whose_operator_has_no_module_yet(page: str) -> None:
    pytest.skip(f"docs/operators/{page}.md: {len(TABLES[page])} vendor unit-test rows, "
                f"no operator {page} in suite/ops/ yet")


@pytest.mark.parametrize("row", UNCHECKED, ids=[f"{r.page}-{r.test}" for r in UNCHECKED])
def test_unchecked_rows(row: Row) -> None:
    pytest.skip(f"{row.where}: {row.test} asserts nothing in the vendor's test (status: unchecked)")


def test_the_tables_are_found() -> None:
    """The pages that carry a table are the ones the parser reads (a renamed heading or a broken
    table must not make every row vanish)."""
    carrying = sorted(p.stem for p in PAGE_FILES if HEADING in p.read_text(encoding="utf-8"))
    assert sorted(TABLES) == carrying
    assert all(TABLES[p] for p in carrying), [p for p in carrying if not TABLES[p]]
    assert "L1LossBackward" in TABLES and len(TABLES["L1LossBackward"]) >= 31


def test_a_row_names_only_the_operators_tensors() -> None:
    """The parser refuses a row it cannot map, rather than checking some other call."""
    op = ops.get("L1LossBackward")
    bad = Row("L1LossBackward", 0, "made-up", {"shapes": "gradOutput=[2]; self=[2]; target=[2]; weight=[2]; out=[2]",
                                               "dtypes": "gradOutput=FLOAT; self=FLOAT; target=FLOAT; weight=FLOAT; out=FLOAT",
                                               "attrs": "reduction=0", "product": "any", "status": "0"})
    with pytest.raises(AssertionError, match="weight"):
        signature(op, bad)


def test_a_row_of_an_operator_with_several_outputs_names_each() -> None:
    """A row of an operator with several outputs (aclnnNLLLoss: out and totalWeightOut) names every
    output; each reaches the Signature as the cases pass it (Signature.outputs), so a check that
    reads the second output's shape or dtype decides the row; a row without it is refused."""
    from tests.multiout_ops import OP as two
    row = Row("TwoOutTestOp", 0, "made-up", {"shapes": "x=[2]; y=[2]; out=[2]; total=[3]",
                                             "dtypes": "x=FLOAT; y=FLOAT; out=FLOAT; total=FLOAT",
                                             "attrs": "reduction=2", "product": "any", "status": "161002"})
    sig = signature(two, row)
    assert sig.output("total") == ((3,), "float32") and sig.out_shape == (2,)
    assert two.check(sig)[0] == 161002            # total's shape, () wanted
    good = Row(row.page, 0, "made-up", {**row.cells, "shapes": "x=[2]; y=[2]; out=[2]; total=[]"})
    assert two.check(signature(two, good))[0] == 0
    short = Row(row.page, 0, "made-up", {**row.cells, "shapes": "x=[2]; y=[2]; out=[2]",
                                         "dtypes": "x=FLOAT; y=FLOAT; out=FLOAT"})
    with pytest.raises(AssertionError, match="total"):
        signature(two, short)
