"""`aclnn-conform doctor`: the first command on a new machine. Can the suite run here, against what?

Why a command of its own: a wrong environment shows up in pytest as thousands of skipped cases with
one reason repeated, or as a session that dies in a native library. The doctor says it once, in
order: the Python packages, the CANN toolkit (path, version, each library, each operator's two
symbols), the devices and the product family each one is held to, the dtypes the suite will run
there; then it runs one small case per operator through every backend that loads, exactly as pytest
runs it (the backend in a process of its own, the result judged against the committed golden).
Every problem comes with what is missing, where it was looked for, and the command that fixes it.

Why the CANN probing runs in a child process (a `python -c` with a timeout): a native library that
crashes or hangs in aclInit or aclrtSetDevice would otherwise take the doctor with it, and the one
report that should explain the machine would never print. In a child, a crash or a hang costs one
line naming the call it happened in.

Exit codes: 0, the selected backend can run here (its smoke cases passed; with --no-smoke, it
starts and nothing found stops it); 1, it cannot (what is missing is named) or a smoke case failed or was skipped;
2, the command line is wrong (a --backend-opt that is not KEY=VALUE).

Nothing here names an operator: the operators are the registry's (`suite.ops.OPERATORS`), and each
smoke case is chosen from the case files by the same rule for all of them.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from suite import cases as casefiles
from suite import confine, golden, ops, soc
from suite.backend import BackendError, parse_opts
from suite.backends import _aclnn_lib as lib
from suite.cases import Case, Kind
from suite.contract import PRODUCTS
from suite.home import CHECKOUT, HOME_ENV, data_root

# -- what is looked at -------------------------------------------------------------------------
# Distributions whose versions are reported (importlib.metadata: nothing is imported for a version).
PACKAGES = ("numpy", "ml_dtypes", "pyyaml", "pytest", "pytest-xdist", "torch", "torch_npu", "hypothesis")
# What each missing package costs, and the command that installs it.
PACKAGE_FIXES = {
    "numpy": ("the suite cannot run", "pip install -e ."),
    "ml_dtypes": ("the suite cannot run", "pip install -e ."),
    "pyyaml": ("the suite cannot read its case files", "pip install -e ."),
    "pytest": ("the suite cannot run", "pip install -e ."),
    "pytest-xdist": ("`pytest -n N` is unavailable", "pip install -e ."),
    "torch": ("the torch backend cannot run", "pip install torch   (or: pip install -e '.[torch]')"),
    "hypothesis": ("the project's own tests (tests/test_fuzz.py) cannot run", "pip install -e '.[test]'"),
}
TOOLKIT_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
# Where CANN installs by default when no variable names it (CANN's install guide, "File Paths":
# root installs under /usr/local/Ascend, others under $HOME/Ascend; 8.0 names the toolkit
# ascend-toolkit/latest, 8.5 names it cann), and the files that record a custom install path
# (Install_Path=...). Sources: hiascend.com/document/detail/en/canncommercial/800/softwareinst/instg/
# instg_0044.html and .../canncommercial/850/softwareinst/instg/instg_0044.html.
DEFAULT_TOOLKITS = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann",
                    "~/Ascend/ascend-toolkit/latest", "~/Ascend/cann")
INSTALL_RECORDS = ("/etc/Ascend/ascend_cann_install.info", "~/Ascend/ascend_cann_install.info")
DEFAULT_SET_ENV = "/usr/local/Ascend/ascend-toolkit/set_env.sh"
ACL_ERROR_REPEAT_INITIALIZE = 100002
SMOKE_LIMIT = 4096          # the most elements (inputs and broadcast shape) a smoke case may have
SMOKE_DTYPE = "float32"
EMULATOR_LABEL = "aclnn (host emulator: proves the marshalling, not the kernels)"
NUMBERS_TEST = "suite/conformance/test_numerics.py::test_results"   # the pytest node a case runs as


# -- the report --------------------------------------------------------------------------------
@dataclass
class Problem:
    """One thing wrong: what, where it was looked for (in `what`), the command that fixes it, and
    the backends it stops (empty: a warning, the selected backend can still run)."""
    what: str
    fix: str
    stops: Tuple[str, ...] = ()

    def as_dict(self) -> Dict[str, Any]:
        return {"what": self.what, "fix": self.fix, "stops": list(self.stops)}


@dataclass
class Report:
    """Everything the doctor found, as plain values (the --json document is `as_dict()`)."""
    backend: str
    opts: Dict[str, str]
    environment: Dict[str, Any] = field(default_factory=dict)
    cann: Dict[str, Any] = field(default_factory=dict)
    families: Dict[str, Any] = field(default_factory=dict)
    smoke: List[Dict[str, Any]] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    verdict: str = ""
    exit_code: int = 1

    def as_dict(self) -> Dict[str, Any]:
        return {"backend": self.backend, "backend_opts": self.opts, "environment": self.environment,
                "cann": self.cann, "families": self.families, "smoke": self.smoke,
                "problems": [p.as_dict() for p in self.problems], "notes": self.notes,
                "verdict": self.verdict, "exit_code": self.exit_code}


# -- environment ---------------------------------------------------------------------------------
def package_versions() -> Dict[str, Optional[str]]:
    """Installed versions from the distributions' metadata: importing torch only to read its version
    would cost seconds and could fail for reasons that are not the doctor's to report."""
    out: Dict[str, Optional[str]] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def environment() -> Dict[str, Any]:
    """Python, where the suite and its data are, and the packages: the first lines of a bug report."""
    import suite
    return {"python": platform.python_version(), "executable": sys.executable,
            "platform": f"{platform.system()} {platform.machine()}",
            "suite": getattr(suite, "__version__", "?"), "suite_at": str(Path(suite.__file__).parent),
            "data": str(data_root()), "data_from": f"${HOME_ENV}" if os.environ.get(HOME_ENV) else "this checkout",
            "packages": package_versions(), "protections": confine.in_force()}


# -- the CANN toolkit on disk --------------------------------------------------------------------
def _expand(path: str) -> Path:
    return Path(os.path.expanduser(path))


def recorded_installs() -> List[Tuple[Path, str]]:
    """Install paths CANN's installer recorded (Install_Path=<dir>, the folder holding the toolkit)."""
    found = []
    for record in INSTALL_RECORDS:
        p = _expand(record)
        for key, value in _key_values(p).items():
            if key.lower() == "install_path" and value:
                for sub in ("ascend-toolkit/latest", "cann"):
                    found.append((Path(value) / sub, f"{p} (Install_Path)"))
    return found


def toolkit_of(lib_dir: Optional[str], environ: Mapping[str, str]) -> Dict[str, Any]:
    """The toolkit folder the backend will use, and what named it: lib_dir (its lib64/ and arch
    folder stripped), else the variables set_env.sh exports, else nothing. `installed` lists the
    default and recorded install places that exist, named by nothing in the environment."""
    named: Optional[Path] = None
    why = ""
    if lib_dir:
        p = Path(lib_dir).expanduser().resolve()
        if p.name == "lib64":
            p = p.parent
        if p.name.endswith("-linux"):
            p = p.parent
        named, why = p, "lib_dir"
    else:
        for var in TOOLKIT_VARS:
            if environ.get(var):
                named, why = Path(environ[var]), f"${var}"
                break
        if named is None and environ.get("ASCEND_OPP_PATH"):
            named, why = Path(os.path.normpath(environ["ASCEND_OPP_PATH"])).parent, "$ASCEND_OPP_PATH/.."
    places = [(_expand(d), "") for d in DEFAULT_TOOLKITS] + recorded_installs()
    installed = [{"path": str(p), "why": w or "a default install path"} for p, w in places if p.is_dir()]
    return {"path": None if named is None else str(named), "from": why,
            "exists": named is not None and named.is_dir(), "installed": installed,
            "looked_in": [f"{p} ({w})" if w else str(p) for p, w in places],
            "variables": {v: environ.get(v) for v in (*TOOLKIT_VARS, "ASCEND_OPP_PATH")}}


def _key_values(path: Path) -> Dict[str, str]:
    """KEY=VALUE lines of a small text file ({} when it is absent or unreadable)."""
    out: Dict[str, str] = {}
    try:
        text = path.read_text(errors="replace")[:65536]
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out


def _bracketed_version(value: str) -> str:
    """version.cfg's `[<inner version>:<CANN version>]` -> the CANN version (the part after ':')."""
    inner = value.strip().strip("[]").split("],[")[0]
    return inner.rpartition(":")[2] or inner


def cann_version(toolkit: Optional[str]) -> Dict[str, Any]:
    """The toolkit's version, read from the files CANN writes at install:
      - <toolkit>/<arch>-linux/ascend_toolkit_install.info, `version=8.0.0` (CANN's install guide,
        "File Paths", 8.0.0: ascend-toolkit/latest/<arch>-linux/, 8.5.0: cann/<arch>-linux/;
        hiascend.com/document/detail/en/canncommercial/{800,850}/softwareinst/instg/instg_0044.html;
        its lines are package_name=, version=, innerversion=, arch=, os=, path=);
      - <toolkit>/version.cfg, `toolkit_running_version=[7.6.0.1.220:8.0.0]` (and runtime_...; the
        CANN version follows the ':'), as toolkits write it at their root (a CANN 6.0.1 one is quoted
        in github.com/Ascend/samples/issues/11: `runtime_running_version=[1.84.15.1.310:6.0.1]`);
      - <toolkit>/runtime/version.info, `Version=...` (the runtime component's own version).
    The first found wins; "unknown" lists every place looked in."""
    if not toolkit:
        return {"version": None, "source": None, "looked_in": []}
    t = Path(toolkit)
    arch = f"{platform.machine()}-linux"
    infos = [t / arch / "ascend_toolkit_install.info", *sorted(t.glob("*-linux/ascend_toolkit_install.info")),
             t / "ascend_toolkit_install.info"]
    candidates: List[Tuple[Path, Callable[[Dict[str, str]], Optional[str]]]] = []
    seen = set()
    for p in infos:
        if p not in seen:
            seen.add(p)
            candidates.append((p, lambda kv: kv.get("version")))
    candidates.append((t / "version.cfg", lambda kv: next(
        (_bracketed_version(kv[k]) for k in ("toolkit_running_version", "runtime_running_version") if kv.get(k)),
        None)))
    candidates.append((t / "runtime" / "version.info", lambda kv: kv.get("Version") or kv.get("version")))
    looked = []
    for path, read in candidates:
        looked.append(str(path))
        if path.is_file():
            value = read(_key_values(path))
            if value:
                return {"version": value, "source": str(path), "looked_in": looked}
    return {"version": None, "source": None, "looked_in": looked}


def set_env_script(toolkit: Optional[str]) -> Optional[Path]:
    """The set_env.sh that exports this toolkit's variables (in it, or in its parent: ascend-toolkit/
    set_env.sh serves ascend-toolkit/latest)."""
    if not toolkit:
        return None
    for d in (Path(toolkit), Path(toolkit).parent):
        if (d / "set_env.sh").is_file():
            return d / "set_env.sh"
    return None


# -- the CANN probe, in a child process ----------------------------------------------------------
def _loaded_path(name: str) -> Optional[str]:
    """Where the dynamic loader found `name` (Linux: this process's memory map)."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split(None, 5)[-1].strip() if line.count(" ") >= 5 else ""
                if path.endswith("/" + name):
                    return path
    except OSError:
        pass
    return None


def _probe_child(argv: Sequence[str]) -> None:
    """The probe's body, in its own process. It writes one JSON line per finding on the original
    stdout; before each native call that may crash or hang it writes what it is about to do, so the
    parent can name the call the child died in. The native libraries' own stdout goes to stderr."""
    args = json.loads(argv[0])
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def emit(kind: str, **fields: Any) -> None:
        proto.write(json.dumps({"kind": kind, **fields}) + "\n")
        proto.flush()

    lib_dir = args.get("lib_dir")
    dirs = lib.search_dirs(lib_dir, os.environ)
    loader = not lib_dir
    emit("dirs", dirs=[f"{d} ({why})" for d, why in dirs], loader=loader)
    handles: Dict[str, Any] = {}
    for name in (lib.RUNTIME_LIB, lib.TENSOR_LIB, *lib.OP_LIBS):
        emit("doing", what=f"loading {name}")
        try:
            located = lib.load_one(name, dirs, loader)
        except lib.LibraryError as e:
            emit("library", name=name, found=False, error=str(e))
            continue
        handles[name] = located.handle
        emit("library", name=name, found=True, path=located.path or _loaded_path(name),
             via="loader" if located.path is None else "search")
    runtime = handles.get(lib.RUNTIME_LIB)
    if runtime is not None:
        wanted = [*lib.RUNTIME_SYMBOLS, "aclrtGetDeviceCount"]
        emit("symbols", library=lib.RUNTIME_LIB, missing=[s for s in wanted if not hasattr(runtime, s)],
             emulator=hasattr(runtime, "aclemu_soc"))
    if lib.TENSOR_LIB in handles:
        emit("symbols", library=lib.TENSOR_LIB,
             missing=[s for s in lib.TENSOR_SYMBOLS if not hasattr(handles[lib.TENSOR_LIB], s)])
    op_libs = [(n, handles[n]) for n in lib.OP_LIBS if n in handles]
    for name in ops.OPERATORS:
        # The backend's naming of an operator's two entry points (suite/backends/_aclnn_lib.py).
        symbols = [f"aclnn{name}GetWorkspaceSize", f"aclnn{name}"]
        where = next((n for n, h in op_libs if all(hasattr(h, s) for s in symbols)), None)
        emit("operator", op=name, symbols=symbols, library=where, searched=[n for n, _ in op_libs])
    if runtime is None or any(not hasattr(runtime, s) for s in
                              ("aclInit", "aclrtGetDeviceCount", "aclrtSetDevice", "aclrtGetSocName", "aclrtResetDevice")):
        emit("done")
        return
    _probe_devices(runtime, emit)
    emit("done")


def _probe_devices(runtime: Any, emit: Callable[..., None]) -> None:
    """aclInit, aclrtGetDeviceCount, then per device aclrtSetDevice, aclrtGetSocName, aclrtResetDevice."""
    runtime.aclInit.restype, runtime.aclInit.argtypes = ctypes.c_int, [ctypes.c_char_p]
    runtime.aclrtGetDeviceCount.restype = ctypes.c_int
    runtime.aclrtGetDeviceCount.argtypes = [ctypes.POINTER(ctypes.c_uint32)]
    runtime.aclrtSetDevice.restype, runtime.aclrtSetDevice.argtypes = ctypes.c_int, [ctypes.c_int32]
    runtime.aclrtResetDevice.restype, runtime.aclrtResetDevice.argtypes = ctypes.c_int, [ctypes.c_int32]
    runtime.aclrtGetSocName.restype, runtime.aclrtGetSocName.argtypes = ctypes.c_char_p, []

    def last_error() -> str:
        fn = getattr(runtime, "aclGetRecentErrMsg", None)
        if fn is None:
            return ""
        fn.restype, fn.argtypes = ctypes.c_char_p, []
        msg = fn()
        return f": {msg.decode(errors='replace')}" if msg else ""

    emit("doing", what="aclInit(NULL)")
    rc = runtime.aclInit(None)
    if rc not in (0, ACL_ERROR_REPEAT_INITIALIZE):
        emit("devices", error=f"aclInit failed with aclError {rc}{last_error()}")
        return
    owns = rc == 0
    emit("doing", what="aclrtGetDeviceCount")
    count = ctypes.c_uint32(0)
    rc = runtime.aclrtGetDeviceCount(ctypes.byref(count))
    if rc:
        emit("devices", error=f"aclrtGetDeviceCount failed with aclError {rc}{last_error()}")
    else:
        emit("devices", count=int(count.value))
        for i in range(int(count.value)):
            emit("doing", what=f"aclrtSetDevice({i})")
            rc = runtime.aclrtSetDevice(i)
            if rc:
                emit("device", id=i, error=f"aclrtSetDevice({i}) failed with aclError {rc}{last_error()}")
                continue
            emit("doing", what=f"aclrtGetSocName() on device {i}")
            name = runtime.aclrtGetSocName()
            emit("doing", what=f"aclrtResetDevice({i})")
            reset = runtime.aclrtResetDevice(i)
            emit("device", id=i, soc=None if name is None else name.decode(errors="replace"),
                 reset_error=f"aclrtResetDevice({i}) failed with aclError {reset}" if reset else None)
    if owns and hasattr(runtime, "aclFinalize"):
        emit("doing", what="aclFinalize")
        runtime.aclFinalize.restype, runtime.aclFinalize.argtypes = ctypes.c_int, []
        runtime.aclFinalize()


def _exit_words(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def probe_cann(lib_dir: Optional[str], timeout: float) -> Dict[str, Any]:
    """Run the probe in a child and gather its lines. A crash, an exit or a hang becomes `error`,
    naming the call it happened in; what the child found before it stays in the result."""
    root = str(CHECKOUT)
    code = (f"import sys; sys.path.insert(0, {root!r}); from suite.doctor import _probe_child; "
            f"_probe_child(sys.argv[1:])")
    cmd = [sys.executable, "-c", code, json.dumps({"lib_dir": lib_dir})]
    result: Dict[str, Any] = {"libraries": {}, "symbols": {}, "operators": [], "devices": None,
                              "device_error": None, "emulator": False, "dirs": [], "loader": not lib_dir,
                              "error": None}
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        out, err, rc, hung = proc.stdout, proc.stderr, proc.returncode, False
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        rc, hung = None, True
    result["seconds"] = round(time.perf_counter() - start, 3)
    doing, done = None, False
    for line in out.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        kind = item.pop("kind", None)
        if kind == "doing":
            doing = item["what"]
            continue
        doing = None
        if kind == "dirs":
            result["dirs"], result["loader"] = item["dirs"], item["loader"]
        elif kind == "library":
            result["libraries"][item["name"]] = item
        elif kind == "symbols":
            result["symbols"][item["library"]] = item["missing"]
            result["emulator"] = result["emulator"] or bool(item.get("emulator"))
        elif kind == "operator":
            result["operators"].append(item)
        elif kind == "devices":
            if "error" in item:
                result["device_error"] = item["error"]
            else:
                result["devices"] = {"count": item["count"], "list": []}
        elif kind == "device" and result["devices"] is not None:
            result["devices"]["list"].append(item)
        elif kind == "done":
            done = True
    if not done:
        where = f" in {doing}" if doing else ""
        how = f"did not finish within {timeout:g} s" if hung else _exit_words(rc if rc is not None else 0)
        tail = " | ".join(err.strip().splitlines()[-3:])
        result["error"] = f"the CANN probe (a child process) {how}{where}" + (f"; its last words: {tail}" if tail else "")
    return result


# -- families and dtypes -------------------------------------------------------------------------
def dtypes_by_family() -> Dict[str, List[Dict[str, Any]]]:
    """family -> [{dtypes, operators}]: the operators grouped by the dtypes they take there."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for family in PRODUCTS:
        groups: Dict[Tuple[str, ...], List[str]] = {}
        for name, op in ops.OPERATORS.items():
            groups.setdefault(tuple(sorted(op.product_dtypes.get(family, ()))), []).append(name)
        out[family] = [{"dtypes": list(d), "operators": names} for d, names in groups.items()]
    return out


def case_counts(cases: Sequence[Case]) -> Dict[str, int]:
    """Cases per family in the default run (the huge tier left out)."""
    counts = {p: 0 for p in PRODUCTS}
    for c in cases:
        if c.tier != "huge" and c.product in counts:
            counts[c.product] += 1
    return counts


# -- smoke cases ---------------------------------------------------------------------------------
def smoke_case(cases: Sequence[Case], op_name: str, products: Sequence[str]) -> Optional[Case]:
    """The operator's smoke case: a numbers case with a committed golden, float32 throughout, a
    contiguous layout, non-empty and small, for the first product (in the backend's order) that has
    one. Among those, the first in the case files that has an out of two or more elements, every
    input present and the operator's first value set: an ordinary call, nothing a backend may
    legitimately skip."""
    op = ops.get(op_name)
    first_values = next(iter(op.value_sets), None)
    for product in products:
        fit = [c for c in cases
               if c.op == op_name and c.product == product and c.expect == casefiles.NUMBERS
               and c.tier == "default" and golden.is_stored(c) and c.layout == "contiguous"
               and c.out_dtype == SMOKE_DTYPE and c.out_shape is not None
               and all(d in (None, SMOKE_DTYPE) for d in c.dtypes.values())
               and 0 < c.elements <= SMOKE_LIMIT]
        if fit:
            def plain(c: Case) -> Tuple[int, int, int]:
                size = 1
                for n in c.out_shape or ():
                    size *= n
                return (size < 2, any(s is None for s in c.shapes.values()), c.values != first_values)
            return min(fit, key=plain)
    return None


@dataclass
class Suite:
    """The suite's own data: cases, goldens and the tolerance table (None where it cannot load)."""
    cases: List[Case]
    golden_dir: Path
    table: Any
    error: Optional[str] = None


def load_suite() -> Suite:
    from suite.tolerance import load_table
    from suite.yamlfile import FileError
    root = data_root()
    try:
        cs, _ = casefiles.load_cases([root / "cases"])
        table = load_table(root / "cases" / casefiles.TOLERANCE_FILE)
    except (FileError, OSError) as e:
        return Suite([], root / "golden", None, str(e))
    return Suite(cs, root / "golden", table)


def run_smoke(spec: str, opts: Dict[str, str], label: str, data: Suite, timeout: float,
              emulator: bool = False, substitute: bool = False, with_cases: bool = True) -> Dict[str, Any]:
    """One smoke case per operator through `spec`, by the suite's own machinery: the backend in a
    process of its own (suite.host.Hosted), each case judged by suite.runner.Runner as the pytest
    plugin judges it. Each row: operator, case id, passed/failed/skipped, the one-line why, seconds.
    Without cases (--no-smoke), the backend is only started and closed: can it be made at all?"""
    from suite.golden import GoldenStore
    from suite.host import Hosted
    from suite.runner import CaseFailure, CaseSkip, Runner
    row = _row(spec, label, opts, emulator, substitute)
    host = Hosted(spec, opts, timeout=timeout, restarts=len(ops.OPERATORS))
    start = time.perf_counter()
    try:
        info = host.start()
    except BackendError as e:
        row["why"] = str(e)
        host.close()
        return row
    row.update(started=True, start_seconds=round(time.perf_counter() - start, 3), products=list(info.products))
    if not with_cases:
        row["incident"] = host.close()
        return row
    replay = f" --backend {shlex.quote(spec)}{_backend_opts(opts)}"
    runner = Runner(host, info, GoldenStore(data.golden_dir), data.table, replay=replay)
    try:
        for name in ops.OPERATORS:
            case = smoke_case(data.cases, name, info.products)
            if case is None:
                row["cases"].append({"op": name, "case": None, "outcome": "skipped", "seconds": 0.0,
                                     "why": f"no small {SMOKE_DTYPE} numbers case with a committed golden "
                                            f"for {', '.join(info.products)}"})
                continue
            t = time.perf_counter()
            outcome, why, reproduce = "passed", "", None
            try:
                runner.check(Kind.NUMBERS, case, f"{NUMBERS_TEST}[{case.id}]")
            except CaseSkip as e:
                outcome, why = "skipped", e.reason
            except CaseFailure as e:
                prefix = f"{case.id}: "
                outcome, reproduce = "failed", e.reproduce
                why = e.summary[len(prefix):] if e.summary.startswith(prefix) else e.summary
            except Exception as e:  # the doctor reports; it never dies of a backend
                outcome, why = "failed", f"{type(e).__name__}: {e}"
            row["cases"].append({"op": name, "case": case.id, "outcome": outcome, "why": why,
                                 "seconds": round(time.perf_counter() - t, 4), "reproduce": reproduce})
    finally:
        incident = host.close()
    if incident:
        row["incident"] = incident
    return row


def _row(spec: str, label: str, opts: Dict[str, str], emulator: bool = False, substitute: bool = False,
         why: Optional[str] = None) -> Dict[str, Any]:
    """A smoke row before anything ran. `emulator`: the libraries are the host emulator; `substitute`:
    the doctor built it because CANN is absent (it stands in for aclnn, it never decides the verdict)."""
    return {"backend": spec, "label": label, "emulator": emulator, "substitute": substitute, "opts": dict(opts),
            "started": False, "why": why, "products": [], "cases": []}


def passed(row: Dict[str, Any]) -> bool:
    return bool(row["started"] and row["cases"] and all(c["outcome"] == "passed" for c in row["cases"]))


# -- the host emulator ---------------------------------------------------------------------------
EMULATOR_BUILD = CHECKOUT / "tests" / "emulator" / "build.py"


def emulator_builder() -> Tuple[Optional[Any], str]:
    """tests/emulator/build.py as a module (loaded by path: `tests` is a checkout's folder, not an
    installed package), or None and why not."""
    if not EMULATOR_BUILD.is_file():
        return None, f"its sources are not here ({EMULATOR_BUILD.parent} is part of a repository checkout)"
    spec = importlib.util.spec_from_file_location("_aclnn_conformance_emulator_build", EMULATOR_BUILD)
    if spec is None or spec.loader is None:
        return None, f"cannot load {EMULATOR_BUILD}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module            # (its dataclasses look their module up there)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        return None, f"{EMULATOR_BUILD} failed to load: {type(e).__name__}: {e}"
    if module.find_compiler() is None:
        return None, "no C compiler found (looked for $CC, cc, gcc, clang on PATH)"
    return module, ""


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
        report.smoke = _smoke_all(report, backend, opts, data, cann_ok, probe, timeout)
    elif not smoke and (backend != "aclnn" or cann_ok):
        report.smoke = [run_smoke(backend, opts, backend, data, timeout, backend == "aclnn" and probe["emulator"],
                                  with_cases=False)]
    _smoke_problems(report)
    _verdict(report, smoke)
    return report


def _smoke_all(report: Report, backend: str, opts: Dict[str, str], data: Suite, cann_ok: bool,
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
        rows.append(run_smoke("aclnn", opts if backend == "aclnn" else {}, label, data, timeout, probe["emulator"]))
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
    test = f"pytest '{NUMBERS_TEST}[{case['case']}]' --backend {shlex.quote(row['backend'])}"
    if row["substitute"]:                  # the doctor's emulator folder is gone: build one
        return f"python -m tests.emulator.build DIR && {test} --backend-opt lib_dir=DIR -rs"
    return case.get("reproduce") or test + _backend_opts(row["opts"]) + " -rs"


def _backend_opts(opts: Mapping[str, str]) -> str:
    """' --backend-opt K=V' per option, quoted for a shell as the plugin's reproducers are (a lib_dir
    may hold spaces)."""
    return "".join(f" --backend-opt {shlex.quote(f'{k}={v}')}" for k, v in opts.items())


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


# -- rendering -----------------------------------------------------------------------------------
def render(report: Report) -> str:
    """The report as text: environment, CANN, devices, families, smoke cases, problems, verdict."""
    lines: List[str] = [f"aclnn-conform doctor (backend {report.backend}"
                        + "".join(f", {k}={v}" for k, v in report.opts.items()) + ")", ""]
    env = report.environment
    lines.append("Environment")
    lines.append(f"  {'python':<16}{env['python']} ({env['executable']}), {env['platform']}")
    lines.append(f"  {'suite':<16}{env['suite']} at {env['suite_at']}; data {env['data']} ({env['data_from']})")
    for name, version in env["packages"].items():
        lines.append(f"  {name:<16}{version or 'not installed'}")
    lines += ["", "Protections of a run (the backend's process: suite/confine.py, suite/reaper.py)"]
    for name, words in env.get("protections", {}).items():
        lines.append(f"  {name:<16}{words}")
    lines += ["", "CANN"]
    lines += _render_cann(report.cann)
    lines += ["", "Product families: the dtypes the suite runs on each (from the operators' declarations)"]
    fams = report.families
    here = _families_here(report)
    for family in PRODUCTS:
        groups = fams["dtypes"][family]
        text = "; ".join(f"{', '.join(g['dtypes'])}" + ("" if len(groups) == 1 else f" ({', '.join(g['operators'])})")
                         for g in groups)
        lines.append(f"  {family:<17}{text}; {fams['cases'].get(family, 0)} cases"
                     + (f"   <- {here[family]}" if family in here else ""))
    if report.smoke:
        lines += ["", "Smoke cases (one per operator; the backend in its own process, judged against the golden, "
                      "as pytest runs it)" if any(r["cases"] for r in report.smoke) else
                  "Backend (started and closed in its own process; --no-smoke: no case run)"]
        for row in report.smoke:
            lines += _render_smoke(row)
    if report.notes:
        lines += ["", "Notes"] + [f"  - {n}" for n in report.notes]
    stopping = [p for p in report.problems if stops(p, report.backend)]
    others = [p for p in report.problems if not stops(p, report.backend)]
    for title, problems in ((f"Problems: these stop backend {report.backend}", stopping),
                            (f"Other problems (they do not stop backend {report.backend})", others)):
        if problems:
            lines += ["", title]
            for i, p in enumerate(problems, 1):
                lines.append(f"  {i}. {p.what}")
                lines.append(f"     fix: {p.fix}")
    lines += ["", f"{report.verdict} (exit {report.exit_code})"]
    return "\n".join(lines)


def _families_here(report: Report) -> Dict[str, str]:
    """family -> what here runs it: the devices' families, else the selected backend's products."""
    here: Dict[str, List[str]] = {}
    devices = report.cann.get("probe", {}).get("devices") or {"list": []}
    held = [d for d in devices["list"] if d.get("family")]
    for ids, d in _id_runs(held, lambda d: (d["family"], d["soc"])):
        here.setdefault(d["family"], []).append(f"device{'s' if '-' in ids else ''} {ids} ({d['soc']})")
    if not devices["list"]:
        for row in report.smoke:
            if row["backend"] == report.backend and row["started"] and not row["substitute"]:
                for p in row["products"]:
                    here.setdefault(p, []).append(f"backend {row['backend']}")
    return {f: ", ".join(v) for f, v in here.items()}


def _id_runs(devices: List[Dict[str, Any]], key: Callable[[Dict[str, Any]], Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """Devices with consecutive ids and the same key, as one ("0-7", first device) each."""
    out: List[Tuple[str, Dict[str, Any]]] = []
    start = 0
    for i in range(1, len(devices) + 1):
        if (i == len(devices) or key(devices[i]) != key(devices[start])
                or devices[i]["id"] != devices[i - 1]["id"] + 1):
            a, b = devices[start]["id"], devices[i - 1]["id"]
            out.append((str(a) if a == b else f"{a}-{b}", devices[start]))
            start = i
    return out


def _render_cann(cann: Dict[str, Any]) -> List[str]:
    t, v, probe = cann["toolkit"], cann["version"], cann["probe"]
    out = []
    if t["path"]:
        out.append(f"  {'toolkit':<16}{t['path']} (from {t['from']})" + ("" if t["exists"] else ": does not exist"))
    else:
        installed = ", ".join(i["path"] for i in t["installed"])
        out.append(f"  {'toolkit':<16}not named (no lib_dir; ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME and "
                   f"ASCEND_OPP_PATH unset)" + (f"; but one is installed at {installed}" if installed else
                                                 f"; none installed at {', '.join(t['looked_in'])}"))
    if v["version"]:
        out.append(f"  {'version':<16}{v['version']} (from {v['source']})")
    else:
        out.append(f"  {'version':<16}unknown" + (f" (looked in {', '.join(v['looked_in'])})" if v["looked_in"]
                                                   else " (no toolkit folder to look in)"))
    for name in (lib.RUNTIME_LIB, lib.TENSOR_LIB, *lib.OP_LIBS):
        item = probe["libraries"].get(name)
        if item is None:
            out.append(f"  {name:<16}not looked for")
        elif item["found"]:
            out.append(f"  {name:<16}{item['path']}" + (" (by the dynamic loader)" if item.get("via") == "loader" else ""))
        elif _not_found(item):
            either = name in lib.OP_LIBS and any(probe["libraries"].get(n, {}).get("found") for n in lib.OP_LIBS)
            out.append(f"  {name:<16}not found" + (" (either operator library will do)" if either else ""))
        else:
            out.append(f"  {name:<16}{item['error']}")
    if probe["libraries"]:
        out.append(f"  {'searched':<16}{searched(probe)}")
    if probe["operators"] and any(probe["libraries"].get(n, {}).get("found") for n in lib.OP_LIBS):
        out.append(f"  {'operators':<16}aclnn<Op>GetWorkspaceSize and aclnn<Op>, each:")
        width = max(len(i["op"]) for i in probe["operators"])
        for item in probe["operators"]:
            state = (f"found in {item['library']}" if item["library"] else
                     f"MISSING (searched {', '.join(item['searched'])})")
            out.append(f"    {item['op']:<{width}}  {state}")
    else:
        out.append(f"  {'operators':<16}not checked (no operator library loaded)")
    devices = probe["devices"]
    if probe["error"]:
        out.append(f"  {'probe':<16}{probe['error']}")
    if probe["device_error"]:
        out.append(f"  {'devices':<16}{probe['device_error']}")
    elif devices is None:
        out.append(f"  {'devices':<16}not probed (no usable {lib.RUNTIME_LIB})")
    else:
        out.append(f"  {'devices':<16}{devices['count']} (aclrtGetDeviceCount)")
        for ids, d in _id_runs(devices["list"], _device_text):
            out.append(f"    device {ids}: {_device_text(d)}")
        probed = len(devices["list"])
        if probed < devices["count"]:
            ids = str(probed) if probed == devices["count"] - 1 else f"{probed}-{devices['count'] - 1}"
            out.append(f"    device {ids}: not probed (the probe stopped first)")
    return out


def _device_text(d: Dict[str, Any]) -> str:
    if d.get("error"):
        return d["error"]
    if d.get("family"):
        return f"SoC {d['soc']} -> {d['family']}"
    return f"SoC {d['soc']}: refused: {d.get('refused')}"


def _render_smoke(row: Dict[str, Any]) -> List[str]:
    shown = {} if row["substitute"] else row["opts"]       # (the emulator's temporary folder is gone)
    head = f"  {row['label']}" + "".join(f", {k}={v}" for k, v in shown.items())
    if not row["started"]:
        return [f"{head}: {row['why']}"]
    out = [f"{head}: stands for {', '.join(row['products'])}; started in {row['start_seconds']:.2f} s"]
    width = max((len(c["op"]) for c in row["cases"]), default=0)
    for c in row["cases"]:
        why = f": {c['why']}" if c["why"] else ""
        out.append(f"    {c['op']:<{width}}  {c['outcome']:<7} {c['seconds']:.3f} s  {c['case'] or '-'}{why}")
    if row.get("incident"):
        out.append(f"    (on close: {row['incident']})")
    return out


# -- the command ---------------------------------------------------------------------------------
@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[Any]:
    """For --json: everything anything writes on file descriptor 1 (a native library in a backend's
    process included) goes to stderr; the document goes to the real stdout, alone."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    real = os.fdopen(saved, "w")
    try:
        yield real
    finally:
        sys.stdout.flush()
        real.flush()
        os.dup2(saved, 1)
        real.close()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="aclnn", metavar="NAME",
                   help="the backend to check (reference, torch, aclnn, or package.module:attribute; default aclnn)")
    p.add_argument("--backend-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword option for that backend, as in pytest (repeatable), e.g. device=1, lib_dir=DIR")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document, nothing else on stdout")
    p.add_argument("--no-smoke", action="store_true", help="only look; run no smoke case")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="the CANN probe's limit, and each smoke call's (default %(default)g)")


def main(args: argparse.Namespace) -> int:
    """`aclnn-conform doctor`: 0 the selected backend can run here, 1 it cannot, 2 bad arguments."""
    try:
        opts = parse_opts(args.backend_opt)
    except BackendError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        with _stdout_to_stderr() as real:
            report = diagnose(args.backend, opts, not args.no_smoke, args.timeout)
            real.write(json.dumps(report.as_dict(), indent=2) + "\n")
        return report.exit_code
    report = diagnose(args.backend, opts, not args.no_smoke, args.timeout)
    print(render(report))
    return report.exit_code
