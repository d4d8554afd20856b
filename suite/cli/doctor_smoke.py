"""The doctor's smoke cases: one small case per operator, chosen from the case files by one rule,
run through a backend exactly as pytest runs it; and the host emulator's build."""
from __future__ import annotations

import importlib.util
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from suite.cases import model as cases_model
from suite.cases import load as cases_load
from suite import ops
from suite.golden import source as golden
from suite.run.backend import BackendError
from suite.cases.model import Case, Kind
from suite.common import dtypes
from suite.common.home import CHECKOUT, HOME_ENV, data_root


SMOKE_LIMIT = 4096          # the most elements (inputs and broadcast shape) a smoke case may have
SMOKE_DTYPE = "float32"
EMULATOR_LABEL = "aclnn (host emulator: proves the marshalling, not the kernels)"
NUMBERS_TEST = "suite/conformance/test_numerics.py::test_results"   # the pytest node a case runs as
# Its file where this package is (a checkout, or an installed copy's site-packages)
NUMBERS_FILE = Path(__file__).resolve().parents[1] / "conformance" / "test_numerics.py"


def numbers_test(case_id: str) -> str:
    """The smoke case's test as a command line started here names it (as a failure's reproducer
    does): its file relative to this folder where it lies below it, else by its absolute path."""
    try:
        where = str(NUMBERS_FILE.relative_to(Path.cwd().resolve()))
    except ValueError:
        where = str(NUMBERS_FILE)
    return f"{where}::test_results[{case_id}]"


# -- smoke cases ---------------------------------------------------------------------------------
def smoke_case(cases: Sequence[Case], op_name: str, products: Sequence[str]) -> Optional[Case]:
    """The operator's smoke case: a numbers case with a committed golden, float32 throughout (an
    index input in its integer dtype), a
    contiguous layout, non-empty and small, for the first product (in the backend's order) that has
    one. Among those, the first in the case files that has an out of two or more elements, every
    input present and the operator's first value set: an ordinary call, nothing a backend may
    legitimately skip."""
    op = ops.get(op_name)
    first_values = next(iter(op.value_sets), None)
    for product in products:
        fit = [c for c in cases
               if c.op == op_name and c.product == product and c.expect == cases_model.NUMBERS
               and c.tier == "default" and golden.is_stored(c) and c.layout == "contiguous"
               and c.out_dtype == SMOKE_DTYPE and c.out_shape is not None
               and all(d in (None, SMOKE_DTYPE) or dtypes.is_exact(d) for d in c.dtypes.values())
               and 0 < c.elements <= SMOKE_LIMIT]
        if fit:
            def plain(c: Case) -> Tuple[bool, bool, int, bool]:
                size = 1
                for n in c.out_shape or ():
                    size *= n
                # float32 throughout where the operator allows it (an integer operand only where it
                # must be one: a class-index target)
                exact = sum(1 for d in c.dtypes.values() if d is not None and dtypes.is_exact(d))
                return (size < 2, any(s is None for s in c.shapes.values()), exact, c.values != first_values)
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
    from suite.judge.table import load_table
    from suite.common.yamlfile import FileError
    root = data_root()
    try:
        cs, _ = cases_load.load_cases([root / "cases"])
        table = load_table(root / "cases" / cases_model.TOLERANCE_FILE)
    except (FileError, OSError) as e:
        return Suite([], root / "golden", None, str(e))
    return Suite(cs, root / "golden", table)


def run_smoke(spec: str, opts: Dict[str, str], label: str, data: Suite, timeout: float, *,
              emulator: bool = False, substitute: bool = False, with_cases: bool = True) -> Dict[str, Any]:
    """One smoke case per operator through `spec`, by the suite's own machinery: the backend in a
    process of its own (suite.run.host.Hosted), each case judged by suite.run.runner.Runner as the pytest
    plugin judges it. Each row: operator, case id, passed/failed/skipped, the one-line why, seconds.
    Without cases (--no-smoke), the backend is only started and closed: can it be made at all?"""
    from suite.golden.store import GoldenStore
    from suite.run.host import Hosted
    from suite.run.runner import CaseFailure, CaseSkip, Runner
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
    runner = Runner(host, info, GoldenStore(data.golden_dir), data.table, replay=replay,
                    invocation_dir=Path.cwd(), test_path=NUMBERS_FILE)
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
EMULATOR = Path("tests") / "emulator" / "build.py"


def emulator_build_script() -> Path:
    """tests/emulator/build.py of the data folder ($ACLNN_CONFORMANCE_HOME: a checkout an installed
    copy's user points at), else of the checkout this package sits in."""
    for root in (data_root(), CHECKOUT):
        if (root / EMULATOR).is_file():
            return root / EMULATOR
    return CHECKOUT / EMULATOR


def emulator_builder() -> Tuple[Optional[Any], str]:
    """tests/emulator/build.py as a module (loaded by path: `tests` is a checkout's folder, not an
    installed package), or None and why not."""
    script = emulator_build_script()
    if not script.is_file():
        where = " or ".join(sorted({str(r / EMULATOR.parent) for r in (data_root(), CHECKOUT)}))
        return None, (f"its sources are not here ({where}: part of a repository checkout; set "
                      f"${HOME_ENV} to one)")
    spec = importlib.util.spec_from_file_location("_aclnn_conformance_emulator_build", script)
    if spec is None or spec.loader is None:
        return None, f"cannot load {script}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module            # (its dataclasses look their module up there)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        return None, f"{script} failed to load: {type(e).__name__}: {e}"
    if module.find_compiler() is None:
        return None, "no C compiler found (looked for $CC, cc, gcc, clang on PATH)"
    return module, ""


def _backend_opts(opts: Mapping[str, str]) -> str:
    """' --backend-opt K=V' per option, quoted for a shell as the plugin's reproducers are (a lib_dir
    may hold spaces)."""
    return "".join(f" --backend-opt {shlex.quote(f'{k}={v}')}" for k, v in opts.items())
