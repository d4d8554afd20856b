"""The core for forward reductions (issue 22): an out shape from the input shapes and the
attributes, one-element outs of another accepted shape ([1], [1, 1] for a canonical ()), one
output element summing the whole input (10^3 to 10^7 terms) through the golden, the reference,
vendor_at and the judging's sum budget, the memory vendor_at needs for such a sum, and the
determinism test of an operator declared not deterministic on a product. On a made-up forward
loss registered for the test, so the core is proven before any real forward operator exists."""
from __future__ import annotations

import math
import textwrap
import tracemalloc
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np
import pytest

from suite import ops
from suite.backends.reference import ReferenceBackend
from suite.cases.model import Kind
from suite.common import dtypes
from suite.golden.store import GoldenStore
from suite.report import summary
from suite.run.calls import InProcess
from suite.run.runner import CaseFailure, Runner
from suite.cases.load import load_cases
from suite.cases.model import NUMBERS
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, OpCall
from suite.judge.judging import judge, window
from suite.judge.table import load_table
from suite.ops.base import Operator, Shape, Signature, broadcast, ftz, numel
from suite.values import sets as V

ROOT = Path(__file__).resolve().parents[1]
TABLE = load_table(ROOT / "cases" / "tolerances.yaml")
F32 = np.dtype(np.float32)


class SquareSum(Operator):
    """out = (self - target)^2 on the broadcast shape B (none), summed (sum) or summed and divided
    by numel(B) (mean); out () for mean and sum, and any one-element out accepted there."""

    name = "SquareSumTest"
    inputs = ("self", "target")
    reductions = {"none": 0, "mean": 1, "sum": 2}
    c_params = (("self", "tensor", None), ("target", "tensor", None), ("reduction", "int64", 1))
    value_sets = {"uniform": V.uniform_set}

    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        if any(s is None for s in shapes.values()):
            return None
        b = broadcast(*shapes.values())
        return b if b is None or attrs["reduction"] == 0 else ()

    def check(self, sig: Signature):
        bad = self._nulls(sig) or self._unsupported_dtype(sig, ["self", "target", "out"])
        if bad:
            return bad
        if sig.attrs["reduction"] not in (0, 1, 2):
            return INVALID, "reduction"
        b = broadcast(*sig.shapes.values())
        if b is None:
            return INVALID, "self and target do not broadcast"
        if sig.attrs["reduction"] == 0 and tuple(sig.out_shape) != b:
            return INVALID, "out is not B"
        if sig.attrs["reduction"] != 0 and numel(sig.out_shape) != 1:
            return INVALID, "out has more than one element"
        return 0, ""

    def b_shape(self, shapes):
        return broadcast(*shapes.values())

    def terms(self, x, attrs, shapes):
        d = x["self"] - x["target"]
        n = numel(broadcast(*shapes.values()))
        return d * d / n if attrs["reduction"] == 1 and n else d * d

    def reference_terms(self, x, attrs, shapes):
        d = ftz(x["self"] - x["target"])
        n = numel(broadcast(*shapes.values()))
        s = ftz(d * d)
        return ftz(s * np.float32(1.0 / n)) if attrs["reduction"] == 1 and n else s

    def empty_fill(self, attrs):
        return math.nan if attrs["reduction"] == 1 else None

    def describe(self, x, attrs, out_shape, index):
        return "a sum"


OP = SquareSum()


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(ops.OPERATORS, OP.name, OP)


def _call(x, t, reduction, out_shape) -> OpCall:
    return OpCall(op=OP.name, inputs={"self": x, "target": t}, attrs={"reduction": reduction},
                  out_shape=tuple(out_shape), out_dtype=F32, product="atlas-a2")


def _inputs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, n).astype(np.float32), rng.uniform(-1, 1, n).astype(np.float32)


# -- out shapes from shapes and attributes -------------------------------------------------------------
def test_case_derivation_passes_the_attributes_to_out_shape(tmp_path):
    """A matrix over none, mean and sum gives out B for none and () for the other two."""
    path = tmp_path / "sq.yaml"
    path.write_text(textwrap.dedent(f"""\
        op: {OP.name}
        shapes:
          s: [[2x3, 3]]
        matrices:
          - name: all
            products: [atlas-a2]
            dtypes: [float32]
            shapes: [s]
        """))
    cases, _ = load_cases([path])
    got = {c.attrs["reduction"]: tuple(c.out_shape) for c in cases if c.expect == NUMBERS}
    assert got == {0: (2, 3), 1: (), 2: ()}


def test_a_case_may_name_another_one_element_out(tmp_path):
    path = tmp_path / "sq.yaml"
    path.write_text(textwrap.dedent(f"""\
        op: {OP.name}
        cases:
          - {{product: atlas-a2, dtypes: float32, reduction: sum, shapes: [5, 5], out_shape: [1, 1]}}
          - {{product: atlas-a2, dtypes: float32, reduction: mean, shapes: [2x3, 3], out_shape: [1]}}
          - {{product: atlas-a2, dtypes: float32, reduction: sum, shapes: [2x3, 3], out_shape: [2]}}
        """))
    cases, _ = load_cases([path])
    assert [(tuple(c.out_shape), c.expect) for c in cases] == [((1, 1), 0), ((1,), 0), ((2,), INVALID)]


@pytest.mark.parametrize("b", [(5,), (2, 3), ()])
@pytest.mark.parametrize("out", [(), (1,), (1, 1), (1, 1, 1)])
@pytest.mark.parametrize("reduction", [1, 2])
def test_a_one_element_out_is_computed_in_the_canonical_shape(b, out, reduction):
    """The golden is made in out_shape's () and judged against a result of the case's shape; the
    reference and vendor_at give the same number whatever the one-element out's shape."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, b).astype(np.float32)
    t = rng.uniform(-1, 1, b).astype(np.float32)
    g = OP.golden({"self": x, "target": t}, {"reduction": reduction})
    assert g.out.shape == ()
    exact = math.fsum(((x.astype(np.float64) - t) ** 2).reshape(-1)) / (x.size if reduction == 1 else 1)
    assert g.out == pytest.approx(exact, rel=1e-14)
    got = OP.reference(_call(x, t, reduction, out))
    assert got.shape == out and got.dtype == F32
    assert got.reshape(()) == OP.reference(_call(x, t, reduction, ())).reshape(())
    v = judge(got, g, F32, TABLE.standards["cann"], TABLE.slack_ulps)
    assert v.passed, v.why
    wrong = got * np.float32(1.001)
    assert not judge(wrong, g, F32, TABLE.standards["cann"], TABLE.slack_ulps).passed
    vo, _, _ = OP.vendor_at({"self": x, "target": t}, {"reduction": reduction}, np.array([0]))
    assert vo[0] == pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize("reduction,want", [(1, "nan"), (2, 0.0)])
def test_a_reduction_of_nothing_is_the_operators_fill(reduction, want):
    """An empty B under mean is NaN (the operator's empty_fill), under sum 0: in the golden, the
    reference and vendor_at alike, so a backend giving 0 for the mean fails and NaN passes."""
    x, t = np.zeros((0, 3), np.float32), np.zeros((3,), np.float32)
    g = OP.golden({"self": x, "target": t}, {"reduction": reduction})
    ref = OP.reference(_call(x, t, reduction, ()))
    vo, _, _ = OP.vendor_at({"self": x, "target": t}, {"reduction": reduction}, np.array([0]))
    for v in (float(g.out), float(ref), float(vo[0])):
        assert (math.isnan(v) if want == "nan" else v == want), (reduction, v)
    other = np.float32(0.0) if want == "nan" else np.float32(np.nan)
    std = TABLE.standards["cann"]
    assert judge(ref, g, F32, std, TABLE.slack_ulps).passed
    assert not judge(np.asarray(other), g, F32, std, TABLE.slack_ulps).passed


@pytest.mark.parametrize("b", [(), (5,)])
def test_a_one_element_out_of_more_dimensions_than_b(b):
    """A one-element out with more dimensions than B ([1, 1] for two 0-d inputs or B [5]): the
    failure report's element values and the mutants' float32 kernel read it like B's own shape
    (its leading ones dropped), instead of indexing past B."""
    from suite.common.blocks import reduced_axes
    from tests.mutants.kernel import Float32Kernel
    assert reduced_axes((1, 1), b) == tuple(range(len(b)))
    x, t = (np.full(b, v, np.float32) for v in (2.0, 0.5))
    got = Float32Kernel().run(_call(x, t, 2, (1, 1)))
    assert got.shape == (1, 1) and got[0, 0] == pytest.approx(2.25 * numel(b))
    want = {"self": 2.0, "target": 0.5} if b == () else None
    assert OP.element_values({"self": x, "target": t}, (1, 1), (0, 0)) == want


class FirstDimFill(SquareSum):
    """A forward loss whose fill of an empty reduction depends on an input's shape (KlDiv's batchmean:
    NaN when self's first dimension is 0, else 0, the sum of nothing over a nonzero count)."""

    name = "FirstDimFillTest"

    def empty_fill_of(self, attrs, shapes):
        s = shapes["self"]
        return math.nan if attrs["reduction"] == 2 and s and s[0] == 0 else None


@pytest.mark.parametrize("shape,want", [((0, 3), "nan"), ((3, 0), 0.0)])
def test_a_fill_may_depend_on_the_input_shapes(monkeypatch, shape, want):
    """empty_fill_of sees the inputs' shapes: the golden, the reference, vendor_at and the mutants'
    float32 kernel all give its fill, so an operator need not re-implement the empty walk."""
    from tests.mutants.kernel import Float32Kernel
    op = FirstDimFill()
    monkeypatch.setitem(ops.OPERATORS, op.name, op)
    x = t = np.zeros(shape, np.float32)
    call = OpCall(op=op.name, inputs={"self": x, "target": t}, attrs={"reduction": 2}, out_shape=(),
                  out_dtype=F32, product="atlas-a2")
    g = op.golden({"self": x, "target": t}, {"reduction": 2})
    vo, _, _ = op.vendor_at({"self": x, "target": t}, {"reduction": 2}, np.array([0]))
    got = [float(g.out), float(op.reference(call)), float(vo[0]), float(Float32Kernel().run(call))]
    assert all(math.isnan(v) if want == "nan" else v == want for v in got), got


# -- one element summing the whole input --------------------------------------------------------------
@pytest.mark.parametrize("n", [10**3, 10**5, 10**7])
def test_one_element_summing_the_whole_input(n):
    """golden(), the reference (float32, block by block), vendor_at and the sum budget for a sum of
    n one-signed terms into one element: the golden is the exact sum, vendor_at the same sum of
    the float32 terms, the reference passes, and a mean divided by n/2 (numel(self) for a self
    broadcast along one axis of 2) fails."""
    x, t = _inputs(n)
    g = OP.golden({"self": x, "target": t}, {"reduction": 2})
    d = x.astype(np.float64) - t
    exact = math.fsum(d * d)
    assert g.nterms == n and g.out == pytest.approx(exact, rel=1e-12)
    ref = OP.reference(_call(x, t, 2, ()))
    std = TABLE.standards["cann"]
    assert judge(ref, g, F32, std, TABLE.slack_ulps).passed
    assert abs(float(ref) - exact) / exact < 1e-5            # float32 accumulation, block by block
    vo, vs, vp = OP.vendor_at({"self": x, "target": t}, {"reduction": 2}, np.array([0]))
    assert vo[0] == pytest.approx(exact, rel=1e-6) and vs[0] == pytest.approx(float(g.scale), rel=1e-6)
    assert vp[0] == pytest.approx(float(g.path), rel=1e-6)
    assert not judge(ref * np.float32(2), g, F32, std, TABLE.slack_ulps).passed


def _short_by_a_tenth(n: int) -> bool:
    """Whether the sum budget of n one-signed terms fails a sum that misses a tenth of them."""
    x, t = _inputs(n)
    g = OP.golden({"self": x, "target": t}, {"reduction": 2})
    d = x.astype(np.float64) - t
    short = np.float32(math.fsum((d * d)[: n - n // 10]))
    return not judge(np.asarray(short), g, F32, TABLE.standards["cann"], TABLE.slack_ulps).passed


@pytest.mark.parametrize("n", [10**3, 10**5])
def test_a_sum_missing_a_tenth_of_its_terms_fails(n):
    assert _short_by_a_tenth(n)


@pytest.mark.xfail(strict=True, reason="the sum budget's sequential-order bound u*P (docs/precision.md, Sums) "
                   "is about u*n/2 relative for one-signed terms: 30% at 10^7 terms, so a sum missing a tenth "
                   "of them passes; a budget from the kernel's documented order (tree in a tile) is not built")
def test_a_sum_of_ten_million_missing_a_tenth_fails():
    assert _short_by_a_tenth(10**7)


def test_the_sum_budget_at_one_element_of_n_terms():
    """The budget's relative half-width for one element summing n one-signed terms, as measured
    (docs/precision.md quotes these): about u*n/2 once the path bound u*P dominates."""
    got = {}
    for n in (10**3, 10**5, 10**7):
        x, t = _inputs(n)
        g = OP.golden({"self": x, "target": t}, {"reduction": 2})
        w = window(np.asarray(g.out), np.asarray(g.scale), n, TABLE.slack_ulps, np.asarray(g.path))
        got[n] = float(w) / float(g.out)
    for n, rel in got.items():
        assert 0.5 * n * 2.0**-25 < rel < 2.5 * n * 2.0**-25, got


def test_vendor_at_walks_a_long_sum_limit_terms_at_a_time():
    """vendor_at for one element of 10^7 terms must not build 10^7 x rank coordinates (nor 10^7
    float64 terms) at once: its peak is a few blocks, not hundreds of MB."""
    n = 10**7
    x, t = _inputs(n)
    x, t = x.reshape(100, 1000, 100), t.reshape(100, 1000, 100)
    tracemalloc.start()
    try:
        OP.vendor_at({"self": x, "target": t}, {"reduction": 2}, np.array([0]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, f"vendor_at peaked at {peak / 2**20:.0f} MiB"


# -- determinism per operator and product -------------------------------------------------------------
class OneUlpApart(ReferenceBackend):
    """The reference's result on odd calls, one ulp above it (last bit flipped) on even calls:
    within any standard, never bit-identical."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def run(self, call):
        self.calls += 1
        out = np.array(super().run(call))
        if self.calls % 2 == 0:
            flat = dtypes.to_bits(out).reshape(-1)
            flat ^= 1
        return out


@lru_cache(maxsize=None)
def _mse_backward_cases():
    return load_cases([ROOT / "cases" / "mse_loss_backward.yaml"])[0]


def _determinism_case(reduction: int):
    return next(c for c in _mse_backward_cases() if c.determinism and c.tier == "default"
                and c.product == "atlas-training" and c.attrs["reduction"] == reduction
                and c.dtypes["self"] == "float32" and c.layout == "contiguous" and numel(c.out_shape or (0,)) >= 6)


def _determinism(case, backend):
    runner = Runner(InProcess(backend), InProcess(backend).info, GoldenStore(ROOT / "golden"), TABLE)
    return runner.check(Kind.DETERMINISM, case, f"suite/conformance/test_determinism.py::t[{case.id}]")


@pytest.mark.parametrize("declared", [{}, {"reduction": (1,)}])
def test_a_case_not_deterministic_by_contract_is_judged_within_standard(monkeypatch, declared):
    """Declared not deterministic on atlas-training (for every call, or for mean): two results one
    ulp apart both pass the standard, and the record says how it was judged."""
    op = ops.get("MseLossBackward")
    monkeypatch.setattr(op, "nondeterministic", {"atlas-training": declared})
    case = _determinism_case(1)
    rec = _determinism(case, OneUlpApart())
    assert rec["deterministic"] is False and rec["standard"] == "cann"
    assert rec["note"] == "not deterministic on atlas-training by its contract: judged twice within standard"
    records = [{"kind": "determinism", "outcome": "passed", "reason": rec["note"], "op": case.op,
                "product": case.product}]
    assert summary.within_standard(records) == [
        "MseLossBackward on atlas-training: 1 determinism test judged within standard, not bit for bit "
        "(not deterministic on atlas-training by its contract)"]


def test_a_result_outside_the_standard_still_fails_where_not_deterministic(monkeypatch):
    class Wrong(OneUlpApart):
        def run(self, call):
            out = super().run(call)
            return out * np.float32(1.5) if self.calls % 2 == 0 else out
    monkeypatch.setattr(ops.get("MseLossBackward"), "nondeterministic", {"atlas-training": {}})
    with pytest.raises(CaseFailure, match=r"run 2 of 2 fails standard 'cann'.*not deterministic on atlas-training"):
        _determinism(_determinism_case(1), Wrong())


@pytest.mark.parametrize("declared,reduction", [(None, 1), ({"reduction": (1,)}, 0), ({}, None)])
def test_elsewhere_two_runs_one_ulp_apart_fail(monkeypatch, declared, reduction):
    """Deterministic by contract (nothing declared; declared for mean only and the call is none;
    declared on another product): the same backend fails, bit for bit as before."""
    op = ops.get("MseLossBackward")
    if declared is not None:
        where = "atlas-training" if reduction is not None else "atlas-a2"
        monkeypatch.setattr(op, "nondeterministic", {where: declared})
    case = _determinism_case(1 if reduction is None else reduction)
    assert op.deterministic_on(case.product, case.attrs)
    with pytest.raises(CaseFailure, match="two runs on identical inputs differ"):
        _determinism(case, OneUlpApart())
