"""Every operator's `check` against its page's phase-1 table, row by row (Operator.examples: hand-
made Signatures, nothing from the case files), and the rules every aclnn operator keeps, derived
from its declarations alone: NULL before anything else, an optional input may be NULL, rank 9 is
rejected, a reduction it does not know is rejected or outside the contract."""
from __future__ import annotations

from dataclasses import replace
from typing import List, Tuple

import pytest

from suite import ops
from suite.ops.base import MAX_RANK, Example, Operator, Signature

NULLPTR, INVALID = 161001, 161002
OPS: List[Operator] = list(ops.OPERATORS.values())
ROWS: List[Tuple[Operator, Example]] = [(op, e) for op in OPS for e in op.examples()]


def _accepted(op: Operator) -> Signature:
    """The operator's first accepted, documented row: the base the generic rules vary."""
    return next(e.signature for e in op.examples() if e.status == 0 and not e.outside)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_every_operator_tabulates_its_checks(op: Operator) -> None:
    """At least one accepted call, and a row for each NULL tensor, for each status it returns."""
    rows = op.examples()
    assert any(e.status == 0 and not e.outside for e in rows), "no accepted row"
    assert {e.status for e in rows} >= {0, op.null_status, INVALID}
    nulls = {n for e in rows if e.status == op.null_status for n, s in e.signature.shapes.items() if s is None}
    assert nulls >= set(op.inputs) - set(op.optional)
    assert any(e.status == op.null_status and e.signature.out_shape is None for e in rows), "no 'out NULL' row"
    assert len({e.what for e in rows}) == len(rows), "two rows with one name"


@pytest.mark.parametrize("op,row", ROWS, ids=[f"{op.name}-{e.what}" for op, e in ROWS])
def test_every_row_of_every_page(op: Operator, row: Example) -> None:
    status, why = op.check(row.signature)
    assert status == row.status, f"{op.name}: {row.what}: status {status} ({why!r}), the page says {row.status}"
    assert bool(why) == bool(status), f"a rejection says why, an acceptance says nothing: {why!r}"
    assert bool(op.outside_contract(row.signature)) == row.outside, op.outside_contract(row.signature)


def _everything_else_wrong(op: Operator, base: Signature) -> Signature:
    """Every check but NULL fails: rank 9 shapes that do not broadcast, a dtype the product lacks
    (where one exists), a reduction no operator knows, an out of the wrong shape."""
    product, allowed = min(op.product_dtypes.items(), key=lambda kv: len(kv[1]))
    missing = sorted({"float32", "float16", "bfloat16"} - set(allowed))
    bad_dt = missing[0] if missing else None
    shapes = {n: (1,) * (MAX_RANK - 1) + (2, 3 + i) for i, n in enumerate(base.shapes)}
    dts = {n: bad_dt or d for n, d in base.dtypes.items()}
    return Signature(shapes, dts, (7,), bad_dt or base.out_dtype, {**base.attrs, "reduction": 99}, product)


NULLABLE = [(op, n) for op in OPS for n in [*op.inputs, "out"]]


@pytest.mark.parametrize("op,null", NULLABLE, ids=[f"{op.name}-{n}" for op, n in NULLABLE])
def test_null_is_checked_before_anything_else(op: Operator, null: str) -> None:
    """A NULL required tensor is 161001 (the operator's `null_status`) even when every other check
    would also fail; a NULL optional one is not a NULL-pointer error at all."""
    wrong = _everything_else_wrong(op, _accepted(op))
    if null == "out":
        sig = replace(wrong, out_shape=None)
    else:
        sig = replace(wrong, shapes={**wrong.shapes, null: None}, dtypes={**wrong.dtypes, null: None})
    status, why = op.check(sig)
    if null in op.optional:
        assert status == INVALID, why
    else:
        assert (status, why) == (op.null_status, f"{null} is NULL")


OPTIONAL = [(op, n) for op in OPS for n in op.optional]


@pytest.mark.parametrize("op,name", OPTIONAL, ids=[f"{op.name}-{n}" for op, n in OPTIONAL])
def test_an_optional_input_may_be_null(op: Operator, name: str) -> None:
    base = _accepted(op)
    sig = replace(base, shapes={**base.shapes, name: None}, dtypes={**base.dtypes, name: None})
    live = {n: s for n, s in sig.shapes.items() if s is not None}
    sig = replace(sig, out_shape=op.out_shape(live, sig.attrs))
    assert op.check(sig) == (0, "")


RANKED = [(op, n) for op in OPS for n in op.inputs]


@pytest.mark.parametrize("op,name", RANKED, ids=[f"{op.name}-{n}" for op, n in RANKED])
def test_rank_9_is_rejected(op: Operator, name: str) -> None:
    """Leading 1s keep every shape rule satisfied, so only the rank can be at fault: rejected, or
    outside the contract where the op API checks no rank (the operator's page says so)."""
    base = _accepted(op)
    shape = base.shapes[name] or (2,)
    nine = (1,) * (MAX_RANK + 1 - len(shape)) + tuple(shape)
    shapes = {**base.shapes, name: nine}
    live = {n: s for n, s in shapes.items() if s is not None}
    sig = replace(base, shapes=shapes, dtypes={**base.dtypes, name: base.dtypes[name] or base.out_dtype},
                  out_shape=op.out_shape(live, base.attrs) or base.out_shape)
    status, why = op.check(sig)
    assert status == INVALID or (status == 0 and op.outside_contract(sig)), (status, why)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_an_unknown_reduction_is_rejected_or_undocumented(op: Operator) -> None:
    base = _accepted(op)
    for red in (max(op.reductions.values()) + 1, -1):
        sig = replace(base, attrs={**base.attrs, "reduction": red})
        status, _ = op.check(sig)
        assert status == INVALID or op.outside_contract(sig), red
