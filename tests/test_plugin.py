"""The pytest plugin end to end, on a small case file with its own goldens (pytester sessions,
in-process except one -n 2 run): failure messages and their reproducer, --product, --standard,
capability and determinism skips, malformed results, crashes, xdist parity, -k selection."""
from __future__ import annotations

import shlex
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List

import pytest

from suite.cases.load import load_cases
from tests.core_helpers import suite_folder

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]
B = "tests.plugin_backends:"
# Load the plugin by module name, and keep an installed copy's entry point from loading it twice.
PLUGIN = ("-p", "suite.plugin", "-p", "no:cacheprovider",
          "-p", "no:benchmark")
MSE = """
op: MseLossBackward
matrices:
  - products: [atlas-training, atlas-a2]
    dtypes: [float32, float16, bfloat16]
    reductions: [none, mean]
    shapes: [[2x3, 2x3, 2x3], [4, 1x4, 4]]
    determinism: true
cases:
  - {product: atlas-a2, dtypes: float32, reduction: 3, shapes: [2, 2, 2], expect: 161002}
"""
KL = """
op: KlDivBackward
matrices:
  - products: [atlas-a2]
    dtypes: [float32, float16]
    reductions: [sum, batchmean]
    logTarget: [false]
    shapes: [[3x4, 4, 3x4]]
"""


@pytest.fixture
def suite_dir(pytester: pytest.Pytester, monkeypatch) -> pytest.Pytester:
    """A pytester folder with the conformance modules, two case files and their goldens."""
    return suite_folder(pytester, monkeypatch, ROOT, {"mse.yaml": MSE, "kl.yaml": KL})


def run(p: pytest.Pytester, *args: str, backend: str = "reference") -> pytest.RunResult:
    return p.runpytest(*PLUGIN, "--cases=cases", "--golden-dir=golden", f"--backend={backend}", *args)


def outcomes(p: pytest.Pytester, xml: str) -> Dict[str, str]:
    """nodeid -> passed/failed/skipped, from a junit xml file."""
    out = {}
    for tc in ET.parse(p.path / xml).getroot().iter("testcase"):
        nodeid = f"{tc.get('classname').replace('.', '/')}.py::{tc.get('name')}"
        kinds = {c.tag for c in tc}
        out[nodeid] = "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
    return out


def test_reference_backend_passes_everything(suite_dir: pytest.Pytester) -> None:
    r = run(suite_dir)
    n = load_cases([suite_dir.path / "cases"])[0]
    numbers = sum(1 for c in n if c.expect == 0)
    rejections = len(n) - numbers
    dets = sum(1 for c in n if c.determinism)
    r.assert_outcomes(passed=numbers + rejections + dets)


def test_failure_shows_worst_elements_and_a_reproducer_that_reruns_it(suite_dir: pytest.Pytester) -> None:
    r = run(suite_dir, "-k", "KlDivBackward and float32 and batchmean", backend=B + "WrongKL")
    r.assert_outcomes(failed=1)
    text = r.stdout.str()
    assert "fails standard 'cann'" in text and "worst elements:" in text
    assert "index (0,): a sum of 3 terms over axes (0,)" in text
    assert "golden " in text and ", got " in text and " ulp of float32" in text
    assert "Traceback" not in text
    line = next(s for s in text.splitlines() if s.strip().startswith("reproduce: pytest "))
    args = shlex.split(line.split("reproduce: ", 1)[1])
    nodeid = "test_numerics.py::test_results[KlDivBackward-float32-atlas-a2-batchmean-plaintarget-3x4.4.3x4-contiguous-uniform]"
    assert args[:2] == ["pytest", nodeid]
    assert f"--backend={B}WrongKL" not in args and B + "WrongKL" in args
    again = suite_dir.runpytest(*PLUGIN, *args[1:])
    again.assert_outcomes(failed=1)
    first = [s for s in text.splitlines() if "golden " in s]
    assert first and first == [s for s in again.stdout.str().splitlines() if "golden " in s]


def test_product_option_runs_only_that_product(suite_dir: pytest.Pytester) -> None:
    r = run(suite_dir, "--product", "atlas-training", "--collect-only", "-q")
    ids = [s for s in r.stdout.lines if "::" in s]
    assert ids and all("-atlas-training-" in s for s in ids)
    n = sum(1 for c in load_cases([suite_dir.path / "cases"])[0] if c.product == "atlas-training")
    dets = sum(1 for c in load_cases([suite_dir.path / "cases"])[0] if c.product == "atlas-training" and c.determinism)
    assert len(ids) == n + dets


def test_standard_option_changes_the_judging(suite_dir: pytest.Pytester) -> None:
    k = ("-k", "test_results and MseLossBackward and float16 and not bfloat16 and atlas-a2 and none and 2x3")
    run(suite_dir, *k, backend=B + "OneUlpOff").assert_outcomes(passed=1)
    strict = run(suite_dir, *k, "--standard", "strict", backend=B + "OneUlpOff")
    strict.assert_outcomes(failed=1)
    assert "fails standard 'strict'" in strict.stdout.str()
    assert "--standard strict" in strict.stdout.str()          # the reproducer keeps it


def test_backend_without_status_skips_rejections(suite_dir: pytest.Pytester) -> None:
    r = run(suite_dir, "-k", "test_rejected", "-rs", backend=B + "NoStatus")
    rej = sum(1 for c in load_cases([suite_dir.path / "cases"])[0] if c.expect)
    r.assert_outcomes(skipped=rej)
    assert "backend no-status does not claim 'status'" in r.stdout.str()


def test_nondeterministic_backend_skips_determinism(suite_dir: pytest.Pytester) -> None:
    r = run(suite_dir, "-k", "test_bit_identical", "-rs", backend=B + "Nondeterministic")
    dets = sum(1 for c in load_cases([suite_dir.path / "cases"])[0] if c.determinism)
    r.assert_outcomes(skipped=dets)
    assert "declares itself nondeterministic" in r.stdout.str()


def test_determinism_tests_run_last_and_catch_a_result_that_drifts(suite_dir: pytest.Pytester, monkeypatch) -> None:
    """Each determinism test runs after every numbers test and compares with the call its case's
    numbers test made. A backend correct for as many calls as the other tests make (one each, one
    process), then 1 ulp off at element 0 on every call: when the determinism tests ran first, all
    but the one straddling the change passed (and the numbers tests, 1 ulp off, passed too)."""
    collected = run(suite_dir, "--collect-only", "-q").stdout.lines
    ids = [ln for ln in collected if "::" in ln]
    det = [i for i, ln in enumerate(ids) if "test_determinism.py" in ln]
    assert det and det == list(range(len(ids) - len(det), len(ids))), "determinism tests are not last"
    monkeypatch.setenv("DRIFT_AFTER", str(len(ids) - len(det)))
    r = run(suite_dir, "--isolation=none", "--junitxml=o.xml", backend=B + "DriftsLater")
    got = outcomes(suite_dir, "o.xml")
    failed = sorted(n for n, o in got.items() if o == "failed")
    assert failed and all("test_determinism.py" in n for n in failed), failed
    assert len(failed) == len(det), (len(failed), len(det))
    messages = [f.get("message", "") + (f.text or "") for f in ET.parse(suite_dir.path / "o.xml").getroot().iter("failure")]
    assert len(messages) == len(det), len(messages)
    assert all("the same call earlier in this session gave other bits" in m for m in messages), messages[:2]
    assert r.ret == 1


def test_the_tests_of_one_case_data_run_together_where_its_first_stood(suite_dir: pytest.Pytester) -> None:
    """Within each module, the tests whose case has the same data (another product, layout) follow
    each other, at the place of the first of them, and otherwise in the case files' order: the store
    then draws a large case's inputs and computes its golden once for all of them. The case files
    here put them apart (products are expanded outside the dtypes), so file order fails this."""
    ids = [ln for ln in run(suite_dir, "--collect-only", "-q").stdout.lines if "::" in ln]
    cases = load_cases([suite_dir.path / "cases"])[0]
    key = {c.id: c.datakey for c in cases}
    position = {c.id: i for i, c in enumerate(cases)}
    by_module: Dict[str, List[str]] = {}
    for ln in ids:
        by_module.setdefault(ln.split("::")[0], []).append(ln[ln.index("[") + 1:-1])
    assert len(by_module) == 3 and sum(map(len, by_module.values())) == len(ids)
    apart = 0
    for module, run_ids in by_module.items():
        keys = [key[i] for i in run_ids]
        runs = [k for n, k in enumerate(keys) if n == 0 or keys[n - 1] != k]
        assert len(runs) == len(set(keys)), f"{module}: the tests of one case data are apart"
        # groups in the order of their first case in the files, each group in file order
        firsts = [min(position[i] for i in run_ids if key[i] == k) for k in runs]
        assert firsts == sorted(firsts), module
        assert all(position[a] < position[b] for a, b in zip(run_ids, run_ids[1:]) if key[a] == key[b]), module
        in_files = sorted(run_ids, key=position.get)
        file_keys = [key[i] for i in in_files]
        apart += sum(1 for n, k in enumerate(file_keys) if n and file_keys[n - 1] != k) + 1 - len(set(file_keys))
    assert apart, "no case data is apart in file order: this test would prove nothing"


def test_wrong_shape_and_dtype_is_a_clear_failure(suite_dir: pytest.Pytester) -> None:
    r = run(suite_dir, "-k", "test_results and MseLossBackward and float16 and not bfloat16 and atlas-a2 and none and 2x3",
            backend=B + "WrongShape")
    r.assert_outcomes(failed=1)
    assert ("the backend returned shape (6,) dtype float32; out is shape (2, 3) dtype float16"
            in r.stdout.str())


def test_crash_is_reported_as_a_crash(suite_dir: pytest.Pytester) -> None:
    r = run(suite_dir, "-k", "MseLossBackward and float32 and atlas-a2 and none and 2x3", backend=B + "Crashes")
    r.assert_outcomes(failed=2)                  # numbers and determinism
    text = r.stdout.str()
    # Once per failing test in the FAILURES section (the short summary may repeat it, width allowing).
    failures = text.split("= FAILURES =", 1)[1].split("short test summary info", 1)[0]
    assert failures.count("the backend crashed: RuntimeError: device lost") == 2
    assert "Traceback" not in text


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_a_crash_shows_the_backends_own_frames_and_none_of_the_suites(suite_dir: pytest.Pytester,
                                                                     isolation: str) -> None:
    """Issue 42 item 11: "the backend crashed: ValueError: ..." with no file or line, even with
    --isolation none --tb=long. Its failure now carries the backend's own traceback, in either
    process: each of its frames as file, line and source, from its run down to the raise."""
    r = run(suite_dir, "-k", "test_results and MseLossBackward and float32 and atlas-a2 and none and 2x3",
            f"--isolation={isolation}", "--tb=long", backend=B + "CrashesInAHelper")
    r.assert_outcomes(failed=1)
    failures = r.stdout.str().split("= FAILURES =", 1)[1].split("short test summary info", 1)[0]
    here = str(Path(__file__).with_name("plugin_backends.py"))
    lines = [ln.strip() for ln in failures.splitlines()]
    at = lines.index("the backend's traceback (most recent call last):")
    assert lines[at - 1].endswith("the backend crashed: ValueError: no tiling for 6 elements"), lines
    assert lines[at + 1:at + 6] == [
        f'File "{here}", line {_line(here, "return np.zeros(_tiling(")}, in run',
        "return np.zeros(_tiling(call.inputs[\"self\"].size))",
        f'File "{here}", line {_line(here, "no tiling for")}, in _tiling',
        'raise ValueError(f"no tiling for {n} elements")',
        lines[at + 5]], lines
    assert lines[at + 5].startswith("reproduce: pytest "), lines
    assert "suite/run/" not in failures and "Traceback" not in failures


def _line(path: str, text: str) -> int:
    return next(i + 1 for i, t in enumerate(Path(path).read_text().splitlines()) if text in t)


def test_xdist_gives_the_same_outcomes(suite_dir: pytest.Pytester) -> None:
    k = ("-k", "atlas-a2 and not bfloat16")
    plain = run(suite_dir, *k, "--junitxml=plain.xml", backend=B + "WrongKL")
    par = suite_dir.runpytest_subprocess(*PLUGIN, "--cases=cases", "--golden-dir=golden",
                                         f"--backend={B}WrongKL", "-n", "2", *k, "--junitxml=par.xml")
    assert plain.ret == par.ret == pytest.ExitCode.TESTS_FAILED
    a, b = outcomes(suite_dir, "plain.xml"), outcomes(suite_dir, "par.xml")
    assert a == b
    assert {"passed", "failed"} <= set(a.values()) and len(a) > 20


def test_k_selects_by_operator_and_dtype(suite_dir: pytest.Pytester) -> None:
    """-k matches substrings of the id: 'float16' also selects bfloat16 cases (add 'not bfloat16')."""
    r = run(suite_dir, "-k", "MseLossBackward and float16", "--collect-only", "-q")
    ids: List[str] = [s for s in r.stdout.lines if "::" in s]
    cases = load_cases([suite_dir.path / "cases"])[0]
    want = [c for c in cases if c.op == "MseLossBackward" and "float16" in c.id]
    assert ids and all("MseLossBackward" in s and "float16" in s for s in ids)
    assert len(ids) == len(want) + sum(1 for c in want if c.determinism)
    assert any("KlDivBackward" in c.id and "float16" in c.id for c in cases)   # others existed
    strict = run(suite_dir, "-k", "MseLossBackward and float16 and not bfloat16", "--collect-only", "-q")
    ids16 = [s for s in strict.stdout.lines if "::" in s]
    assert ids16 and all("-float16-" in s for s in ids16) and len(ids16) < len(ids)


L1 = """
op: L1LossBackward
matrices:
  - products: [atlas-a2]
    dtypes: [float32]
    reductions: [none, sum]
    shapes: [[2x3, 2x3, 2x3]]
"""
SMOOTH_L1 = """
op: SmoothL1LossBackward
matrices:
  - products: [atlas-a2]
    dtypes: [float32]
    reductions: [none]
    beta: [1.0]
    shapes: [[2x3, 2x3, 2x3]]
"""


def _collected(r: pytest.RunResult) -> List[str]:
    """The conformance cases collected (not a kind's empty placeholder, nor the setup error's item)."""
    return [s for s in r.stdout.lines if "::" in s and not s.endswith(("[NOTSET]", "[setup-error]"))]


def test_op_option_selects_operators_by_exact_name(pytester: pytest.Pytester, monkeypatch) -> None:
    """-k L1LossBackward also selects SmoothL1LossBackward (a substring of its id); --op selects
    exactly the named operators, repeatable or comma-separated as --product takes them."""
    p = suite_folder(pytester, monkeypatch, ROOT, {"mse.yaml": MSE, "l1.yaml": L1, "sl1.yaml": SMOOTH_L1})
    cases = load_cases([p.path / "cases"])[0]

    def want(*names: str) -> int:
        return sum(1 + c.determinism for c in cases if c.op in names)
    by_k = _collected(run(p, "-k", "L1LossBackward", "--collect-only", "-q"))
    assert any("SmoothL1LossBackward" in s for s in by_k)          # the trap --op exists for
    only = _collected(run(p, "--op", "L1LossBackward", "--collect-only", "-q"))
    assert only and all("[L1LossBackward-" in s for s in only) and len(only) == want("L1LossBackward")
    two = _collected(run(p, "--op", "L1LossBackward,MseLossBackward", "--collect-only", "-q"))
    assert len(two) == want("L1LossBackward", "MseLossBackward")
    again = _collected(run(p, "--op", "L1LossBackward", "--op", " MseLossBackward ", "--collect-only", "-q"))
    assert sorted(again) == sorted(two)


def test_op_option_refuses_an_unknown_name_and_lists_the_known(suite_dir: pytest.Pytester) -> None:
    from suite import ops
    r = run(suite_dir, "--op", "HuberLoss", "--collect-only", "-q")
    assert r.ret == 4
    line = next(s for s in r.stderr.lines if "--op" in s)
    assert "unknown HuberLoss" in line and all(name in line for name in ops.OPERATORS)
    assert "Traceback" not in r.stdout.str() + r.stderr.str()
    # An operator this suite knows, but no case file here has: nothing would run, said in one line.
    none = run(suite_dir, "--op", "L1LossBackward", "--collect-only", "-q")
    assert none.ret == 4 and not _collected(none)
    assert any(s.startswith("ERROR: --op L1LossBackward: no case of it in ") for s in none.stderr.lines)


def test_op_option_is_part_of_the_reproducer(suite_dir: pytest.Pytester) -> None:
    r = run(suite_dir, "--op", "KlDivBackward", "-k", "float32 and batchmean", backend=B + "WrongKL")
    r.assert_outcomes(failed=1)
    line = next(s for s in r.stdout.lines if s.strip().startswith("reproduce: pytest "))
    args = shlex.split(line.split("reproduce: ", 1)[1])
    assert args[args.index("--op") + 1] == "KlDivBackward"
