"""The doctor's diagnosis: from what was found, the problems (what is missing, where it was looked
for, the command that fixes it) and the verdict."""
from __future__ import annotations

import importlib.util
import os
import shlex
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from suite.backends import soc
from suite.backends import _aclnn_lib as lib
from suite.common.home import HOME_ENV
from suite.cli.doctor_probe import probe_cann
from suite.cli.doctor_env import PACKAGE_FIXES, Problem, Report, case_counts, dtypes_by_family, environment
from suite.cli.doctor_smoke import (_backend_opts, EMULATOR_LABEL, Suite, _row, emulator_builder, load_suite,
                                    numbers_test, passed, run_smoke)
from suite.backends.cann import DEFAULT_SET_ENV, cann_version, set_env_script, toolkit_of


# -- the diagnosis -------------------------------------------------------------------------------
def searched(probe: Dict[str, Any]) -> str:
    """Where the libraries were looked for, in the backend's order (suite/backends/_aclnn_lib.py)."""
    places = list(probe["dirs"])
    if probe["loader"]:
        places.append(f"the dynamic loader's search path (LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH', '')!r})")
    where = "; ".join(places) or "nowhere"
    if probe["loader"] and not probe["dirs"]:
        where += " (no lib_dir given; ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME and ASCEND_OPP_PATH unset)"
    return where


def _not_found(item: Optional[Dict[str, Any]]) -> bool:
    """The library is in none of the places (as opposed to there, but failing to load)."""
    return item is not None and not item["found"] and "exists but does not load" not in item["error"]


def _cann_problems(report: Report, probe: Dict[str, Any], toolkit: Dict[str, Any]) -> bool:
    """Problems of the CANN install, for the aclnn backend. True when its libraries all loaded."""
    libs = probe["libraries"]
    where = searched(probe)
    script = set_env_script(toolkit["path"]) or next(
        (set_env_script(i["path"]) for i in toolkit["installed"] if set_env_script(i["path"])), None)
    source = f"source {script}" if script else f"source {DEFAULT_SET_ENV} (or your CANN install's set_env.sh)"
    fix_env = f"{source}; or name the folder that holds the libraries: --backend-opt lib_dir=DIR"
    runtime = libs.get(lib.RUNTIME_LIB)
    if toolkit["path"] and not toolkit["exists"]:
        report.problems.append(Problem(f"the CANN toolkit named by {toolkit['from']} ({toolkit['path']}) does not exist",
                                       fix_env, ("aclnn",)))
    if runtime is None or not runtime["found"]:
        found_elsewhere = [i["path"] for i in toolkit["installed"]]
        if found_elsewhere:
            hint = f"; a toolkit is installed at {', '.join(found_elsewhere)}, but nothing in the environment names it"
        elif not toolkit["path"]:
            hint = f"; and no toolkit is installed at {', '.join(toolkit['looked_in'])}"
        else:
            hint = ""
        if runtime is None:
            what = f"{lib.RUNTIME_LIB} was not looked for ({probe['error']})"
        elif _not_found(runtime):
            what = f"{lib.RUNTIME_LIB} is in none of: {where}"
        else:
            what = runtime["error"]
        report.problems.append(Problem(f"CANN was not found: {what}{hint}", fix_env, ("aclnn",)))
        return False
    ok = True
    for name in (lib.TENSOR_LIB,):
        item = libs.get(name)
        if item is not None and not item["found"]:
            ok = False
            missing = (f"{name} is in none of: {where}" if _not_found(item) else item["error"])
            report.problems.append(Problem(
                f"CANN is incomplete: {lib.RUNTIME_LIB} was found ({runtime['path']}), but {missing}",
                f"reinstall the CANN toolkit whose {lib.RUNTIME_LIB} was found ({runtime['path']}), or "
                f"point lib_dir at the folder holding all of {lib.RUNTIME_LIB}, {lib.TENSOR_LIB} and "
                f"{' or '.join(lib.OP_LIBS)}. If the file exists but does not load, its dependencies "
                f"must be on LD_LIBRARY_PATH: {source}", ("aclnn",)))
    op_found = [libs[n] for n in lib.OP_LIBS if n in libs and libs[n]["found"]]
    if not op_found:
        ok = False
        errors = [libs[n]["error"] for n in lib.OP_LIBS if n in libs and not _not_found(libs[n])]
        report.problems.append(Problem(
            f"no CANN operator library loads: {' and '.join(lib.OP_LIBS)} are in none of: {where}"
            if not errors else f"no CANN operator library loads: {'; '.join(errors)}",
            f"install the CANN operator package (kernels) for this chip, matching the toolkit, then "
            f"{source}; or point lib_dir at the folder that holds it", ("aclnn",)))
    for library, missing in probe["symbols"].items():
        if missing:
            ok = False
            report.problems.append(Problem(
                f"{library} ({libs[library].get('path')}) lacks {', '.join(missing)}",
                "a CANN toolkit too old for the aclnn API, or not CANN's library: install a current CANN "
                f"toolkit and {source}", ("aclnn",)))
    if op_found:
        for item in probe["operators"]:
            if item["library"] is None:
                report.problems.append(Problem(
                    f"operator {item['op']}: {' / '.join(item['symbols'])} not found in "
                    f"{', '.join(item['searched'])}: its cases will be skipped",
                    "install a CANN version whose operator package provides it (see the operator's page in "
                    "docs/operators/)", ("aclnn",)))
    return ok


def _device_problems(report: Report, probe: Dict[str, Any], opts: Dict[str, str]) -> None:
    """Devices, each one's SoC and family; the selected device (device=, default 0) must be usable
    and, unless product= overrides detection, held to one of the four families."""
    if probe["error"]:
        report.problems.append(Problem(
            probe["error"],
            "CANN itself crashed or hung: check the driver (`npu-smi info`), that the toolkit matches the "
            "driver's version, and that this user may open /dev/davinci*", ("aclnn",)))
    if probe["device_error"]:
        report.problems.append(Problem(
            f"the devices cannot be listed: {probe['device_error']}",
            "check the driver and firmware (`npu-smi info`) and that the toolkit matches the driver", ("aclnn",)))
    devices = probe["devices"]
    if devices is None:
        return
    for d in devices["list"]:
        if d.get("soc") is not None:
            try:
                d["family"], d["refused"] = soc.family_of(d["soc"]), None
            except soc.UnknownSoc as e:
                d["family"], d["refused"] = None, str(e)
    try:
        selected = int(opts.get("device", "0"))
    except ValueError:
        report.problems.append(Problem(f"--backend-opt device={opts.get('device')!r} is not a device number",
                                       "--backend-opt device=N (N from `npu-smi info`)", ("aclnn",)))
        return
    if devices["count"] == 0:
        report.problems.append(Problem("aclrtGetDeviceCount reports no device",
                                       "check the driver (`npu-smi info`) and ASCEND_RT_VISIBLE_DEVICES", ("aclnn",)))
        return
    mine = next((d for d in devices["list"] if d["id"] == selected), None)
    if mine is None and probe["error"] and selected < devices["count"]:
        return                                  # not reached: the probe stopped first (said above)
    if mine is None:
        report.problems.append(Problem(
            f"device {selected} (--backend-opt device=) is not among the {devices['count']} devices",
            f"--backend-opt device=N with N in 0..{devices['count'] - 1}", ("aclnn",)))
        return
    if mine.get("error"):
        report.problems.append(Problem(f"device {selected}: {mine['error']}",
                                       "check `npu-smi info` (is the device healthy, is another process holding it?)",
                                       ("aclnn",)))
    elif mine.get("refused") and not opts.get("product"):
        report.problems.append(Problem(
            f"device {selected}: {mine['refused']}",
            "run on a device of one of the four families (--backend-opt device=N; `npu-smi info` lists "
            "them); for a simulator or an emulator only, name the family: --backend-opt product=FAMILY",
            ("aclnn",)))


def diagnose(backend: str, opts: Dict[str, str], smoke: bool = True, timeout: float = 60.0) -> Report:
    """The whole check, as a Report (rendering and the exit code are the caller's)."""
    report = Report(backend, dict(opts))
    report.environment = environment()
    for name, version in report.environment["packages"].items():
        if version is None and name in PACKAGE_FIXES:
            cost, fix = PACKAGE_FIXES[name]
            stops = ("torch",) if name == "torch" else () if name in ("hypothesis", "pytest-xdist") else ("*",)
            report.problems.append(Problem(f"{name} is not installed: {cost}", fix, stops))
    data = load_suite()
    if data.error:
        report.problems.append(Problem(
            f"the suite's data cannot be read: {data.error}",
            f"run from a checkout of the suite, or set ${HOME_ENV} to the folder holding cases/ and golden/",
            ("*",)))
    lib_dir = opts.get("lib_dir") if backend == "aclnn" else None
    toolkit = toolkit_of(lib_dir, os.environ)
    probe = probe_cann(os.path.abspath(lib_dir) if lib_dir else None, timeout)
    report.cann = {"toolkit": toolkit, "version": cann_version(toolkit["path"]), "probe": probe}
    cann_ok = _cann_problems(report, probe, toolkit)
    _device_problems(report, probe, opts)
    if probe["emulator"]:
        report.notes.append(f"{lib.RUNTIME_LIB} at {probe['libraries'][lib.RUNTIME_LIB].get('path')} is the host "
                            f"emulator (it exports aclemu_*): it proves the marshalling, not Huawei's kernels")
    report.families = {"dtypes": dtypes_by_family(), "cases": case_counts(data.cases)}
    if smoke and not data.error:
        report.smoke = _smoke_all(report, backend, opts, data, cann_ok=cann_ok, probe=probe, timeout=timeout)
    elif not smoke and (backend != "aclnn" or cann_ok):
        report.smoke = [run_smoke(backend, opts, backend, data, timeout,
                                  emulator=backend == "aclnn" and probe["emulator"], with_cases=False)]
    _smoke_problems(report)
    _verdict(report, smoke)
    return report


def _smoke_all(report: Report, backend: str, opts: Dict[str, str], data: Suite, *, cann_ok: bool,
               probe: Dict[str, Any], timeout: float) -> List[Dict[str, Any]]:
    """Reference always; torch when it is installed; aclnn when CANN's libraries load, else the host
    emulator when its sources and a compiler are here; the selected backend in any case."""
    rows = [run_smoke("reference", opts if backend == "reference" else {}, "reference", data, timeout)]
    torch_here = importlib.util.find_spec("torch") is not None
    if torch_here or backend == "torch":
        rows.append(run_smoke("torch", opts if backend == "torch" else {}, "torch", data, timeout))
    if cann_ok:
        label = "aclnn" + (" (these libraries are the host emulator: they prove the marshalling, not the kernels)"
                           if probe["emulator"] else "")
        rows.append(run_smoke("aclnn", opts if backend == "aclnn" else {}, label, data, timeout,
                              emulator=probe["emulator"]))
    else:
        rows.append(_emulator_smoke(report, data, timeout))
        if backend == "aclnn":
            rows.append(_row("aclnn", "aclnn", opts, why="not run: CANN's libraries did not load (see the problems below)"))
    if backend not in ("reference", "torch", "aclnn"):
        rows.append(run_smoke(backend, opts, backend, data, timeout))
    return rows


def _emulator_smoke(report: Report, data: Suite, timeout: float) -> Dict[str, Any]:
    builder, why = emulator_builder()
    row = _row("aclnn", EMULATOR_LABEL, {}, emulator=True, substitute=True)
    if builder is None:
        row["why"] = f"not run: the host emulator cannot be built: {why}"
        report.notes.append(f"host emulator not built: {why}")
        return row
    with tempfile.TemporaryDirectory(prefix="aclnn-doctor-emu-") as tmp:
        try:
            out = builder.build(Path(tmp) / "lib64")
        except Exception as e:
            row["why"] = f"not run: the host emulator's build failed: {e}"
            return row
        return run_smoke("aclnn", {"lib_dir": str(out)}, EMULATOR_LABEL, data, timeout, emulator=True, substitute=True)


def _smoke_problems(report: Report) -> None:
    """A backend that did not start, or a smoke case that did not pass: what, and the command that
    shows the whole story (the case alone under pytest). Only the selected backend's stop it."""
    for row in report.smoke:
        name = row["backend"]
        mine = name == report.backend and not row["substitute"]
        already = any(stops(p, name) for p in report.problems)
        if not row["started"]:
            if mine and not already:
                report.problems.append(Problem(
                    f"the backend did not start: {row['why']}",
                    f"make {name} importable here (pip install the package that provides it) and check its "
                    f"--backend-opt options; `pytest --backend {name}` fails with the same message", (name,)))
            continue
        if not mine and already:
            continue
        groups: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
        for c in row["cases"]:
            if c["outcome"] != "passed":
                groups.setdefault((c["outcome"], c["why"]), []).append(c)
        for (outcome, why), bad in groups.items():
            first = bad[0]
            which = (f"smoke case {first['case'] or first['op']}" if len(bad) == 1 else
                     f"{len(bad)} smoke cases ({', '.join(c['op'] for c in bad)})")
            report.problems.append(Problem(
                f"{which} {outcome} on backend {name}{' (the host emulator)' if row['emulator'] else ''}: {why}",
                f"see the whole message: {_reproducer(row, first)}", (name,) if mine else ()))


def _reproducer(row: Dict[str, Any], case: Dict[str, Any]) -> str:
    """The command that runs this smoke case alone under pytest (-rs: a skip's reason too)."""
    if not case["case"]:
        return f"aclnn-conform cases list --count   (the case files hold no smoke case for {case['op']})"
    test = f"pytest {shlex.quote(numbers_test(case['case']))} --backend {shlex.quote(row['backend'])}"
    if row["substitute"]:                  # the doctor's emulator folder is gone: build one
        return f"python -m tests.emulator.build DIR && {test} --backend-opt lib_dir=DIR -rs"
    return case.get("reproduce") or test + _backend_opts(row["opts"]) + " -rs"


def stops(problem: Problem, backend: str) -> bool:
    return backend in problem.stops or "*" in problem.stops


def _verdict(report: Report, smoke: bool) -> None:
    """Exit 0 when nothing stops the selected backend and its smoke cases all passed; else 1."""
    name = report.backend
    stopping = [p for p in report.problems if stops(p, name)]
    mine = [r for r in report.smoke if r["backend"] == name and not r["substitute"]]
    failing = [r for r in mine if not (passed(r) if smoke else r["started"])]
    if smoke and not mine:
        failing = [{"why": "no smoke run"}]
    if not stopping and not failing:
        report.exit_code = 0
        report.verdict = (f"backend {name} can run here: " +
                          ("its smoke cases passed" if smoke else "it starts, and nothing found stops it "
                                                                  "(no smoke case run: --no-smoke)"))
        return
    report.exit_code = 1
    if stopping:
        reason = stopping[0].what
    else:
        row = failing[0]
        bad = [c for c in row.get("cases", []) if c["outcome"] != "passed"]
        reason = (f"smoke case {bad[0]['case'] or bad[0]['op']} {bad[0]['outcome']}: {bad[0]['why']}" if bad
                  else row.get("why") or "its smoke cases did not run")
    report.verdict = f"backend {name} cannot run here: {reason}"
