"""The conformance suite itself, run through the `aclnn` backend against the host emulator.

tests/test_backends_aclnn.py proves the backend with hand-made calls; this module proves the whole
chain a user runs (`pytest --backend aclnn ...`: case files, goldens, plugin, runner, backend,
emulator) in real pytest sessions, one subprocess each (an emulator build must own its process:
the loader resolves libascendcl.so by soname, so two builds cannot share one). It shows:
  - every operator the registry holds has its emulator file (tests/emulator/src/ops/<module>.c) and
    both entry points in the build: a missing one fails here, loudly, instead of being skipped;
  - every product family: the full suite passes, the only skips are the negative-stride views,
    every registered operator's cases ran and passed, and the emulator holds zero live buffers,
    tensors, executors and streams after close() (read by tests.aclnn_leakcheck in pytest's process,
    --isolation none; atlas-inference runs under xdist, one record per worker);
  - planted faults are caught by the suite (the backend in its own process, as users run it), with
    messages naming the case and a reproducer;
  - with no CANN library, the run stops as the backend starts, with the reason (what was looked
    for where), running no case;
  - a planted AI-core fault costs exactly its own case (the backend resets the device), and a device
    that cannot be recovered stops the run, serial or under xdist, with the report marked incomplete.
It proves the marshalling and the harness, never the conformance of real Ascend kernels.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from suite import ops
from suite.backends.aclnn import AclnnBackend
from suite.contract import PRODUCTS
from tests.emulator import build as emulator_build
from tests.emulator.build import BuildError, build, find_compiler
from tests.waiting import HANG_S
from tests.sampling import SHARE, sampled

ROOT = Path(__file__).resolve().parents[1]
NEGSTRIDE_REASON = "CANN cannot take negative-stride views"
# Until the aclnn backend marshals one out tensor per output (issue 22, its own branch), every call
# of an operator with several outputs is Unsupported with this reason: such skips are expected,
# for those operators only, and those operators need no passing case yet.
SEVERAL_REASON = "does not marshal more than one out tensor yet"
# The allowance ends by itself the day the backend stops giving that reason.
_REFUSES_SEVERAL = SEVERAL_REASON in (ROOT / "suite" / "backends" / "aclnn.py").read_text(encoding="utf-8")
SEVERAL = {op.name for op in ops.OPERATORS.values() if len(op.outputs) > 1} if _REFUSES_SEVERAL else set()
KINDS = {"test_numerics", "test_status", "test_determinism"}
ZERO = {"buffers": 0, "tensors": 0, "executors": 0, "streams": 0, "events": 0}


@dataclass
class Session:
    """One pytest run of the conformance suite: exit code, output and per-case outcomes."""
    returncode: int
    output: str
    cases: Dict[str, Tuple[str, str]] = field(default_factory=dict)  # nodeid -> (outcome, message)
    live: List[dict] = field(default_factory=list)                   # tests.aclnn_leakcheck records

    def having(self, outcome: str) -> Dict[str, str]:
        return {n: m for n, (o, m) in self.cases.items() if o == outcome}

    def tail(self) -> str:
        return self.output[-3000:]


def _env(**extra: str) -> Dict[str, str]:
    """The caller's environment minus anything that could point at CANN or steer the emulator."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ASCEND_", "ACLNN_EMU_", "PYTEST_XDIST", "PYTEST_CURRENT"))}
    ld = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p and "ascend" not in p.lower()]
    env["LD_LIBRARY_PATH"] = ":".join(ld)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    # Unrelated third-party plugins (hypothesis, benchmark) cost ~1.5 s of imports per session.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.update(extra)
    return env


def _parse_junit(path: Path) -> Dict[str, Tuple[str, str]]:
    cases = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        nodeid = f"{tc.get('classname').replace('.', '/')}.py::{tc.get('name')}"
        outcome, message = "passed", ""
        for child in tc:  # a failure's text is the suite's whole message; a skip's message its reason
            if child.tag in ("failure", "error"):
                outcome, message = {"failure": "failed"}.get(child.tag, child.tag), child.text or ""
            elif child.tag == "skipped":
                outcome, message = "skipped", child.get("message") or ""
        cases[nodeid] = (outcome, message)
    return cases


def run_suite(tmp: Path, lib_dir: str, *args: str, soc: Optional[str] = None, workers: int = 0,
              env: Optional[Dict[str, str]] = None) -> Session:
    """Run `pytest --backend aclnn --backend-opt lib_dir=...` from the repository root."""
    junit, live = tmp / "junit.xml", tmp / "live.jsonl"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.aclnn_leakcheck",
           f"--aclnn-live-counts={live}", f"--junitxml={junit}",
           "--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", *args]
    if workers:
        cmd += ["-p", "xdist.plugin", "-n", str(workers)]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(**({"ACLNN_EMU_SOC": soc} if soc else {}), **(env or {})),
                          capture_output=True, text=True, timeout=HANG_S)
    s = Session(proc.returncode, proc.stdout + proc.stderr)
    if junit.exists():
        s.cases = _parse_junit(junit)
    if live.exists():
        s.live = [json.loads(line) for line in live.read_text().splitlines()]
    return s


@pytest.fixture(scope="session")
def emulator(tmp_path_factory) -> Callable[[Optional[str]], str]:
    """Build (once per session) the emulator, clean or with one planted fault; returns its lib dir."""
    if find_compiler() is None:
        pytest.skip("no C compiler (looked for $CC, cc, gcc, clang on PATH): cannot build the emulator")
    built: Dict[Optional[str], str] = {}

    def get(fault: Optional[str] = None) -> str:
        if fault not in built:
            try:
                built[fault] = str(build(tmp_path_factory.mktemp(f"aclemu-{fault or 'clean'}"), fault))
            except BuildError as exc:
                pytest.skip(f"emulator build failed: {exc}")
        return built[fault]
    return get


def _module(op) -> str:
    """The stem of the operator's module in suite/ops/: its emulator file's name too."""
    return type(op).__module__.rsplit(".", 1)[-1]


def _operator_of(fault: str) -> str:
    """The registered operator whose emulator file declares `fault`."""
    module = emulator_build.FAULTS[fault].module
    found = [op.name for op in ops.OPERATORS.values() if _module(op) == module]
    assert found, f"fault {fault} belongs to {module}, which no registered operator's module is"
    return found[0]


# ---- the emulator has every registered operator ----------------------------------------------------
def test_emulator_has_every_registered_operator(emulator):
    """Each operator of the registry has its file in the emulator's operator table, and the build
    exports both of its entry points as the backend binds them. Without this, a missing operator
    would only show as skipped cases ("symbol not found")."""
    table = {p.stem for p in emulator_build.op_sources()}
    missing_files = sorted(f"{op.name} (tests/emulator/src/ops/{_module(op)}.c)" for op in ops.OPERATORS.values()
                           if _module(op) not in table and op.name not in SEVERAL)
    assert not missing_files, f"operators with no emulator file: {', '.join(missing_files)}"
    lib_dir = emulator(None)
    code = ("import json; from suite.backends.aclnn import AclnnBackend; "
            f"b = AclnnBackend(lib_dir={lib_dir!r}); "
            "print(json.dumps({k: v if isinstance(v, str) else None for k, v in b._ops.items()}))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr
    bound = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(bound) == set(ops.OPERATORS), bound
    unbound = {k: v for k, v in bound.items() if v is not None and k not in SEVERAL}
    assert not unbound, f"the emulator build lacks: {unbound}"


# ---- every product family passes, skips only negative strides, leaks nothing -----------------------
# (product, SoC the emulator reports, xdist workers, negative_strides, scale). atlas-training runs with
# negative_strides=pass (the emulator honours them), so its negative-stride cases must pass, not skip.
# CI runs the default tier (the scale sets included) on one product under -n 2 (atlas-a2's serial
# default run alone took 136 s of the fresh-clone .ci/run), and the small tier (every committed case:
# the products' dtypes, statuses, layouts) on every product serially (the Ascend 950 too; the
# Atlas 200I/500 A2 runs the rejections of the operators serving it only: its own test below); the heavy tier runs
# the four at the default tier.
PRODUCT_RUNS = [                                # ..., scale tier, in CI (else: -m heavy)
    ("atlas-a2", "Ascend910B3", 0, "skip", "small", True),
    ("atlas-training", "Ascend910A", 0, "pass", "small", True),
    ("atlas-inference", "Ascend310P3", 2, "skip", "default", True),
    ("atlas-a3", "Ascend910_9391", 0, "skip", "small", True),
    ("ascend-950", "Ascend950PR_9599", 0, "skip", "small", True),
    ("atlas-a2", "Ascend910B3", 0, "skip", "default", False),
    ("atlas-training", "Ascend910A", 0, "pass", "default", False),
    ("atlas-a3", "Ascend910_9391", 0, "skip", "default", False),
]
# What grows with the operator count (tests/sampling.py): each CI run takes a third of the operators,
# the i-th run every SHARE-th operator from i, so the five runs together take every operator; the
# heavy runs take all of them.
PRODUCT_PARAMS = [pytest.param(*run[:5], tuple(sorted(ops.OPERATORS))[i % SHARE::SHARE] if run[5] else None,
                               id=f"{run[0]}-{run[4]}", marks=[] if run[5] else [pytest.mark.heavy])
                  for i, run in enumerate(PRODUCT_RUNS)]


def test_the_ci_runs_of_the_products_take_every_operator_between_them() -> None:
    ci = [p.values[-1] for p in PRODUCT_PARAMS if not p.marks]
    assert all(ci) and set().union(*ci) == set(ops.OPERATORS)
    assert all(len(c) <= -(-len(ops.OPERATORS) // SHARE) for c in ci)
    assert all(p.values[-1] is None for p in PRODUCT_PARAMS if p.marks)


@pytest.mark.parametrize("product,soc,workers,negative_strides,scale,some", PRODUCT_PARAMS)
def test_full_suite_passes_on_each_product_and_leaks_nothing(emulator, tmp_path, product, soc, workers,
                                                             negative_strides, scale, some):
    # In pytest's process: the live counts are read from the backend object around its close().
    chosen = set(ops.OPERATORS) if some is None else set(some)
    s = run_suite(tmp_path, emulator(None), "--backend-opt", f"negative_strides={negative_strides}",
                  "--isolation=none", f"--scale={scale}", *(f"--op={n}" for n in some or ()),
                  soc=soc, workers=workers)
    assert s.returncode == 0, s.tail()
    assert s.cases and not s.having("failed") and not s.having("error"), s.tail()
    # the SoC alone chose the product: every case run is that family's, of all three kinds
    assert all(f"-{product}-" in n for n in s.cases), "a case of another product ran"
    kinds = {n.split("/")[-1].split(".py")[0] for n in s.cases}
    # every kind in a run of every operator; a third of them may have no rejection on a product
    assert kinds == KINDS if some is None else "test_numerics" in kinds and kinds <= KINDS, kinds
    assert s.having("passed")
    waiting = {n for n, m in s.having("skipped").items()
               if SEVERAL_REASON in m and n[n.index("[") + 1:].split("-", 1)[0] in SEVERAL}
    skipped = {n: m for n, m in s.having("skipped").items() if n not in waiting}
    negstride = {n for n in s.cases if "-negstride-" in n and n not in waiting}
    # the case files give negative-stride layouts to these two families only; without this, the
    # skip checks below would hold on an empty set
    assert bool(negstride) == (product in ("atlas-a2", "atlas-training")), sorted(negstride)[:3]
    if negative_strides == "pass":
        assert negstride and negstride <= set(s.having("passed")) and not skipped, s.tail()
    unexpected = {n: m for n, m in skipped.items() if n not in negstride or negative_strides == "pass"}
    assert not unexpected, f"unexpected skips ({len(unexpected)}), e.g. {sorted(unexpected.items())[:3]}"
    assert set(skipped) == (negstride if negative_strides == "skip" else set()), "negative-stride cases ran"
    assert all(NEGSTRIDE_REASON in m for m in skipped.values()), set(skipped.values())
    # every chosen operator's cases ran and passed (an operator without cases fails here)
    passed_ops = {n[n.index("[") + 1:].split("-", 1)[0] for n in s.having("passed")}
    unmarshalled = {n[n.index("[") + 1:].split("-", 1)[0] for n in waiting}
    assert passed_ops | unmarshalled == chosen, f"no passing case of {sorted(chosen - passed_ops - unmarshalled)}"

    # under xdist the controller starts the backend too, before any worker (it runs no case there)
    assert sorted(r["process"] for r in s.live) == (["gw0", "gw1", "main"] if workers == 2 else ["main"]), s.live
    for r in s.live:
        assert "error" not in r, r
        assert r["products"] == [product] and r["soc"] == soc, r
        # per-call resources gone while the session's stream is still alive: the counters are live
        # (the xdist controller's backend, which ran no case, is closed before the session ends)
        closed_early = workers == 2 and r["process"] == "main"
        assert r["at_session_end"] == {**ZERO, "streams": 0 if closed_early else 1}, r
        assert r["after_close"] == ZERO, r


def test_on_an_atlas_200i_500_a2_only_the_rejections_of_the_one_operator_serving_it_run(emulator, tmp_path):
    """Issue 44: the emulator reports an Ascend310B1, the backend stands for atlas-200i-500-a2, and
    the run holds only the cases of the two operators serving that family (their op APIs decide
    every call on that chip: 161002), all rejections, all passed; no other operator's case runs or
    skips."""
    s = run_suite(tmp_path, emulator(None), "--isolation=none", "--scale=small", soc="Ascend310B1")
    assert s.returncode == 0, s.tail()
    assert s.cases and set(s.having("passed")) == set(s.cases), s.tail()
    served = {op.name for op in ops.OPERATORS.values() if op.serves("atlas-200i-500-a2")}
    assert len(served) == 2 and not any(ops.get(n).product_dtypes["atlas-200i-500-a2"] for n in served)
    assert {n[n.index("[") + 1:].split("-", 1)[0] for n in s.cases} == served
    assert all("-atlas-200i-500-a2-" in n and "test_status" in n for n in s.cases), sorted(s.cases)[:3]
    assert [r["products"] for r in s.live] == [["atlas-200i-500-a2"]], s.live


class LeakyAclnnBackend(AclnnBackend):
    """The aclnn backend with aclDestroyTensor disabled: proves the live-count check can fail."""

    def __init__(self, **opts: str) -> None:
        super().__init__(**opts)
        self._fn["aclDestroyTensor"] = lambda tensor: 0


def test_live_count_check_sees_a_leaking_backend(emulator, tmp_path):
    s = run_suite(tmp_path, emulator(None), "--backend", "tests.test_backends_aclnn_suite:LeakyAclnnBackend",
                  "-k", "test_results and 2x3.2x3.2x3", "--isolation=none")
    assert s.returncode == 0 and s.having("passed"), s.tail()  # the results are right; only the hygiene is not
    n = len(s.cases)
    [r] = s.live
    assert r["at_session_end"]["tensors"] >= 3 * n and r["after_close"]["tensors"] == r["at_session_end"]["tensors"], r


# ---- planted faults are caught by the suite --------------------------------------------------------
@dataclass
class Fault:
    build: Optional[str]          # emulator fault build (None: the clean emulator)
    opts: Tuple[str, ...]         # extra --backend-opt
    select: str                   # -k slice: cases the fault hits plus unaffected controls
    hit: Callable[[str], bool]    # the kind of case the fault may fail (some others must pass)
    says: Tuple[str, ...]         # each failure message says one of these


FAULTS = {
    "operator ignores strides": Fault(
        "ignore_strides", (), "test_results and float32 and mean and (strided or transposed or 2x3.2x3.2x3)",
        lambda n: "-strided-" in n or "-transposed-" in n, ("fails standard",)),
    "last element unwritten": Fault(
        "skip_last", (), "2x3.2x3.2x3", lambda n: "::test_results[" in n, ("got nan",)),
    "wrong status": Fault(  # {op}: the operator whose emulator file plants the fault
        "wrong_status", (), "test_rejected and {op} and atlas-a2",
        lambda n: "-reduction" in n, ("status 161001 (ACLNN_ERR_PARAM_NULLPTR), expected 161002",)),
    "bfloat16 declared as float16": Fault(
        # bfloat16 data sent as float16: numbers that are grossly wrong, and on the products without
        # bfloat16 a call CANN rejects that the emulator (seeing float16) accepts.
        # Garbage numbers are gross, or NaN/inf where float32 holds them; "fails standard" alone is
        # also what an ordinary precision failure says.
        None, ("_bf16_code=1",), "2x3.2x3.2x3 and not test_bit_identical", lambda n: "bfloat16" in n,
        (" elements are grossly wrong (relative error beyond the allowed window > 0.25", " elements differ in NaN/inf",
         "the backend accepted a call that aclnn rejects with 161002")),
}


@pytest.mark.parametrize("name", FAULTS)
def test_planted_fault_is_caught_by_the_suite(emulator, tmp_path, name):
    f = FAULTS[name]
    lib_dir = emulator(f.build)
    opts = [a for o in f.opts for a in ("--backend-opt", o)]
    select = f.select.format(op=_operator_of(f.build)) if "{op}" in f.select else f.select
    s = run_suite(tmp_path, lib_dir, "-k", select, *opts)
    assert s.returncode == 1, s.tail()
    failed, passed = s.having("failed"), s.having("passed")
    assert failed, s.tail()
    assert all(f.hit(n) for n in failed), f"unexpected kind of failure: {[n for n in failed if not f.hit(n)]}"
    assert any(not f.hit(n) for n in passed), "no unaffected control case ran and passed"
    for nodeid, msg in failed.items():
        case_id = nodeid[nodeid.index("[") + 1:-1]
        assert msg.startswith(f"{case_id}: "), msg
        assert any(x in msg for x in f.says), msg
        reproducer = (f"reproduce: pytest {shlex.quote(nodeid)} --backend aclnn --backend-opt "
                      f"{shlex.quote('lib_dir=' + lib_dir)}" + "".join(f" --backend-opt {o}" for o in f.opts))
        assert reproducer in msg, msg
    if f.opts:  # the reproducer alone (carrying the test-only option) reproduces the failure
        line = next(iter(failed.values())).split("reproduce: ")[1].splitlines()[0]
        cmd = [sys.executable, "-m"] + shlex.split(line) + ["-q", "-p", "no:cacheprovider"]
        proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=HANG_S)
        assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout[-2000:]


def _operator_faults():
    from tests.test_backends_aclnn import operator_faults_without_battery
    return operator_faults_without_battery()


@pytest.mark.parametrize("fault", sampled("test_operator_fault_is_caught", _operator_faults(), _operator_of,
                                           ids=str))
def test_operator_fault_is_caught(emulator, tmp_path, fault):
    """A fault an operator's emulator file plants (and no battery proves) fails some of that
    operator's own small cases on atlas-a2. Only that operator is collected (--op: each worker
    collecting all 27,000 tests cost about 15 s a fault). CI runs the faults of a third of the
    operators (tests/sampling.py), -m heavy the others."""
    op = _operator_of(fault)
    s = run_suite(tmp_path, emulator(fault), "--scale", "small", "--op", op, "-k", "test_results and atlas-a2",
                  workers=2)
    failed = s.having("failed")
    assert s.returncode == 1 and failed, s.tail()
    assert len(s.having("passed")) > 0, "no case of the operator passed: the fault broke everything"


# ---- no CANN at all: the run stops at once, with the reason -------------------------------------------
@pytest.mark.parametrize("workers,isolation", [(0, "none"), (2, "process")], ids=["serial-in-process", "n2"])
def test_without_cann_the_run_stops_at_once_with_the_reason(tmp_path, workers, isolation):
    """It used to skip every one of 24,347 tests (2 min 35 s) before saying so (issue 42, item 12):
    the backend says it is unavailable as it starts, and the run stops there with that one line,
    exit 4, no case run, and no other ERROR line before it (item 9); the report says so too."""
    empty = tmp_path / "no-cann"
    empty.mkdir()
    s = run_suite(tmp_path, str(empty), f"--isolation={isolation}", f"--report-dir={tmp_path / 'r'}",
                  workers=workers)
    assert s.returncode == 4, s.tail()
    errors = [line for line in s.output.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, s.tail()
    assert errors[0].startswith("ERROR: backend aclnn cannot run here: CANN library libascendcl.so not found; "
                                f"looked in {empty} (lib_dir)") and "set_env.sh" in errors[0], errors
    assert not s.cases and " passed" not in s.output and "skipped" not in s.output, s.tail()
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    assert doc["complete"] is False and doc["records"] == [] and "cannot run here" in doc["incomplete"], doc


# ---- device faults: an AI-core fault costs its own case, an unrecoverable device stops the run --------
FAULT_SLICE = ("-k", "test_numerics and float32 and atlas-a2 and contiguous", "--scale", "small")


def test_ai_core_fault_costs_exactly_one_case(emulator, tmp_path):
    """The third kernel the backend's process runs faults as an AI core does (the device is poisoned
    until reset). That case fails as a device fault, with the status and the runtime's message; the
    backend resets the device and every other case passes."""
    s = run_suite(tmp_path, emulator(None), *FAULT_SLICE, f"--report-dir={tmp_path / 'r'}",
                  env={"ACLNN_EMU_AICORE_FAULT_AT": "3"})
    assert s.returncode == 1, s.tail()
    failed = s.having("failed")
    assert len(failed) == 1 and len(s.having("passed")) == len(s.cases) - 1 > 100, s.tail()
    (nodeid, msg), = failed.items()
    assert list(s.cases).index(nodeid) == 2, "the third case ran the third kernel"
    assert "device fault: aclrtSynchronizeStream failed with 507015" in msg and "aicore exception" in msg, msg
    assert "reset the device" in msg and "reproduce: pytest" in msg, msg
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    faults = [r for r in doc["records"] if r.get("fault")]
    assert [r["fault"] for r in faults] == ["device"] and doc["incomplete"] is None and doc["complete"], doc["incomplete"]


@pytest.mark.parametrize("workers", [0, 2])
def test_unrecoverable_device_stops_the_run(emulator, tmp_path, workers):
    """A device the reset cannot bring back: the faulting case fails saying so and the run stops
    there (pytest exit 2, the report marked incomplete), rather than failing every later case. Under
    xdist each worker has its own device session: the first to lose it stops the whole run."""
    s = run_suite(tmp_path, emulator(None), *FAULT_SLICE, f"--report-dir={tmp_path / 'r'}", workers=workers,
                  env={"ACLNN_EMU_AICORE_FAULT_AT": "3", "ACLNN_EMU_RESET_FAILS": "1"})
    assert s.returncode == 2, s.tail()
    failed = s.having("failed")
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    # Each backend process faults at its third kernel launch; a case with an empty tensor launches
    # none (its op API returns early), so under xdist a worker may run more than three cases first.
    launched = [r for r in doc["records"]
                if all(shp is None or 0 not in shp for shp in r["shapes"].values()) and 0 not in (r["out_shape"] or [])]
    assert 1 <= len(failed) <= max(workers, 1) and len(launched) <= 3 * max(workers, 1), s.tail()
    assert len(s.having("passed")) == len(s.cases) - len(failed), s.tail()
    for msg in failed.values():
        assert "could not recover the device, so the run stops here" in msg and "aclrtCreateStream failed" in msg, msg
    assert "Interrupted" in s.output and "could not recover" in s.output, s.tail()
    assert not doc["complete"] and doc["incomplete"].startswith(f"stopped early after {len(s.cases)} cases"), \
        doc["incomplete"]
    assert "could not recover the device" in doc["incomplete"]
    assert [r["fault"] for r in doc["records"] if r.get("fault")] == ["device lost"] * len(failed)
