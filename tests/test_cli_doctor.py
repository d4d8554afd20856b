"""`aclnn-conform doctor` (suite/cli/doctor.py): what it reports and how it exits, on this machine (no
CANN), against the host emulator (libraries found, devices, SoC -> family, smoke cases through
aclnn), with a planted missing library, and with a CANN runtime that crashes or hangs.

Each run is the real command in a fresh process (`python -m suite.cli doctor`), in an environment
without ASCEND_* variables, so the emulator's SoC (ACLNN_EMU_SOC) reaches every process it starts.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from suite.cli import main as cli
from suite import ops
from suite.cli import doctor_smoke as cli_doctor_smoke
from suite.cli import doctor_env as cli_doctor_env
from suite.cli import doctor_diagnose as cli_doctor_diagnose
from suite.backends import cann as backends_cann
from suite.golden import source as golden
from suite.cases.model import NUMBERS
from suite.cases.load import load_cases
from suite.contract import PRODUCTS
from suite.common.home import data_root
from tests.emulator.build import BuildError, build, find_compiler
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[1]


def clean_env(**extra: str) -> Dict[str, str]:
    """This environment without CANN: no ASCEND_* variable, no LD_LIBRARY_PATH entry holding a CANN
    runtime."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_") and not k.startswith("ACLNN_EMU_")}
    ld = [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
          if p and not (Path(p) / "libascendcl.so").exists()]
    env["LD_LIBRARY_PATH"] = os.pathsep.join(ld)
    env.update(extra)
    return env


def run_doctor(*args: str, env: Optional[Dict[str, str]] = None, as_json: bool = True,
               timeout: float = 240) -> Tuple[int, object, str]:
    """(exit code, the JSON document or the text, stderr)."""
    cmd = [sys.executable, "-m", "suite.cli", "doctor", *(["--json"] if as_json else []), *args]
    p = subprocess.run(cmd, cwd=ROOT, env=env or clean_env(), capture_output=True, text=True, timeout=timeout)
    if as_json:
        try:
            doc = json.loads(p.stdout)       # stdout holds the document and nothing else
        except ValueError:
            pytest.fail(f"--json wrote more than one JSON document:\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}")
        return p.returncode, doc, p.stderr
    return p.returncode, p.stdout, p.stderr


def smoke(doc: dict, backend: str, substitute: bool = False) -> dict:
    rows = [r for r in doc["smoke"] if r["backend"] == backend and r["substitute"] == substitute]
    assert len(rows) == 1, [r["label"] for r in doc["smoke"]]
    return rows[0]


def assert_one_passed_per_operator(row: dict) -> None:
    assert row["started"], row["why"]
    assert [c["op"] for c in row["cases"]] == list(ops.OPERATORS), row["cases"]
    assert all(c["outcome"] == "passed" for c in row["cases"]), row["cases"]
    assert all(c["case"] and c["case"].startswith(c["op"] + "-") for c in row["cases"])


def stopping(doc: dict) -> List[dict]:
    return [p for p in doc["problems"] if doc["backend"] in p["stops"] or "*" in p["stops"]]


@pytest.fixture(scope="session")
def emu_dir(tmp_path_factory) -> Path:
    """The host emulator, built once for the session (as tests/test_backends_aclnn.py's emu_dir)."""
    if find_compiler() is None:
        pytest.skip("no C compiler (looked for $CC, cc, gcc, clang on PATH): cannot build the emulator")
    try:
        return build(tmp_path_factory.mktemp("doctor-emu") / "lib64")
    except BuildError as exc:
        pytest.skip(f"emulator build failed: {exc}")


# -- (a) no CANN -------------------------------------------------------------------------------
def test_without_cann_aclnn_cannot_run_and_says_where_it_looked():
    code, doc, _ = run_doctor()
    lib = doc["cann"]["probe"]["libraries"]["libascendcl.so"]
    if lib["found"]:
        pytest.skip(f"a CANN runtime is on this machine's loader path ({lib['path']})")
    assert code == 1 and doc["exit_code"] == 1
    cann = [p for p in stopping(doc) if p["what"].startswith("CANN was not found")]
    assert cann, doc["problems"]
    assert "libascendcl.so" in cann[0]["what"] and "the dynamic loader's search path" in cann[0]["what"]
    assert "ASCEND_HOME_PATH" in cann[0]["what"]                  # ... and which variables were unset
    assert "set_env.sh" in cann[0]["fix"] and "--backend-opt lib_dir=DIR" in cann[0]["fix"]
    assert doc["verdict"].startswith("backend aclnn cannot run here: CANN was not found")
    assert_one_passed_per_operator(smoke(doc, "reference"))
    # The emulator stands in for CANN, labelled as what it is, and does not decide the verdict.
    emu = smoke(doc, "aclnn", substitute=True)
    assert emu["label"] == cli_doctor_smoke.EMULATOR_LABEL
    assert_one_passed_per_operator(emu)
    assert not smoke(doc, "aclnn")["started"]


def test_without_cann_reference_can_run_and_the_text_says_so():
    code, text, _ = run_doctor("--backend", "reference", as_json=False)
    assert code == 0, text[-3000:]
    lines = text.splitlines()
    assert lines[-1] == "backend reference can run here: its smoke cases passed (exit 0)"
    other = lines.index("Other problems (they do not stop backend reference)")
    assert any("CANN was not found" in ln for ln in lines[other:]), text[-3000:]
    assert any(ln.strip().startswith("fix: source ") for ln in lines[other:])
    start = lines.index(next(ln for ln in lines if ln.startswith("  reference: stands for")))
    rows = lines[start + 1:start + 1 + len(ops.OPERATORS)]
    for name, row in zip(ops.OPERATORS, rows):
        assert row.split()[:2] == [name, "passed"], row
    assert "Environment" in lines and any(ln.split()[:1] == ["numpy"] for ln in lines)


# -- (b) the emulator as CANN --------------------------------------------------------------------
def test_emulator_found_devices_family_and_smoke(emu_dir):
    code, doc, err = run_doctor("--backend-opt", f"lib_dir={emu_dir}",
                                env=clean_env(ACLNN_EMU_SOC="Ascend910B3", ACLNN_EMU_DEVICES="2"))
    assert code == 0, (doc["verdict"], doc["problems"], err[-2000:])
    probe = doc["cann"]["probe"]
    for name in ("libascendcl.so", "libnnopbase.so", "libopapi.so"):
        assert probe["libraries"][name]["found"] and probe["libraries"][name]["path"] == str(emu_dir / name)
    assert [o["op"] for o in probe["operators"]] == list(ops.OPERATORS)
    assert all(o["library"] == "libopapi.so" for o in probe["operators"])
    assert probe["devices"]["count"] == 2
    assert [(d["id"], d["soc"], d["family"]) for d in probe["devices"]["list"]] == [
        (0, "Ascend910B3", "atlas-a2"), (1, "Ascend910B3", "atlas-a2")]
    assert probe["emulator"] and any("host emulator" in n for n in doc["notes"])
    row = smoke(doc, "aclnn")
    assert row["products"] == ["atlas-a2"]
    assert_one_passed_per_operator(row)
    assert doc["verdict"] == "backend aclnn can run here: its smoke cases passed"
    assert not stopping(doc)


@pytest.mark.parametrize("name", ["Ascend960PR", "Ascend910Bx"])
def test_emulator_soc_outside_the_table_is_refused_by_name(emu_dir, name):
    code, doc, _ = run_doctor("--no-smoke", "--backend-opt", f"lib_dir={emu_dir}",
                              env=clean_env(ACLNN_EMU_SOC=name, ACLNN_EMU_DEVICES="1"))
    assert code == 1
    device = doc["cann"]["probe"]["devices"]["list"][0]
    assert device["soc"] == name and device["family"] is None
    assert f"SoC {name!r}" in device["refused"]
    refused = [p for p in stopping(doc) if name in p["what"]]
    assert refused and refused[0]["what"].startswith("device 0: SoC"), doc["problems"]
    assert doc["verdict"].startswith(f"backend aclnn cannot run here: device 0: SoC {name!r}")


def test_the_same_look_passes_on_a_soc_the_table_holds(emu_dir):
    """The control of the test above: only the SoC differs, and nothing stops the backend."""
    code, doc, _ = run_doctor("--no-smoke", "--backend-opt", f"lib_dir={emu_dir}",
                              env=clean_env(ACLNN_EMU_SOC="Ascend910_9391", ACLNN_EMU_DEVICES="1"))
    assert code == 0, doc["problems"]
    assert doc["cann"]["probe"]["devices"]["list"][0]["family"] == "atlas-a3"


# -- (c) a library missing -----------------------------------------------------------------------
def test_a_missing_library_is_named_with_where_it_was_looked_for(emu_dir, tmp_path):
    planted = tmp_path / "lib64"
    shutil.copytree(emu_dir, planted, ignore=shutil.ignore_patterns("libnnopbase.so"))
    code, doc, _ = run_doctor("--no-smoke", "--backend-opt", f"lib_dir={planted}")
    assert code == 1
    libs = doc["cann"]["probe"]["libraries"]
    assert libs["libascendcl.so"]["found"] and not libs["libnnopbase.so"]["found"]
    what = [p["what"] for p in stopping(doc) if "libnnopbase.so" in p["what"]]
    assert what, doc["problems"]
    assert f"{planted} (lib_dir)" in what[0] and f"{planted / 'lib64'} (lib_dir/lib64)" in what[0]
    assert "libnnopbase.so" in doc["verdict"]


# -- a CANN that crashes or hangs ----------------------------------------------------------------
STUB = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int aclInit(const char *c) { (void)c; printf("native noise on stdout\n"); fflush(stdout); return 0; }
int aclFinalize(void) { return 0; }
int aclrtSetDevice(int32_t d) {
    if (getenv("STUB_HANG")) for (;;) sleep(1);
    if (d == 1) { volatile int *p = 0; *p = 1; }
    return 0;
}
int aclrtResetDevice(int32_t d) { (void)d; return 0; }
int aclrtCreateStream(void **s) { (void)s; return 0; }
int aclrtDestroyStream(void *s) { (void)s; return 0; }
int aclrtSynchronizeStream(void *s) { (void)s; return 0; }
int aclrtMalloc(void **p, size_t n, int k) { (void)p; (void)n; (void)k; return 1; }
int aclrtFree(void *p) { (void)p; return 0; }
int aclrtMemcpy(void *a, size_t b, const void *c, size_t d, int e) { (void)a; (void)b; (void)c; (void)d; (void)e; return 1; }
const char *aclrtGetSocName(void) { return "Ascend910B3"; }
int aclrtGetDeviceCount(uint32_t *c) { *c = 3; return 0; }
"""


@pytest.fixture(scope="module")
def crashing_runtime(tmp_path_factory) -> Path:
    """A libascendcl.so whose aclrtSetDevice(1) segfaults (or, with STUB_HANG, never returns)."""
    cc = find_compiler()
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("crashing")
    (d / "stub.c").write_text(STUB)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(d / "libascendcl.so"), str(d / "stub.c")], check=True)
    return d


def test_a_crash_in_cann_costs_a_line_not_the_doctor(crashing_runtime):
    code, doc, _ = run_doctor("--no-smoke", "--backend-opt", f"lib_dir={crashing_runtime}")
    assert code == 1                          # the doctor's own verdict, not a signal
    probe = doc["cann"]["probe"]
    assert "SIGSEGV" in probe["error"] and "aclrtSetDevice(1)" in probe["error"]
    assert probe["devices"]["count"] == 3
    assert [(d["id"], d["family"]) for d in probe["devices"]["list"]] == [(0, "atlas-a2")]
    assert any("SIGSEGV" in p["what"] and "npu-smi" in p["fix"] for p in stopping(doc))


def test_a_hang_in_cann_is_cut_at_the_timeout(crashing_runtime):
    code, doc, _ = run_doctor("--no-smoke", "--timeout", "8", "--backend-opt", f"lib_dir={crashing_runtime}",
                              env=clean_env(STUB_HANG="1"), timeout=HANG_S)
    assert code == 1
    assert "did not finish within 8 s in aclrtSetDevice(0)" in doc["cann"]["probe"]["error"]


# -- the pieces ----------------------------------------------------------------------------------
def test_cann_version_from_the_files_cann_writes(tmp_path):
    t = tmp_path / "latest"
    (t / f"{platform.machine()}-linux").mkdir(parents=True)
    assert backends_cann.cann_version(str(t))["version"] is None
    unknown = backends_cann.cann_version(str(t))
    assert str(t / "version.cfg") in unknown["looked_in"]
    (t / "version.cfg").write_text("# version: 1.0\nruntime_running_version=[7.6.0.1.220:8.0.0]\n")
    assert backends_cann.cann_version(str(t))["version"] == "8.0.0"
    (t / f"{platform.machine()}-linux" / "ascend_toolkit_install.info").write_text(
        "package_name=Ascend-cann-toolkit\nversion=8.1.RC1\ninnerversion=V100R001C21SPC001B238\n")
    found = backends_cann.cann_version(str(t))
    assert found["version"] == "8.1.RC1" and found["source"].endswith("ascend_toolkit_install.info")


def test_toolkit_named_by_lib_dir_or_the_variables(tmp_path):
    lib64 = tmp_path / "latest" / "lib64"
    lib64.mkdir(parents=True)
    t = backends_cann.toolkit_of(str(lib64), {})
    assert t["path"] == str(tmp_path / "latest") and t["from"] == "lib_dir" and t["exists"]
    t = backends_cann.toolkit_of(None, {"ASCEND_OPP_PATH": str(tmp_path / "latest" / "opp")})
    assert t["path"] == str(tmp_path / "latest") and t["from"] == "$ASCEND_OPP_PATH/.."
    t = backends_cann.toolkit_of(None, {"ASCEND_HOME_PATH": "/nowhere", "ASCEND_OPP_PATH": str(tmp_path)})
    assert t["path"] == "/nowhere" and not t["exists"]


def test_an_installed_toolkit_nothing_names_gets_its_own_set_env(tmp_path, monkeypatch):
    """CANN installed at a default place, the shell never sourced it: the fix names that set_env.sh."""
    (tmp_path / "ascend-toolkit" / "latest").mkdir(parents=True)
    (tmp_path / "ascend-toolkit" / "set_env.sh").write_text("# CANN's\n")
    monkeypatch.setattr(backends_cann, "DEFAULT_TOOLKITS", (str(tmp_path / "ascend-toolkit" / "latest"),))
    monkeypatch.setattr(backends_cann, "INSTALL_RECORDS", ())
    toolkit = backends_cann.toolkit_of(None, {})
    assert toolkit["path"] is None and toolkit["installed"][0]["path"] == str(tmp_path / "ascend-toolkit" / "latest")
    probe = {"libraries": {"libascendcl.so": {"name": "libascendcl.so", "found": False,
                                              "error": "CANN library libascendcl.so not found; looked in ..."}},
             "dirs": [], "loader": True, "symbols": {}, "operators": [], "error": None}
    report = cli_doctor_env.Report("aclnn", {})
    assert cli_doctor_diagnose._cann_problems(report, probe, toolkit) is False
    [p] = report.problems
    assert "nothing in the environment names it" in p.what
    assert p.fix.startswith(f"source {tmp_path / 'ascend-toolkit' / 'set_env.sh'};")


def test_every_operator_has_a_smoke_case_on_every_family():
    cases, _ = load_cases([data_root() / "cases"])
    for name in ops.OPERATORS:
        for product in PRODUCTS:
            c = cli_doctor_smoke.smoke_case(cases, name, [product])
            if "float32" not in ops.get(name).product_dtypes.get(product, ()):
                # not served there, or no dtype accepted (KlDivBackward on atlas-200i-500-a2,
                # KlDivTargetBackward on the 910 and 310P families): no numbers case to smoke (the
                # doctor reports it skipped, with the reason); a family that lists dtypes has float32
                assert c is None and not ops.get(name).product_dtypes.get(product), (name, product)
                continue
            assert c is not None, (name, product)
            assert c.op == name and c.product == product and c.expect == NUMBERS and golden.is_stored(c)
            assert c.out_dtype == "float32" and c.layout == "contiguous" and 0 < c.elements <= cli_doctor_smoke.SMOKE_LIMIT


def test_no_smoke_still_starts_the_selected_backend():
    """--no-smoke only looks, but a backend that cannot even be made is not "can run"."""
    code, doc, _ = run_doctor("--no-smoke", "--backend", "no_such_backend_here")
    assert code == 1 and doc["smoke"][0]["cases"] == [] and not doc["smoke"][0]["started"]
    assert doc["verdict"].startswith("backend no_such_backend_here cannot run here: the backend did not start: "
                                     "unknown backend 'no_such_backend_here'")
    assert any("pip install" in p["fix"] for p in stopping(doc))


def test_a_malformed_backend_opt_is_exit_2(capsys):
    assert cli.main(["doctor", "--backend-opt", "no-equals-sign"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_a_smoke_reproducer_quotes_backend_options_for_the_shell() -> None:
    row = cli_doctor_smoke._row("aclnn", "aclnn", {"lib_dir": "/opt/my libs", "product": "atlas-a2"})
    case = {"op": "X", "case": "X-float32-atlas-a2-1"}
    got = cli_doctor_diagnose._reproducer(row, case)
    assert got == ("pytest 'suite/conformance/test_numerics.py::test_results[X-float32-atlas-a2-1]' --backend aclnn"
                   " --backend-opt 'lib_dir=/opt/my libs' --backend-opt product=atlas-a2 -rs"), got


def test_the_probes_timeout_does_not_count_pythons_start_up(tmp_path, monkeypatch):
    """Issue 42 item 16: --timeout is for a hang in CANN. A probe whose Python takes longer than the
    timeout to start (a loaded machine) is not cut as a hang: the timeout counts from its first line."""
    from suite.cli import doctor_probe
    slow = tmp_path / "slow-python"
    slow.write_text(f"#!/bin/sh\nsleep 3\nexec {sys.executable} \"$@\"\n")
    slow.chmod(0o755)
    monkeypatch.setattr(doctor_probe.sys, "executable", str(slow))
    result = doctor_probe.probe_cann(str(tmp_path / "no-cann-here"), timeout=1.5)
    assert result["error"] is None and result["seconds"] >= 3, result


def _no_bwrap_path() -> str:
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and not (Path(p) / "bwrap").exists())


def test_doctor_says_which_mount_namespace_wall_a_run_would_have_and_why_not():
    """The `namespace` protection (suite/run/namespace.py): bubblewrap's version and what it hides
    where bwrap works here; where it is missing, 'not available: no bwrap on PATH' (the run then has
    Landlock alone)."""
    from tests.test_namespace_wall import WHY_NOT
    _, doc, _ = run_doctor("--no-smoke")
    words = doc["environment"]["protections"]["namespace"]
    assert words.startswith("bubblewrap ") if not WHY_NOT else words.startswith("not available: "), words
    _, doc, _ = run_doctor("--no-smoke", env=clean_env(PATH=_no_bwrap_path()))
    assert doc["environment"]["protections"]["namespace"] == "not available: no bwrap on PATH"
    _, text, _ = run_doctor("--no-smoke", env=clean_env(PATH=_no_bwrap_path()), as_json=False)
    assert "  namespace       not available: no bwrap on PATH" in text, text[:3000]
