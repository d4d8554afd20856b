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
                perf_threshold=None, perf_alpha=None, accuracy_baseline=None, accuracy_level=None,
                accuracy_baseline_opt=[])


def _config(args=(), source=pytest.Config.ArgsSource.ARGS, **opts):
    return SimpleNamespace(option=SimpleNamespace(**{**DEFAULTS, **opts}), stash={},
                           invocation_params=SimpleNamespace(args=list(args), dir=ROOT),
                           args=["given"], args_source=source)


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
    assert _state(timing=True, timing_baseline="pkg:B", timing_baseline_opt=["a=b"]).replay_args() == \
        " --timing --timing-baseline pkg:B --timing-baseline-opt a=b"


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
    config = _config(backend="pkg.mod:Be", backend_opt=["device=1", "x=y"], product=["atlas-a2"], golden_cache="none")
    config.stash[plugin.STATE] = st = plugin.Conformance(config)
    prot = ", ".join(f"{k} {v}" for k, v in st.protections.items())
    assert plugin.pytest_report_header(config) == (
        "aclnn-conformance: backend pkg.mod:Be device=1 x=y; products atlas-a2; scale default; golden cache none; "
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
    assert params and all(len(p.marks) == 1 for p in params)
    assert all(m.name == "skip" and m.kwargs["reason"] == "backend be declares itself nondeterministic "
               "(deterministic = False)" for p in params for m in p.marks)
    _, numbers = _params(Kind.NUMBERS)
    assert numbers and all(p.marks == () or p.marks == [] for p in numbers)   # a kind it claims: no mark


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
    try:
        got = plugin.check(req, case)
    except (pytest.skip.Exception, pytest.fail.Exception) as e:    # a skip would leave this test skipped
        pytest.fail(f"a passing case's check raised {e!r}")
    assert got == {"status": 0, "max_ulp": 0.0}
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


# -- the session's backend: made once, on first need, closed once ---------------------------------
class _Host:
    """A backend's host as make_host returns it: its info, and what its close() came to."""

    def __init__(self, incident=None):
        self.info = SimpleNamespace(**{**vars(INFO), "name": "fake"})
        self.backend = object()
        self.incident, self.closed = incident, 0

    def close(self):
        self.closed += 1
        return self.incident


def _hosted(monkeypatch, host=None, **opts):
    """A session whose make_host is recorded (what it was asked for) and answers `host`."""
    asked = []
    host = host or _Host()

    def make_host(spec, backend_opts, **kw):
        asked.append((spec, backend_opts, kw))
        return host
    monkeypatch.setattr(plugin, "make_host", make_host)
    return _state(**opts), host, asked


def test_the_runner_is_made_once_from_the_pinned_goldens_and_the_table(monkeypatch):
    from suite.common.digest import file_sha256
    from suite.golden.store import GoldenStore
    from suite.judge.table import load_table
    st, host, asked = _hosted(monkeypatch, backend="pkg.mod:Be", backend_opt=["device=1"], standard="strict",
                              max_memory="1K", case_timeout=2.5, backend_restarts=3, golden_cache="none")
    r = st.runner
    assert st.runner is r and len(asked) == 1                 # made once
    assert asked == [("pkg.mod:Be", {"device": "1"}, dict(isolation="process", timeout=2.5, restarts=3,
                                                              policy=st.policy))]
    assert r.host is host and r.info is host.info and st.info is host.info
    again = st.confinement()
    # the same rules (each backend process's own TMPDIR is made as it starts, not with the policy)
    same = (lambda a: a if a is None else (a.protected, a.abi, a.granted, a.tmpdir))
    assert same(st.policy) == same(again) and (st.policy is None) == (st.protections["writes"].startswith("not"))
    golden = GoldenStore(ROOT / "golden")
    golden.pin()
    assert st.manifest_hash == golden.manifest_hash() and len(st.manifest_hash) == 64
    assert st.tolerances_hash == file_sha256(ROOT / "cases" / "tolerances.yaml")
    assert r.table.standards == load_table(ROOT / "cases" / "tolerances.yaml").standards
    assert r.store.root == ROOT / "golden" and r.store.reuse is True and r.store.cache.root is None
    assert r.store._hash == st.manifest_hash                  # pinned before the backend started
    assert (r.standard_override, r.replay, r.max_memory) == ("strict", st.replay_args(), 1024)
    assert r.invocation_dir == ROOT and r.timer is None and st._baseline is None
    assert st.backend is r.backend
    st.close()


def test_in_pytests_process_the_store_keeps_no_data_and_uses_the_cache(monkeypatch, tmp_path):
    st, host, asked = _hosted(monkeypatch, isolation="none", golden_cache=str(tmp_path))
    r = st.runner
    assert asked[0][2] == dict(isolation="none", timeout=60.0, restarts=8, policy=None) and st.policy is None
    assert r.store.reuse is False and r.store.cache.root == tmp_path


def test_timing_gives_the_runner_a_timer_with_the_hardware_table(monkeypatch):
    from suite.cases.hardware import load_hardware
    st, _, _ = _hosted(monkeypatch, timing=True, timing_rounds=4)
    timer = st.runner.timer
    assert timer.settings.rounds == 4 and timer.baseline is None
    assert timer.hardware == load_hardware(ROOT / "cases" / "hardware.yaml")


def test_a_bad_backend_table_or_standard_is_one_usage_error_line(monkeypatch, tmp_path):
    from suite.run.backend import BackendError

    def refuse(*a, **kw):
        raise BackendError("backend pkg.mod:Be: no module named 'pkg'")
    monkeypatch.setattr(plugin, "make_host", refuse)
    for st, line in [(_state(backend="pkg.mod:Be"), "backend pkg.mod:Be: no module named 'pkg'")]:
        with pytest.raises(pytest.UsageError) as e:
            st.runner
        assert str(e.value) == line and e.value.__suppress_context__ and st._runner is None
    monkeypatch.setattr(plugin, "make_host", lambda *a, **kw: _Host())
    bad = tmp_path / "t.yaml"
    bad.write_text("standards: [\n")
    with pytest.raises(pytest.UsageError) as e:
        _state(tolerances=str(bad)).runner
    assert str(e.value).startswith(f"{bad}:") and "\n" not in str(e.value) and e.value.__suppress_context__
    st = _state(standard="nosuch")
    with pytest.raises(pytest.UsageError) as e:
        st.runner
    from suite.judge.table import load_table
    names = ", ".join(load_table(ROOT / "cases" / "tolerances.yaml").names())
    assert str(e.value) == f"--standard nosuch: not in {ROOT / 'cases' / 'tolerances.yaml'} ({names})"
    assert st._runner is None
    assert _state(standard="high_precision").runner is not None        # an alias is a name --standard takes


def test_closing_closes_the_backend_once_and_keeps_what_went_wrong(monkeypatch):
    st, host, _ = _hosted(monkeypatch, host=_Host("the backend's process exited with code 3"))
    r = st.runner
    st.close()
    assert host.closed == 1 and st.incidents == ["the backend's process exited with code 3"]
    assert st._runner is None and st.backend is r.backend and st.info is host.info
    st.close()                                                 # a second close does nothing more
    assert host.closed == 1 and len(st.incidents) == 1
    with pytest.raises(RuntimeError, match="^the backend was used after the session closed it$"):
        st.runner
    quiet, qhost, _ = _hosted(monkeypatch)
    quiet.runner
    quiet.close()
    assert qhost.closed == 1 and quiet.incidents == []
    never = _state()
    never.close()
    assert never.incidents == [] and never.backend is None and never._closed is None


def test_the_baselines_close_is_an_incident_too(monkeypatch):
    st = _state()
    st._baseline = SimpleNamespace(host=_Host("exit 1"))
    st.close()
    assert st.incidents == ["the timing baseline's process: exit 1"] and st._baseline is None


def test_the_hooks_make_the_state_and_close_it_before_the_reports(monkeypatch):
    config = _config()
    plugin.pytest_configure(config)
    st = config.stash[plugin.STATE]
    assert isinstance(st, plugin.Conformance) and st.config is config
    closed = []
    monkeypatch.setattr(st, "close", lambda: closed.append("x"))
    plugin.pytest_sessionfinish(SimpleNamespace(config=config))
    plugin.pytest_unconfigure(config)
    assert closed == ["x", "x"]
    empty = SimpleNamespace(stash={})
    plugin.pytest_sessionfinish(SimpleNamespace(config=empty))   # no state (a usage error came first)
    plugin.pytest_unconfigure(empty)
    assert plugin.pytest_sessionfinish.pytest_impl["tryfirst"] is True      # before report.py's hook writes
    assert plugin.pytest_runtest_makereport.pytest_impl["hookwrapper"] is True


@pytest.mark.parametrize("source,opts,collects", [
    ("ARGS", {"backend": "x"}, ["given"]),                      # a test path given is run as given
    ("INVOCATION_DIR", {"backend": "x"}, [str(ROOT / "suite" / "conformance")]),
    ("TESTPATHS", {"op": ["MseLoss"]}, [str(ROOT / "suite" / "conformance")]),
    ("INVOCATION_DIR", {}, ["given"]),                          # no suite option: pytest's own choice
], ids=["path-given", "backend-no-path", "op-testpaths", "no-option"])
def test_a_suite_option_with_no_test_path_collects_the_conformance_tests(source, opts, collects):
    config = _config(source=getattr(pytest.Config.ArgsSource, source), **opts)
    plugin.pytest_configure(config)
    assert config.args == collects


def test_a_folder_with_conformance_modules_of_its_own_collects_them(tmp_path):
    (tmp_path / "test_mine.py").write_text("from suite.cases.model import Kind\nCASE_KIND = Kind.NUMBERS\n")
    (tmp_path / "test_other.py").write_text('TEXT = "\\nCASE_KIND = Kind.NUMBERS"\n')
    config = _config(source=pytest.Config.ArgsSource.INVOCATION_DIR, backend="x")
    config.invocation_params.dir = tmp_path
    plugin.pytest_configure(config)
    assert config.args == ["given"]
    (tmp_path / "test_mine.py").unlink()             # a module that only names it in a string is not one
    config = _config(source=pytest.Config.ArgsSource.INVOCATION_DIR, backend="x")
    config.invocation_params.dir = tmp_path
    plugin.pytest_configure(config)
    assert config.args == [str(ROOT / "suite" / "conformance")]


def test_the_cases_are_read_once_of_the_operators_asked(monkeypatch, tmp_path):
    st = _state(cases=[str(ROOT / "cases" / "mse_loss_backward.yaml"), str(ROOT / "cases" / "kl_div.yaml")],
                op=["KlDiv"])
    cases = st.cases
    assert cases and {c.op for c in cases} == {"KlDiv"} and st.cases is cases
    bad = tmp_path / "x.yaml"
    bad.write_text("op: [\n")
    with pytest.raises(pytest.UsageError) as e:
        _state(cases=[str(bad)]).cases
    assert str(e.value).startswith(f"{bad}:") and "\n" not in str(e.value) and e.value.__suppress_context__


def test_without_the_data_folder_the_defaults_are_one_line_that_says_what_to_name(monkeypatch, tmp_path):
    from suite.common.home import HOME_ENV, no_data_folder
    monkeypatch.setenv(HOME_ENV, str(tmp_path))
    line = no_data_folder("--cases, --golden-dir and --tolerances")
    for opts in ({}, {"cases": ["c.yaml"]}, {"tolerances": "t.yaml"}):
        st = _state(**opts)
        for what in ("cases", "runner"):
            with pytest.raises(pytest.UsageError) as e:
                getattr(st, what)
            assert str(e.value) == line
    st = _state(cases=[str(ROOT / "cases" / "kl_div.yaml")], tolerances=str(ROOT / "cases" / "tolerances.yaml"))
    st._data_present()                                       # both named: no data folder needed
    assert st.cases
    (tmp_path / "cases").mkdir()
    _state()._data_present()


def test_the_confinement_protects_what_the_run_reads_and_writes(monkeypatch, tmp_path):
    asked = []
    monkeypatch.setattr(plugin.confine, "landlock_abi", lambda: (3, ""))
    monkeypatch.setattr(plugin.confine, "make_policy", lambda paths, abi: asked.append((paths, abi)) or "policy")
    st = _state(cases=[str(tmp_path / "c.yaml")], golden_dir=str(tmp_path / "g"), tolerances=str(tmp_path / "t"),
                golden_cache=str(tmp_path / "cache"), report_dir=str(tmp_path / "rep"))
    assert st.confinement() == "policy"
    from suite.common.home import CHECKOUT
    assert asked == [([CHECKOUT, ROOT / "cases", ROOT / "golden", tmp_path / "g", tmp_path / "t", tmp_path / "c.yaml",
                       tmp_path / "cache", tmp_path / "rep"], 3)]
    asked.clear()
    assert _state(golden_cache="none").confinement() == "policy"
    assert asked[0][0] == [CHECKOUT, ROOT / "cases", ROOT / "golden", ROOT / "golden",
                           ROOT / "cases" / "tolerances.yaml", ROOT / "cases"]
    asked.clear()
    bare = _state(golden_cache="none")
    del bare.config.option.report_dir                       # no report options (suite.plugin.report not loaded)
    assert bare.confinement() == "policy" and len(asked[0][0]) == 6
    assert _state(confine="off").confinement() is None
    monkeypatch.setattr(plugin.confine, "landlock_abi", lambda: (0, "no Landlock"))
    assert _state().confinement() is None
    monkeypatch.setattr(plugin.confine, "landlock_abi", lambda: (1, ""))
    assert _state().confinement() == "policy"


def test_the_tests_of_one_cases_data_stand_together_within_their_module():
    """_data_of: one group per (module, case data); an item that is not a case's is a group of its own."""
    by_key = {}
    for c in CASES:
        by_key.setdefault(c.datakey, []).append(c)
    x1, x2, x3 = next(v for v in by_key.values() if len(v) >= 3)[:3]
    y = next(v[0] for v in by_key.values() if v[0].datakey != x1.datakey)
    class Module:                       # hashable, as pytest's modules and items are
        CASE_KIND = Kind.NUMBERS

    class Item:
        pass
    a, b = Module(), Module()

    def item(n, module, case="none", params=None):
        it = Item()
        it.n, it.module = n, module
        if case != "none" or params is not None:
            it.callspec = SimpleNamespace(params={"case": case} if params is None else params)
        return it
    items = [item(0, a, x1), item(1, a, y), item(2, b, x3), item(3, a, x2), item(4, a), item(5, a, params={}),
             item(6, a, plugin.SetupError("x")), item(7, b, y)]
    config = _config()
    config.stash[plugin.STATE] = plugin.Conformance(config)
    got = list(items)
    plugin.pytest_collection_modifyitems(config, got)
    assert [i.n for i in got] == [0, 3, 1, 2, 4, 5, 6, 7]
    assert plugin._data_of(items[0]) == (a, x1.datakey) == plugin._data_of(items[3])
    assert plugin._data_of(items[4]) is items[4] and plugin._data_of(items[6]) is items[6]
    bare = Item()
    bare.callspec = SimpleNamespace(params={"case": x1})
    assert plugin._data_of(bare) == (None, x1.datakey)          # an item with no module: still its data


def test_the_lists_in_the_usage_errors_name_every_one(tmp_path):
    two = [str(ROOT / "cases" / "mse_loss_backward.yaml"), str(tmp_path)]
    st = _state(op=["KlDiv", "NLLLoss", "MseLossBackward"], cases=two)
    st._cases, st._runner = list(CASES), SimpleNamespace(info=INFO)
    with pytest.raises(pytest.UsageError) as e:
        st.params(Kind.NUMBERS)
    assert str(e.value) == f"--op KlDiv, NLLLoss: no case of it in {two[0]}, {two[1]}"
    with pytest.raises(pytest.UsageError) as e:
        _params(Kind.NUMBERS, product=["atlas-inference", "atlas-a3"])
    assert str(e.value).startswith("--product atlas-inference, atlas-a3: backend be stands for ")


def test_a_module_without_a_case_kind_is_a_usage_error():
    st = _state()
    m = _Metafunc(st, Kind.NUMBERS)
    del m.module.CASE_KIND
    with pytest.raises(pytest.UsageError, match=r"^suite.conformance.test_x: CASE_KIND must be one of numbers, "):
        plugin.pytest_generate_tests(m)


def test_the_protections_are_those_of_the_confine_and_isolation_options():
    from suite.run import confine
    assert _state().protections == confine.in_force(True, "process")
    off = _state(confine="off").protections
    assert off == confine.in_force(False, "process") and off["writes"] == "off (--confine=off)"
    assert _state(isolation="none").protections == confine.in_force(True, "none")
    assert _state(isolation="none").protections["writes"].startswith("not available: --isolation none")


def test_the_timing_baseline_is_read_with_the_timing_option():
    st = _state(timing=True, timing_baseline="pkg:B", timing_baseline_opt=["a=b"])
    assert (st.against.spec, st.against.opts) == ("pkg:B", {"a": "b"}) and _state().against is None
