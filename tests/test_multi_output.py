"""Several outputs per call (issue 22), on a made-up two-output operator registered only here
(tests/multiout_ops.py: out and total, total unwritten under reduction none, as aclnnNLLLoss's
totalWeightOut): the cases carry each output's shape and dtype, the goldens one per written output,
the backend gets them in OpCall.outputs and returns a mapping, each written output is judged and a
failure names it, and a malformed reply is one clear line, in pytest's process and across the
process boundary. A single-output call is exactly as it was (OpCall.outputs None)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from suite import ops
from suite.backends.reference import ReferenceBackend
from suite.cases.load import load_cases
from suite.cases.model import Kind, kinds_of
from suite.contract import OpCall
from suite.golden import build as golden_build
from suite.golden.store import GoldenStore
from suite.judge.table import load_table
from suite.report import compare, results
from suite.run import protocol
from suite.run.calls import InProcess, call_of
from suite.run.host import Hosted
from suite.run.runner import CaseFailure, Runner, request_of
from suite.run.wire import ProtocolError
from tests import multiout_ops as M
from tests.core_helpers import write

ROOT = Path(__file__).resolve().parents[1]
SPEC = "tests.multiout_ops:"


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(ops.OPERATORS, M.NAME, M.OP)


@pytest.fixture
def world(tmp_path):
    """The made-up operator's cases and their goldens, generated into tmp_path."""
    cases = load_cases([write(tmp_path, "two_out.yaml", M.CASES)])[0]
    golden_build.generate(cases, tmp_path / "golden")
    return cases, GoldenStore(tmp_path / "golden")


def _runner(host, store) -> Runner:
    return Runner(host, host.info, store, load_table(ROOT / "cases" / "tolerances.yaml"))


def _run_all(host, cases, store, kinds=(Kind.NUMBERS, Kind.REJECTION, Kind.DETERMINISM)):
    """kind, case id -> record or the failure's text."""
    runner, found = _runner(host, store), {}
    for c in cases:
        for k in kinds_of(c):
            if k in kinds:
                try:
                    found[(k, c.id)] = runner.check(k, c, f"t[{c.id}]")
                except CaseFailure as e:
                    found[(k, c.id)] = str(e)
    return found


def _one(cases, reduction="sum", dtype="float32", shape=(2, 3)):
    return next(c for c in cases if c.expect == 0 and c.attrs["reduction"] == M.OP.reductions[reduction]
                and c.out_dtype == dtype and tuple(c.out_shape) == shape)


# -- cases ---------------------------------------------------------------------------------------
def test_a_case_carries_each_output_and_which_are_written(world):
    cases, _ = world
    c = _one(cases, "sum", "float16")
    assert dict(c.outputs) == {"out": ((2, 3), "float16"), "total": ((), "float32")}
    assert c.written == ("out", "total")
    assert _one(cases, "none").written == ("out",)
    assert "total" not in c.id                          # a declared output spells nothing in the id


def test_rejection_cases_name_a_wrong_shape_dtype_or_null_of_the_second_output(world):
    cases, _ = world
    rejected = {c.id: (c.expect, c.why) for c in cases if c.expect}
    assert sorted(rejected.values()) == [(161001, "total is NULL"), (161002, "total dtype float16 is not float32"),
                                         (161002, "total shape (2,) is not ()")]
    assert any(i.endswith("-total2.float32-contiguous-uniform") for i in rejected), sorted(rejected)
    assert any("-totalnull.float32-" in i for i in rejected) and any("-totalscalar.float16-" in i for i in rejected)


def test_a_single_output_operator_has_no_outputs_and_refuses_the_key(tmp_path):
    mse = load_cases([write(tmp_path, "m.yaml", "op: MseLossBackward\nmatrices:\n  - products: [atlas-a2]\n"
                                              "    dtypes: [float32]\n    shapes: [[2, 2, 2]]\n")])[0]
    assert mse and all(c.outputs is None and c.written == ("out",) for c in mse)
    # the request has its one output, by its declared name; the backend's call has no `outputs`
    # (docs/backend-contract.md: a one-output call is exactly what it always was)
    req = request_of(mse[0], {})
    assert (req["outputs"], req["written"]) == ([["out", (2,), "float32"]], ["out"])
    assert call_of({**req, "inputs": {}}).outputs is None
    from suite.common.yamlfile import FileError
    with pytest.raises(FileError, match="unknown key .allowed: determinism, dtypes, expect, layout, name, out_shape, "
                                        "product, reduction, seed, shapes, standard, tier, values"):
        load_cases([write(tmp_path, "bad.yaml", "op: MseLossBackward\ncases:\n  - {product: atlas-a2, "
                                                "dtypes: float32, reduction: mean, shapes: [2, 2, 2], "
                                                "outputs: {x: {shape: [1]}}}\n")])


# -- goldens -------------------------------------------------------------------------------------
def test_one_golden_per_written_output_in_the_bundle_and_check_passes(world, tmp_path):
    cases, store = world
    data = store.load(_one(cases, "sum"))
    assert set(data.others) == {"total"} and data.others["total"].shape == ()
    x = data.inputs["x"].astype(np.float64) * data.inputs["y"].astype(np.float64)
    assert float(data.others["total"].out) == pytest.approx(float(x.sum()), rel=1e-12)
    assert store.load(_one(cases, "none")).others == {}
    assert golden_build.check(cases, tmp_path / "golden") == []


def test_golden_check_finds_a_changed_second_golden(world, tmp_path, monkeypatch):
    cases, _ = world
    real = M.TwoOut.goldens

    def off(self, x, attrs, block=1 << 16):
        found = real(self, x, attrs, block)
        if "total" in found:
            found["total"].out = found["total"].out + 1.0
        return found
    monkeypatch.setattr(M.TwoOut, "goldens", off)
    problems = golden_build.check(cases, tmp_path / "golden")
    assert problems and all("(total)" in p for p in problems), problems


# -- the call and the verdict, in pytest's process -------------------------------------------------
def test_the_backend_gets_every_output_in_signature_order(world):
    cases, _ = world
    c = _one(cases, "none", "float16")
    seen = []

    class Looks(M.Reference):
        def run(self, call):
            seen.append(call)
            return super().run(call)
    _runner(InProcess(Looks()), world[1]).check(Kind.NUMBERS, c, "t")
    call = seen[0]
    assert list(call.outputs) == ["out", "total"]
    assert call.outputs["out"] == ((2, 3), np.dtype(np.float16)) == (call.out_shape, call.out_dtype)
    assert call.outputs["total"] == ((), np.dtype(np.float32))


def test_the_reference_passes_every_case_with_a_record_per_output(world):
    cases, store = world
    found = _run_all(InProcess(M.Reference()), cases, store)
    assert all(isinstance(v, dict) for v in found.values()), [v for v in found.values() if isinstance(v, str)]
    rec = found[(Kind.NUMBERS, _one(cases, "sum").id)]
    assert set(rec["outputs"]) == {"out", "total"} and rec["max_ulp"] == rec["outputs"]["out"]["max_ulp"]
    assert set(found[(Kind.NUMBERS, _one(cases, "none").id)]["outputs"]) == {"out"}


def test_a_wrong_second_output_fails_the_case_naming_it(world):
    cases, store = world
    with pytest.raises(CaseFailure) as e:
        _runner(InProcess(M.WrongTotal()), store).check(Kind.NUMBERS, _one(cases, "sum", "float16"), "t")
    assert e.value.summary.split(": ", 1)[1].startswith("total float32[] fails standard ")
    assert e.value.record["outputs"]["out"]["n_over"] == 0 and e.value.record["outputs"]["total"]["n_over"] == 1


def test_a_failing_second_output_keeps_the_first_outputs_metrics_its_worst_and_the_reproducer(world):
    """The record of a failed call with several outputs: status 0 (it was accepted), the first
    output's metrics at the top, the failing output's worst elements (no inputs: they are named
    only for the first), details that name that output, and the test's one-line reproducer."""
    cases, store = world
    case = _one(cases, "sum")
    with pytest.raises(CaseFailure) as e:
        _runner(InProcess(M.WrongTotal()), store).check(Kind.NUMBERS, case, f"tests/x.py::t[{case.id}]")
    rec = e.value.record
    assert rec["status"] == 0
    assert rec["n_over"] == rec["outputs"]["out"]["n_over"] == 0 and rec["outputs"]["total"]["n_over"] == 1
    assert [(w["index"], w["inputs"]) for w in rec["worst"]] == [([], None)]
    assert "    total index ():" in str(e.value).splitlines()
    assert e.value.reproduce is not None and case.id in e.value.reproduce


def test_a_second_output_that_changed_since_the_numbers_test_fails_the_determinism_test(world):
    """Two determinism calls that agree with each other but not with the numbers test's call (total's
    last bit, from the second call on): a result that drifts with what ran before."""
    cases, store = world
    case = _one(cases, "sum")
    runner = _runner(InProcess(M.DriftingTotal()), store)
    runner.check(Kind.NUMBERS, case, "t")                       # the first call: the golden's bits
    with pytest.raises(CaseFailure, match="the same call earlier in this session gave other bits"):
        runner.check(Kind.DETERMINISM, case, "t")


def test_each_output_is_judged_through_its_own_rounding_path_with_the_products_flush(world, monkeypatch):
    """The first output through the operator's rounding path (its dtypes, a sum's terms, the
    vendor's computation, the product's flush: suite/run/paths.py); an output beyond the first
    against its own golden, with the product's flush: what judge() is handed (its effect on a
    verdict is tests/test_judge_boundaries.py's)."""
    from suite.run import paths, runner as runner_module
    cases, store = world
    case = _one(cases, "sum")
    assert paths.may_flush(case.product) is True            # cases/hardware.yaml: not established
    seen = {}
    real = runner_module.judge

    def recording(got, golden, out_dtype, std, slack, **kw):
        seen[got.shape] = kw
        return real(got, golden, out_dtype, std, slack, **kw)
    monkeypatch.setattr(runner_module, "judge", recording)
    _runner(InProcess(M.Reference()), store).check(Kind.NUMBERS, case, "t")
    data = store.load(case)
    path = paths.rounding_path(case, data, np.dtype(np.float32))
    assert path.terms is not None and path.flush is True and callable(path.vendor)
    vendor = seen[(2, 3)].pop("vendor")                 # a closure over this call's data: made anew
    assert callable(vendor) and vendor.__qualname__ == path.vendor.__qualname__
    kept = seen[(2, 3)].pop("kept")                     # and the same with gradual underflow
    assert callable(kept) and kept.__qualname__ == path.kept.__qualname__
    assert seen == {(2, 3): {"through": path.through, "terms": path.terms, "flush": True}, (): {"flush": True}}


@pytest.mark.parametrize("backend, says", [
    (M.OneArray, "the backend returned shape (2, 3) dtype float32; a call with several outputs returns a mapping"),
    (M.Missing, "the backend returned a mapping without total; the call writes out float32[2, 3] and total float32[]"),
    (M.Extra, "the backend returned a mapping with 'spare', which is no output of TwoOutTestOp"),
    (M.WrongShape, "the backend returned total as shape (1,) dtype float32; the call writes"),
])
def test_a_malformed_result_fails_with_one_clear_line(world, backend, says):
    cases, store = world
    with pytest.raises(CaseFailure) as e:
        _runner(InProcess(backend()), store).check(Kind.NUMBERS, _one(cases, "sum"), "t")
    first = str(e.value).splitlines()[0]
    assert says in first, first
    assert e.value.reproduce == "pytest t"


def test_an_unwritten_outputs_garbage_passes(world):
    cases, store = world
    none = [c for c in cases if c.expect == 0 and c.attrs["reduction"] == 0]
    assert len(none) == 4
    found = _run_all(InProcess(M.Garbage()), none, store)
    assert all(isinstance(v, dict) for v in found.values()), found


def test_two_outputs_in_one_buffer_fail_the_determinism_test(world):
    cases, store = world
    with pytest.raises(CaseFailure, match="shares memory with output out"):
        _runner(InProcess(M.SharedTotal()), store).check(Kind.DETERMINISM, _one(cases, "sum"), "t")


def test_a_second_output_that_differs_between_runs_fails_naming_it(world):
    cases, store = world
    with pytest.raises(CaseFailure) as e:
        _runner(InProcess(M.DriftingTotal()), store).check(Kind.DETERMINISM, _one(cases, "sum"), "t")
    assert e.value.summary.split(": ", 1)[1].startswith("total: two runs on identical inputs differ in 1 of 1")
    assert str(e.value).splitlines()[1].startswith("    index (): first ")     # total's own shape, not out's
    assert e.value.reproduce == "pytest t"


def test_two_outputs_that_differ_between_runs_are_both_named_each_with_its_elements(world):
    """Issue 42, item 5: every differing output is named, not the first alone."""
    class DriftingBoth(M.DriftingTotal):
        def run(self, call):
            got = dict(super().run(call))
            if self.calls >= 2:
                got["out"] = np.array(got["out"], copy=True)
                got["out"].reshape(-1)[0] = -got["out"].reshape(-1)[0] - 1
            return got
    cases, store = world
    with pytest.raises(CaseFailure) as e:
        _runner(InProcess(DriftingBoth()), store).check(Kind.DETERMINISM, _one(cases, "sum"), "t")
    head = e.value.summary.split(": ", 1)[1]
    assert head.startswith("out: two runs on identical inputs differ in 1 of 6 elements")
    assert "; total: two runs on identical inputs differ in 1 of 1 elements" in head
    lines = str(e.value).splitlines()
    assert lines[1] == "  out:" and "  total:" in lines and lines[lines.index("  total:") + 1].startswith("    index (): ")


def test_a_nondeterministic_operator_judges_every_output_of_every_run(world, monkeypatch):
    cases, store = world
    monkeypatch.setattr(M.OP, "nondeterministic", {"atlas-a2": {}}, raising=False)
    c = _one(cases, "sum")
    rec = _runner(InProcess(M.Reference()), store).check(Kind.DETERMINISM, c, "t")
    assert rec["deterministic"] is False and set(rec["outputs"]) == {"out", "total"}
    # the first output's metrics where a single output's are (issue 21, mut4: mutants of _judged_twice)
    assert rec["status"] == 0 and {k: rec[k] for k in rec["outputs"]["out"]} == rec["outputs"]["out"]
    assert rec["outputs"]["out"] != rec["outputs"]["total"]
    assert rec["note"] == "not deterministic on atlas-a2 by its contract: judged twice within standard"
    with pytest.raises(CaseFailure, match=r"^.*: total of run 1 of 2 fails standard"):
        _runner(InProcess(M.WrongTotal()), store).check(Kind.DETERMINISM, c, "t")


def test_the_torch_backend_returns_each_output_of_its_mapping(world):
    pytest.importorskip("torch")
    cases, store = world
    found = _run_all(InProcess(M.Torch()), cases, store, (Kind.NUMBERS, Kind.DETERMINISM))
    assert len(found) == 16 and all(isinstance(v, dict) for v in found.values()), found
    assert set(found[(Kind.NUMBERS, _one(cases, "sum", "float16").id)]["outputs"]) == {"out", "total"}


# -- across the process boundary -----------------------------------------------------------------
@pytest.mark.parametrize("name, says", [
    ("Reference", None),
    ("WrongTotal", "total float32[] fails standard"),
    ("OneArray", "the backend returned shape (2, 3) dtype float32; a call with several outputs returns a mapping"),
    ("Missing", "the backend returned a mapping without total"),
    ("Extra", "the backend returned a mapping with 'spare'"),
    ("WrongShape", "the backend returned total as shape (1,) dtype float32"),
])
def test_across_the_process_boundary(world, name, says):
    cases, store = world
    h = Hosted(SPEC + name, {}, timeout=60)
    h.start()
    try:
        found = _run_all(h, [_one(cases, "sum"), _one(cases, "none", "float16")], store,
                         (Kind.NUMBERS, Kind.DETERMINISM))
    finally:
        h.close()
    texts = [v for (k, i), v in found.items() if isinstance(v, str) and "sum" in i]
    if says is None:
        assert all(isinstance(v, dict) for v in found.values()), found
    else:
        assert texts and all(says in t.splitlines()[0] for t in texts), texts
    # none: total unwritten, so a backend that gets only total wrong still passes there
    if name in ("WrongTotal", "Missing", "WrongShape", "Reference"):
        assert all(isinstance(v, dict) for (k, i), v in found.items() if "none" in i), found


def _head(array):
    return {"array": array, "status": None, "unsupported": None, "raised": None, "trace": None, "returned": None,
            "aliased": None, "violation": None, "device_fault": None, "device_lost": False}


WRITTEN = [("out", "float32", (2, 3)), ("total", "float32", ())]


def test_the_protocol_checks_each_named_array():
    good = [np.zeros((2, 3), np.float32), np.zeros((), np.float32)]
    assert protocol.done(("done", 1, [_head({"out": 0, "total": 1})]), 1, 1, 2, WRITTEN, good)
    for head, arrays, says in [
        ({"out": 0}, good[:1], "arrays {'out': 0} for the outputs out, total"),
        ({"out": 0, "total": 1, "x": 2}, good + good[1:], "for the outputs out, total"),
        ({"out": 1, "total": 0}, good, "out as dtype float32 shape (), not float32 (2, 3)"),
        ({"out": 0, "total": 0}, good[:1] + good[:1], "total as dtype float32 shape (2, 3), not float32 ()"),
        (0, good[:1], "arrays 0 for the outputs out, total"),
    ]:
        with pytest.raises(ProtocolError) as e:
            protocol.done(("done", 1, [_head(head)]), 1, 1, len(arrays), WRITTEN, arrays)
        assert says in str(e.value), (head, str(e.value))
    # one output: its array named too, as every call's (a bare index is no reply)
    assert protocol.done(("done", 1, [_head({"out": 0})]), 1, 1, 1, WRITTEN[:1], good[:1])
    with pytest.raises(ProtocolError, match="arrays 0 for the outputs out$"):
        protocol.done(("done", 1, [_head(0)]), 1, 1, 1, WRITTEN[:1], good[:1])


# -- the contract ---------------------------------------------------------------------------------
def test_opcall_positional_construction_still_works_and_outputs_defaults_to_none():
    call = OpCall("MseLossBackward", {}, {"reduction": 1}, (2,), np.dtype(np.float32), "atlas-a2")
    assert call.outputs is None


def test_a_single_output_backend_written_against_todays_contract_passes_unchanged(tmp_path):
    """An old backend that never reads `outputs` and returns one array (MseLossBackward)."""
    seen = []

    class Old:
        name = "old"
        capabilities = {"status"}

        def run(self, call):
            seen.append(call.outputs)
            return ReferenceBackend().run(OpCall(call.op, call.inputs, call.attrs, call.out_shape,
                                                 call.out_dtype, call.product))
    cases = load_cases([write(tmp_path, "m.yaml", "op: MseLossBackward\nmatrices:\n  - products: [atlas-a2]\n"
                                                "    dtypes: [float32, float16]\n    shapes: [[2x3, 2x3, 2x3]]\n"
                                                "    determinism: true\n")])[0]
    golden_build.generate(cases, tmp_path / "golden")
    found = _run_all(InProcess(Old()), cases, GoldenStore(tmp_path / "golden"))
    assert found and all(isinstance(v, dict) and "outputs" not in v for v in found.values()), found
    assert set(seen) == {None}


# -- the record ------------------------------------------------------------------------------------
def _metrics(max_ulp):
    return {"standard": "s", "n": 1, "n_over": 0, "share_over": 0.0, "mismatches": 0, "n_gross": 0,
            "max_ulp": max_ulp, "mean_ulp": 0.0, "max_abs": 0.0, "max_rel": 0.0, "rmse": 0.0}


def _doc(total_ulp, out_ulp=0.0):
    rec = results.make_record({"key": "k", "case": "c", "kind": "numbers", "op": M.NAME, "product": "atlas-a2",
                               "dtypes": {}, "out_dtype": "float32", "reduction": 2, "attrs": {"reduction": 2}, "shapes": {},
                               "out_shape": [], "layout": "contiguous", "values": "uniform", "expect": 0,
                               "status": 0, "reproduce": None, **_metrics(out_ulp),
                               "outputs": {"out": _metrics(out_ulp), "total": _metrics(total_ulp)}},
                              "passed", None)
    return results.make_document({"suite_version": "x", "backend": {}, "products": [], "standard_override": None,
                                  "manifest_hash": "h", "shard": None, "machine": results.machine()}, [rec])


def test_results_json_keeps_each_outputs_metrics_and_validates_them():
    doc = _doc(0.5)
    assert results.validate(doc) == [] and doc["records"][0]["outputs"]["total"]["max_ulp"] == 0.5
    doc["records"][0]["outputs"]["total"]["max_ulp"] = "lots"
    doc["records"][0]["outputs"]["out"] = 3
    assert sorted(results.validate(doc)) == ["records[0].outputs.'total': field 'max_ulp' is 'lots', expected num",
                                             "records[0].outputs: 'out' is 3, not an object of metrics"]


def test_report_diff_compares_each_output():
    d = compare.diff(_doc(0.5), _doc(9.0))
    assert len(d.regressions) == 1 and d.worse
    assert "total 0.5 -> 9 ulp" in compare.render_diff(d)
    assert not compare.diff(_doc(0.5), _doc(0.5)).worse


@pytest.mark.parametrize("outputs, says", [
    ("{count: {shape: [1]}}", "field 'count': unknown output (allowed: total)"),
    ("{total: [1]}", "field 'total': a mapping with shape, dtype or both"),
    ("{total: {shape: [1], colour: red}}", "field 'total': a mapping with shape, dtype or both"),
    ("{total: 3}", "field 'total': a mapping with shape, dtype or both"),
    ("{total: {dtype: float128}}", "field 'dtype': unknown dtype 'float128'"),
    ("{total: {shape: 2y}}", "field 'outputs.total.shape': malformed shape '2y'"),
    ("[total]", "field 'outputs': a mapping of output name to {shape, dtype} (total)"),
])
def test_a_mistake_in_a_single_cases_outputs_is_one_line_naming_the_file(tmp_path, outputs, says):
    from suite.common.yamlfile import FileError
    text = ("op: TwoOutTestOp\ncases:\n  - {product: atlas-a2, dtypes: float32, reduction: sum, "
            f"shapes: [2, 2], outputs: {outputs}}}\n")
    with pytest.raises(FileError) as e:
        load_cases([write(tmp_path, "bad.yaml", text)])
    assert "bad.yaml:3" in str(e.value) and says in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_mutants_control_and_a_sum_variant_write_every_output(world):
    """The self-test's kernels (tests/mutants/kernel.py) take a call with several outputs: the
    control returns each written output, a kernel whose steps make out alone (a SumKernel's own
    sum) gets the others from the operator's reference, and a defect in out's rounding step
    (round_out) shows in out only."""
    from tests.mutants.correct import Float32SequentialSum
    from tests.mutants.kernel import Float32Kernel

    class OutTruncated(Float32Kernel):
        def round_out(self, r32, call):
            return np.asarray(super().round_out(r32, call) * 1.5, dtype=call.out_dtype)

    cases, store = world
    for kernel in (Float32Kernel(), Float32SequentialSum()):
        found = _run_all(InProcess(kernel), cases, store)
        assert all(isinstance(v, dict) for v in found.values()), \
            (type(kernel).__name__, [v for v in found.values() if isinstance(v, str)])
    with pytest.raises(CaseFailure) as e:
        _runner(InProcess(OutTruncated()), store).check(Kind.NUMBERS, _one(cases, "sum", "float16"), "t")
    assert e.value.summary.split(": ", 1)[1].startswith("out float16[2, 3] fails standard ")
    assert e.value.record["outputs"]["total"]["n_over"] == 0


def test_an_output_given_without_its_shape_or_dtype_takes_the_operators_declaration_for_that_call():
    """_fill_outputs asks the operator with the call's shapes, its out dtype and its attributes (an
    operator's second output may depend on each), keeps what the case gave, and keeps a declared
    "no valid shape" (None) as None."""
    from suite.cases import expand

    class Declares:
        def output_shape(self, name, shapes, attrs):
            return None if name == "gone" else [shapes["x"][0], attrs["k"]]

        def output_dtype(self, name, dts, od, attrs):
            return f"{od}:{dts['x']}:{attrs['k']}"
    M_ = expand._MISSING
    given = {"a": (M_, M_), "gone": (M_, "float16"), "b": ((3,), "int8"), "c": ((4,), M_)}
    filled = expand._fill_outputs(Declares(), given, {"x": (5, 2)}, {"x": "float32"}, "float16", {"k": 7})
    assert filled == {"a": ((5, 7), "float16:float32:7"), "gone": (None, "float16"), "b": ((3,), "int8"),
                      "c": ((4,), "float16:float32:7")}


def test_outputs_that_are_not_a_mapping_name_every_output_beyond_the_first(tmp_path, monkeypatch):
    from suite.common.yamlfile import FileError
    monkeypatch.setattr(M.TwoOut, "outputs", ("out", "total", "count"))
    text = ("op: TwoOutTestOp\ncases:\n  - {product: atlas-a2, dtypes: float32, reduction: sum, "
            "shapes: [2, 2], outputs: [total]}\n")
    with pytest.raises(FileError, match=r"field 'outputs': a mapping of output name to \{shape, dtype\} \(total, count\)$"):
        load_cases([write(tmp_path, "bad.yaml", text)])
    with pytest.raises(FileError, match=r"field 'cnt': unknown output \(allowed: total, count\)$"):
        load_cases([write(tmp_path, "bad.yaml", text.replace("[total]", "{cnt: {shape: [1]}}"))])


def test_an_outputs_declared_shape_and_dtype_follow_the_calls_shapes_and_attributes(tmp_path, monkeypatch):
    """A case's outputs beyond the first come from the operator's declaration for that call: its
    input shapes and attributes reach output_shape and output_dtype, and an output whose declared
    dtype is none is spelt `none` in the id of a case that names it."""
    from suite.ops.base import Operator

    def shape(self, name, shapes, attrs):
        return (shapes["x"][0], attrs["reduction"]) if name == "total" else Operator.output_shape(self, name, shapes, attrs)

    def dtype(self, name, dts, od, attrs):
        if name != "total":
            return Operator.output_dtype(self, name, dts, od, attrs)
        return None if od == "float16" else "float32"
    monkeypatch.setattr(M.TwoOut, "output_shape", shape)
    monkeypatch.setattr(M.TwoOut, "output_dtype", dtype)
    text = ("op: TwoOutTestOp\ncases:\n"
            "  - {product: atlas-a2, dtypes: float32, reduction: sum, shapes: [3x2, 3x2]}\n"
            "  - {product: atlas-a2, dtypes: float16, reduction: sum, shapes: [3x2, 3x2], outputs: {total: {shape: [5]}}}\n"
            "  - {product: atlas-a2, dtypes: float32, reduction: sum, shapes: [4x2, 4x2], outputs: {total: {dtype: float16}}}\n")
    plain, named, typed = load_cases([write(tmp_path, "t.yaml", text)])[0]
    assert plain.outputs["total"] == ((3, 2), "float32")
    assert named.outputs["total"] == ((5,), None) and "-total5.none-" in named.id, named.id
    assert typed.outputs["total"] == ((4, 2), "float16") and "-total4x2.float16-" in typed.id, typed.id
    assert request_of(named, {})["outputs"][1] == ["total", (5,), None]          # no dtype: none in the request


@pytest.mark.parametrize("first, second, says", [
    ("dtype: float32", "shape: 2y", "field 'outputs.total.shape': malformed shape '2y'"),
    ("shape: [2]", "dtype: float128", "field 'dtype': unknown dtype 'float128'"),
], ids=["shape", "dtype"])
def test_a_mistake_in_an_outputs_block_names_its_own_line(tmp_path, first, second, says):
    from suite.common.yamlfile import FileError
    text = ("op: TwoOutTestOp\ncases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: sum\n"
            f"    shapes: [2, 2]\n    outputs:\n      total:\n        {first}\n        {second}\n")
    with pytest.raises(FileError) as e:
        load_cases([write(tmp_path, "bad.yaml", text)])
    assert str(e.value).startswith(f"{tmp_path / 'bad.yaml'}:10: {says}"), str(e.value)


def test_an_operator_without_reductions_refuses_a_reduction_key(tmp_path, monkeypatch):
    from suite.common.yamlfile import FileError
    monkeypatch.setattr(M.TwoOut, "reductions", {})
    text = "op: TwoOutTestOp\ncases:\n  - {product: atlas-a2, dtypes: float32, reduction: sum, shapes: [2, 2]}\n"
    with pytest.raises(FileError, match=r"bad.yaml:3: field 'reduction': unknown key"):
        load_cases([write(tmp_path, "bad.yaml", text)])
