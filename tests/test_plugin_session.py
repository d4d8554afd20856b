"""The plugin's session (suite/plugin/__init__.py) in pytest's own process: the options it checks
(each bad one one usage-error line), the reproducer's options, the header, which cases become
parameters, the order of the collected items, and what one case's test comes to (skip, failure,
record). The end-to-end runs of tests/test_plugin.py see the same through a pytest of their own,
where a mutation run cannot follow them."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from suite import plugin
from suite.cases.load import load_cases
from suite.cases.model import Kind
from suite.contract import PRODUCTS
from suite.run.runner import CaseFailure, CaseSkip

ROOT = Path(__file__).resolve().parents[1]
CASES, _ = load_cases([ROOT / "cases" / "mse_loss_backward.yaml"])
DEFAULTS = dict(backend=None, backend_opt=[], product=[], op=[], cases=[], golden_dir=None, tolerances=None,
                standard=None, scale="default", golden_cache=None, isolation="process", case_timeout=60.0,
                backend_restarts=8, confine="auto", timing=False, timing_rounds=10, timing_warm=False,
                max_memory=None, report_dir=None, timing_baseline=None, timing_baseline_opt=[],
                perf_threshold=None, perf_alpha=None)


def _config(args=(), **opts):
    return SimpleNamespace(option=SimpleNamespace(**{**DEFAULTS, **opts}), stash={},
                           invocation_params=SimpleNamespace(args=list(args), dir=ROOT))


def _state(args=(), **opts):
    return plugin.Conformance(_config(args, **opts))


def test_the_defaults_are_the_data_folders_every_product_and_no_timing():
    st = _state()
    assert st.case_paths == [ROOT / "cases"] and st.golden_dir == ROOT / "golden"
    assert st.tolerance_path == ROOT / "cases" / "tolerances.yaml"
    assert st.products == list(PRODUCTS) and st.ops == [] and st.backend_opts == {}
    assert st.max_memory is None and st.timing is None and st.error is None and st.incidents == []
    assert (st._runner, st.info, st._closed, st._cases, st.policy) == (None, None, None, None, None)
    assert (st.tolerances_hash, st.manifest_hash) == (None, None)
    assert st.cache_dir is not None and _state(golden_cache="none").cache_dir is None
    assert _state(golden_cache="/tmp/c").cache_dir == Path("/tmp/c")


def test_the_options_given_are_read():
    st = _state(cases=["a.yaml", "b"], golden_dir="g", tolerances="t.yaml", product=["atlas-a2, atlas-training"],
                op=["MseLossBackward", "KlDiv"], backend_opt=["device=1", "x=y"], max_memory="2K",
                timing=True, timing_rounds=3, timing_warm=True)
    assert st.case_paths == [Path("a.yaml"), Path("b")] and st.golden_dir == Path("g")
    assert st.tolerance_path == Path("t.yaml")
    assert st.products == ["atlas-a2", "atlas-training"] and st.ops == ["MseLossBackward", "KlDiv"]
    assert st.backend_opts == {"device": "1", "x": "y"} and st.max_memory == 2048
    assert (st.timing.rounds, st.timing.warm) == (3, True)


@pytest.mark.parametrize("opts,line", [
    ({"product": ["atlas-a2,atlas-nine", "x"]}, f"--product: unknown atlas-nine, x (known: {', '.join(PRODUCTS)})"),
    ({"op": ["NoSuchOp"]}, "--op: unknown NoSuchOp (known: "),
    ({"backend_opt": ["novalue"]}, "--backend-opt "),
    ({"max_memory": "lots"}, "--max-memory: "),
    ({"case_timeout": -1.0}, "--case-timeout -1: seconds, 0 or more"),
    ({"case_timeout": float("nan")}, "--case-timeout nan: seconds, 0 or more"),
    ({"backend_restarts": -1}, "--backend-restarts -1: 0 or more"),
    ({"timing": True, "timing_rounds": 0}, "--timing-rounds 0: 1 or more"),
    ({"timing_rounds": 5}, "--timing-rounds and --timing-warm take effect only with --timing"),
    ({"timing_warm": True}, "--timing-rounds and --timing-warm take effect only with --timing"),
])
def test_a_bad_option_is_one_usage_error_line(opts, line):
    with pytest.raises(pytest.UsageError) as e:
        _state(**opts)
    assert str(e.value).startswith(line) and "\n" not in str(e.value), str(e.value)
    assert e.value.__cause__ is None and (e.value.__suppress_context__ or e.value.__context__ is None)


def test_edge_values_of_the_checked_options_are_accepted():
    st = _state(case_timeout=0.0, backend_restarts=0, timing=True, timing_rounds=1)
    assert st.timing.rounds == 1 and not st.timing.warm
    assert _state(product=[" atlas-a2 ,", ""]).products == ["atlas-a2"]


def test_the_reproducer_repeats_every_option_that_changes_what_a_case_does():
    assert _state().replay_args() == ""
    st = _state(["-p", "suite.plugin", "-x"], backend="pkg.mod:Be", backend_opt=["device=1", "a=b c"],
                cases=["c.yaml"], product=["atlas-a2"], op=["MseLossBackward"], golden_dir="g", tolerances="t.yaml",
                standard="strict", golden_cache="none", max_memory="1G", isolation="none", confine="off",
                case_timeout=2.5, scale="huge", timing=True, timing_rounds=3, timing_warm=True)
    assert st.replay_args() == (
        " -p suite.plugin --backend pkg.mod:Be --backend-opt device=1 --backend-opt 'a=b c' --cases c.yaml"
        " --product atlas-a2 --op MseLossBackward --golden-dir g --tolerances t.yaml --standard strict"
        " --golden-cache none --max-memory 1G --isolation none --confine off --case-timeout 2.5 --scale huge"
        " --timing --timing-rounds 3 --timing-warm")
    assert _state(["-psuite.plugin"]).replay_args() == " -p suite.plugin"
    assert _state(["-p", "other"]).replay_args() == "" and _state(["suite.plugin"]).replay_args() == ""
    assert _state(scale="small", timing=True).replay_args() == " --timing"


def test_the_hardware_file_is_the_one_beside_the_case_files(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "hardware.yaml").write_text("")
    (tmp_path / "b" / "x.yaml").write_text("")
    assert _state(cases=[str(tmp_path / "a")]).hardware_path() is None
    assert _state(cases=[str(tmp_path / "a"), str(tmp_path / "b" / "x.yaml")]).hardware_path() == \
        tmp_path / "b" / "hardware.yaml"
    assert _state(cases=[str(tmp_path / "b")]).hardware_path() == tmp_path / "b" / "hardware.yaml"


def test_the_header_says_the_backend_products_scale_cache_isolation_and_protections():
    config = _config(backend="pkg.mod:Be", backend_opt=["device=1"], product=["atlas-a2"], golden_cache="none")
    config.stash[plugin.STATE] = st = plugin.Conformance(config)
    prot = ", ".join(f"{k} {v}" for k, v in st.protections.items())
    assert plugin.pytest_report_header(config) == (
        "aclnn-conformance: backend pkg.mod:Be device=1; products atlas-a2; scale default; golden cache none; "
        f"backend in its own process, 60 s a call + 0.1 s per million elements; protections: {prot}")
    config = _config(case_timeout=0.0, golden_cache="/tmp/c")
    config.stash[plugin.STATE] = st = plugin.Conformance(config)
    assert plugin.pytest_report_header(config).startswith(
        f"aclnn-conformance: backend reference; products {', '.join(PRODUCTS)}; scale default; golden cache /tmp/c; "
        "backend in its own process, 0 s a call (no deadline); protections: ")
    config = _config(isolation="none")
    config.stash[plugin.STATE] = plugin.Conformance(config)
    assert "; backend in pytest's process (--isolation none); protections: " in plugin.pytest_report_header(config)


# -- which cases run -------------------------------------------------------------------------------
INFO = SimpleNamespace(name="be", capabilities={"status"}, products=("atlas-a2", "atlas-training"), deterministic=False)


def _params(kind, cases=CASES, info=INFO, **opts):
    st = _state(**opts)
    st._cases = list(cases)
    st._runner = SimpleNamespace(info=info)
    return st, st.params(kind)


def test_the_parameters_are_the_cases_of_the_products_and_operators_run():
    st, params = _params(Kind.NUMBERS, product=["atlas-a2", "atlas-inference"])
    ids = [p.id for p in params]
    assert ids == [c.id for c in CASES if c.product == "atlas-a2" and Kind.NUMBERS in _kinds(c) and c.tier != "huge"]
    assert all(p.values[0].id == p.id and not p.marks for p in params)
    _, rejection = _params(Kind.REJECTION)
    assert {p.id for p in rejection} == {c.id for c in CASES if c.product in INFO.products
                                         and Kind.REJECTION in _kinds(c) and c.tier != "huge"} != set()


def _kinds(c):
    from suite.cases.model import kinds_of
    return kinds_of(c)


def test_a_kind_the_backend_does_not_claim_is_marked_skipped_with_why():
    _, params = _params(Kind.DETERMINISM)
    assert params and all(m.name == "skip" and m.kwargs["reason"] == "backend be declares itself nondeterministic "
                          "(deterministic = False)" for p in params for m in p.marks)


def test_an_operator_without_cases_or_a_product_the_backend_lacks_is_a_usage_error():
    with pytest.raises(pytest.UsageError, match=r"^--op KlDiv: no case of it in "):
        _params(Kind.NUMBERS, op=["KlDiv", "MseLossBackward"])
    with pytest.raises(pytest.UsageError) as e:
        _params(Kind.NUMBERS, product=["atlas-inference"])
    assert str(e.value) == ("--product atlas-inference: backend be stands for atlas-a2, atlas-training only, "
                            "so no case would run")


def test_the_scale_and_timing_choose_among_the_cases():
    from suite.cases import model
    from suite.golden import source
    a2 = [c for c in CASES if c.product == "atlas-a2"]
    numbers = [c for c in a2 if Kind.NUMBERS in _kinds(c)]
    _, default = _params(Kind.NUMBERS, cases=a2)
    _, huge = _params(Kind.NUMBERS, cases=a2, scale="huge")
    _, small = _params(Kind.NUMBERS, cases=a2, scale="small")
    assert [p.id for p in huge] == [c.id for c in numbers]
    assert [p.id for p in default] == [c.id for c in numbers if c.tier != "huge"] != [p.id for p in huge]
    assert [p.id for p in small] == [c.id for c in numbers if c.tier != "huge" and (
        c.expect != model.NUMBERS or source.is_stored(c))] != [p.id for p in default]
    _, small_rej = _params(Kind.REJECTION, cases=a2, scale="small")
    _, default_rej = _params(Kind.REJECTION, cases=a2)
    assert [p.id for p in small_rej] == [p.id for p in default_rej] != []      # rejections need no golden
    a3 = SimpleNamespace(**{**vars(INFO), "products": ("atlas-a3",)})
    _, timed = _params(Kind.NUMBERS, info=a3, timing=True)
    assert [p.id for p in timed] == [c.id for c in CASES if c.timing and c.product == "atlas-a3"
                                     and Kind.NUMBERS in _kinds(c) and c.tier != "huge"] != []
    _, timed_rej = _params(Kind.REJECTION, info=a3, timing=True)
    _, all_rej = _params(Kind.REJECTION, info=a3)
    assert timed_rej == [] != all_rej
    _, one_op = _params(Kind.NUMBERS, cases=a2, op=["MseLossBackward"])
    assert [p.id for p in one_op] == [p.id for p in default]


class _Metafunc:
    def __init__(self, state, kind, fixturenames=("case", "request")):
        self.fixturenames = list(fixturenames)
        self.module = SimpleNamespace(__name__="suite.conformance.test_x", CASE_KIND=kind)
        self.config = SimpleNamespace(stash={plugin.STATE: state})
        self.got = None

    def parametrize(self, name, params):
        self.got = (name, params)


def test_a_conformance_module_gets_its_cases_and_a_session_that_cannot_start_one_failing_item():
    st = _state()
    st._cases, st._runner = [c for c in CASES if c.product == "atlas-a2"][:30], SimpleNamespace(info=INFO)
    m = _Metafunc(st, Kind.NUMBERS)
    plugin.pytest_generate_tests(m)
    assert m.got[0] == "case" and [p.id for p in m.got[1]] == [p.id for p in st.params(Kind.NUMBERS)]
    other = _Metafunc(st, Kind.NUMBERS, fixturenames=("request",))
    plugin.pytest_generate_tests(other)
    assert other.got is None                                  # a test that takes no case is left alone
    bad = _state(product=["atlas-inference"])
    bad._cases, bad._runner = st._cases, SimpleNamespace(info=INFO)
    m = _Metafunc(bad, Kind.NUMBERS)
    plugin.pytest_generate_tests(m)
    (p,) = m.got[1]
    assert p.id == "setup-error" and p.values[0] == plugin.SetupError(bad.error)
    assert bad.error.startswith("--product atlas-inference: backend be stands for")
    with pytest.raises(pytest.UsageError, match=r"^suite.conformance.test_x: CASE_KIND must be one of numbers, "):
        plugin.pytest_generate_tests(_Metafunc(st, "sideways"))


def test_the_determinism_tests_go_last_and_timing_keeps_only_numbers_tests():
    class Item:
        def __init__(self, kind, n):
            self.n = n
            if kind is not None:
                self.module = SimpleNamespace(CASE_KIND=kind)

    def item(kind, n):
        return Item(kind, n)
    items = [item(Kind.DETERMINISM, 0), item(Kind.NUMBERS, 1), Item(None, 2), item(Kind.DETERMINISM, 3),
             item(Kind.REJECTION, 4)]
    config = _config()
    config.stash[plugin.STATE] = plugin.Conformance(config)
    gone = []
    config.hook = SimpleNamespace(pytest_deselected=lambda items: gone.extend(items))
    got = list(items)
    plugin.pytest_collection_modifyitems(config, got)
    assert [i.n for i in got] == [1, 2, 4, 0, 3] and gone == []
    config = _config(timing=True)
    config.stash[plugin.STATE] = plugin.Conformance(config)
    config.hook = SimpleNamespace(pytest_deselected=lambda items: gone.extend(items))
    got = list(items)
    plugin.pytest_collection_modifyitems(config, got)
    assert [i.n for i in got] == [1, 2] and [i.n for i in gone] == [4, 0, 3]


def test_a_setup_error_stops_the_collection_once_except_on_a_worker():
    config = _config()
    config.stash[plugin.STATE] = st = plugin.Conformance(config)
    st.error = "backend x failed to start: boom"
    with pytest.raises(pytest.UsageError, match="^backend x failed to start: boom$"):
        plugin.pytest_collection_modifyitems(config, [])
    config.workerinput = {}
    plugin.pytest_collection_modifyitems(config, [])           # each item fails with it there


# -- one case's test -------------------------------------------------------------------------------
class _Runner:
    def __init__(self, outcome):
        self.outcome, self.test_path, self.calls = outcome, None, []

    def check(self, kind, case, nodeid):
        self.calls.append((kind, case, nodeid))
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def _request(runner, kind=Kind.NUMBERS):
    st = SimpleNamespace(runner=runner)
    node = SimpleNamespace(config=SimpleNamespace(stash={plugin.STATE: st}), stash={}, path=Path("t.py"),
                           module=SimpleNamespace(CASE_KIND=kind), nodeid="t.py::t[c]",
                           session=SimpleNamespace(shouldstop=False))
    return SimpleNamespace(node=node)


def test_a_case_that_passes_leaves_its_record():
    case = CASES[0]
    runner = _Runner({"status": 0, "max_ulp": 0.0})
    req = _request(runner, Kind.REJECTION)
    assert plugin.check(req, case) == {"status": 0, "max_ulp": 0.0}
    assert req.node.stash[plugin.RECORD] == {"status": 0, "max_ulp": 0.0}
    assert runner.calls == [(Kind.REJECTION, case, "t.py::t[c]")] and runner.test_path == Path("t.py")


def test_a_case_that_fails_keeps_what_was_measured_and_may_stop_the_run():
    runner = _Runner(CaseFailure("c", "2 elements over", ["detail"], reproduce="pytest x", record={"max_ulp": 3.0},
                                 stop="the device was lost"))
    req = _request(runner)
    with pytest.raises(pytest.fail.Exception) as e:
        plugin.check(req, CASES[0])
    assert str(e.value) == "c: 2 elements over\ndetail\n  reproduce: pytest x" and e.value.pytrace is False
    assert e.value.__context__ is None                    # no chained traceback
    assert req.node.stash[plugin.RECORD] == {"status": None, "max_ulp": 3.0, "message": "c: 2 elements over",
                                             "reproduce": "pytest x"}
    assert req.node.session.shouldstop == "the device was lost"
    req = _request(_Runner(CaseFailure("c", "wrong")))
    with pytest.raises(pytest.fail.Exception):
        plugin.check(req, CASES[0])
    assert req.node.session.shouldstop is False


def test_a_skipped_case_says_why_and_a_setup_error_fails_every_item():
    req = _request(_Runner(CaseSkip("too little memory")))
    with pytest.raises(pytest.skip.Exception) as e:
        plugin.check(req, CASES[0])
    assert str(e.value) == "too little memory" and e.value.__context__ is None
    assert req.node.stash[plugin.RECORD] == {"status": None}
    runner = _Runner({})
    with pytest.raises(pytest.fail.Exception) as e:
        plugin.check(_request(runner), plugin.SetupError("no backend"))
    assert str(e.value) == "no backend" and e.value.pytrace is False and runner.calls == []


def test_the_report_of_a_case_carries_its_fields_and_its_record():
    from suite.report.results import case_fields
    case = CASES[0]

    def report_of(when, skipped=False, params=None, stash=None):
        item = SimpleNamespace(callspec=SimpleNamespace(params={"case": case} if params is None else params),
                               module=SimpleNamespace(CASE_KIND=Kind.NUMBERS), nodeid="n", stash=stash or {})
        rep = SimpleNamespace(when=when, skipped=skipped)
        gen = plugin.pytest_runtest_makereport.__wrapped__(item, None) if hasattr(
            plugin.pytest_runtest_makereport, "__wrapped__") else plugin.pytest_runtest_makereport(item, None)
        next(gen)
        with pytest.raises(StopIteration):
            gen.send(SimpleNamespace(get_result=lambda: rep))
        return rep
    rep = report_of("call", stash={plugin.RECORD: {"status": 0, "max_ulp": 1.5}})
    assert rep.aclnn == {**case_fields(case, str(Kind.NUMBERS), "n"), "status": 0, "max_ulp": 1.5}
    assert report_of("setup", skipped=True).aclnn == case_fields(case, str(Kind.NUMBERS), "n")
    assert not hasattr(report_of("setup"), "aclnn") and not hasattr(report_of("teardown"), "aclnn")
    assert not hasattr(report_of("call", params={"case": plugin.SetupError("x")}), "aclnn")
