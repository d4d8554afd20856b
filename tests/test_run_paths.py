"""A case's rounding path (suite/run/paths.py): the dtypes its operator rounds through, the dtype it
is judged in, and when the vendor's own arithmetic is consulted."""
from __future__ import annotations

import itertools
import types
from pathlib import Path

import numpy as np
import pytest

from suite.common import dtypes
from suite.run import paths

_names = itertools.count()


class FakeOp:
    def __init__(self, through, terms):
        self.through, self.terms, self.asked = through, terms, []

    def result_dtype(self, live, out):
        self.asked.append(("result", live, out))
        return self.through

    def term_dtype(self, live):
        self.asked.append(("terms", live))
        return self.terms

    def vendor_at(self, inputs, attrs, idx, flush):
        return ("vendor", inputs, attrs, idx, flush)


def _case(monkeypatch, through="float32", terms="float32", product="atlas-a2"):
    op = FakeOp(through, terms)
    name = f"Fake{next(_names)}"                      # _path_dtypes keeps each (op, dtypes, out) it saw
    monkeypatch.setattr(paths.ops, "get", lambda n: op if n == name else pytest.fail(n))
    case = types.SimpleNamespace(op=name, dtypes={"self": "float16", "target": "float32", "weight": "float32"},
                                 shapes={"self": (2,), "target": (2,), "weight": None}, product=product,
                                 attrs={"reduction": 1})
    return case, op


def test_the_live_inputs_are_those_passed():
    case = types.SimpleNamespace(dtypes={"self": "float16", "weight": "float32", "target": "int64"},
                                 shapes={"self": (2,), "weight": None, "target": ()})
    assert paths._live(case) == (("self", "float16"), ("target", "int64"))


@pytest.mark.parametrize("through, out, judged", [
    ("float16", "float32", "float16"), ("float32", "float16", "float16"), ("bfloat16", "float16", "bfloat16"),
    ("float16", "bfloat16", "bfloat16"), ("float32", "float32", "float32"), ("bfloat16", "float32", "bfloat16"),
])
def test_a_result_is_judged_in_the_coarser_of_its_path_and_out(monkeypatch, through, out, judged):
    case, op = _case(monkeypatch, through=through)
    out_dt = dtypes.dtype_of(out)
    assert paths.judged_dtype(case, out_dt) == dtypes.dtype_of(judged)
    assert paths.result_dtype(case, out_dt) == dtypes.dtype_of(through)
    live = {"self": "float16", "target": "float32"}
    assert op.asked == [("result", live, out), ("terms", live)]      # asked once: the second answer is kept


def test_a_path_that_may_flush_consults_the_vendor(monkeypatch):
    case, op = _case(monkeypatch, through="float16")
    monkeypatch.setattr(paths, "may_flush", lambda p: p == "atlas-a2")
    data = types.SimpleNamespace(inputs={"self": np.ones(2)})
    p = paths.rounding_path(case, data, np.dtype(np.float32))
    assert (p.through, p.terms, p.flush) == (np.float16, np.float32, True)
    idx = np.arange(2)
    got = p.vendor(idx)
    assert got[0] == "vendor" and got[1] is data.inputs and got[2] == {"reduction": 1} and got[3] is idx
    assert got[4] is True
    kept = p.kept(idx)                       # and, where it may flush, the same without flushing
    assert kept[:2] == ("vendor", data.inputs) and kept[3] is idx and kept[4] is False


def test_a_path_with_16_bit_terms_consults_the_vendor_without_flushing(monkeypatch):
    case, op = _case(monkeypatch, terms="bfloat16")
    monkeypatch.setattr(paths, "may_flush", lambda p: False)
    p = paths.rounding_path(case, types.SimpleNamespace(inputs={}), np.dtype(np.float32))
    assert p.terms == dtypes.bfloat16 and p.flush is False and p.vendor(np.arange(1))[4] is False


def test_a_float32_path_that_cannot_flush_consults_the_vendor_with_gradual_underflow(monkeypatch):
    case, op = _case(monkeypatch)
    monkeypatch.setattr(paths, "may_flush", lambda p: False)
    p = paths.rounding_path(case, types.SimpleNamespace(inputs={}), np.dtype(np.float16))
    assert p.flush is False and p.through == np.float32 and p.kept is None
    assert p.vendor(np.arange(1))[4] is False


def test_a_subnormal_intermediate_kept_passes_and_a_result_outside_every_window_fails():
    """KlDiv with a log target: out = exp(t)·(t − s). exp(−98.5) is a float32 subnormal holding
    about 10 significant bits, so a kernel keeping it (gradual underflow) is off the float64
    golden by ~3e4 ulps, as the float32 computation in the vendor's order is (found by the
    vendor's own cases, issue 44); flushing it gives 0. Both pass on a product that may flush,
    a product that keeps subnormals passes the first alone, and a result in neither window fails."""
    from suite import ops
    from suite.contract import OpCall
    from suite.judge.judging import judge
    from suite.judge.table import load_table
    table = load_table(Path(__file__).resolve().parents[1] / "cases" / "tolerances.yaml")
    op, f32 = ops.get("KlDiv"), np.dtype(np.float32)
    x = {"self": np.array([-1.7870150280499167e19, 2.0], f32), "target": np.array([-98.49748229980469, -1.0], f32)}
    attrs = {"reduction": 0, "logTarget": True}
    golden = op.golden(x, attrs)
    kept = op.reference(OpCall("KlDiv", x, attrs, (2,), f32, "atlas-a2"))
    flushed = op.reference(OpCall("KlDiv", x, attrs, (2,), f32, "atlas-a2"), flush=True)
    assert kept[0] != 0 and abs(float(kept[0]) / golden.out[0] - 1) > 1e-3 and flushed[0] == 0

    def verdict(got, may_flush):
        p = paths.Path(vendor=lambda i: op.vendor_at(x, attrs, i, flush=may_flush), flush=may_flush,
                       kept=(lambda i: op.vendor_at(x, attrs, i, flush=False)) if may_flush else None)
        return judge(got, golden, f32, table.standards["strict"], table.slack_ulps,
                     vendor=p.vendor, flush=p.flush, kept=p.kept).passed
    assert verdict(kept, True) and verdict(flushed, True) and verdict(kept, False)
    assert not verdict(flushed, False)
    wrong = kept.copy()
    wrong[0] = np.float32(golden.out[0] * 1.5)
    assert not verdict(wrong, True) and not verdict(wrong, False)


def test_every_product_may_flush_float32_subnormals_until_established():
    assert [paths.may_flush(p) for p in ("atlas-training", "atlas-inference", "atlas-a2", "atlas-a3")] == [True] * 4


def test_whether_a_product_may_flush_is_read_from_its_hardware(monkeypatch):
    monkeypatch.setattr(paths.hardware, "load_hardware",
                        lambda: {"kept-product": types.SimpleNamespace(may_flush=False),
                                 "flushing-product": types.SimpleNamespace(may_flush=True)})
    assert paths.may_flush("kept-product") is False and paths.may_flush("flushing-product") is True
