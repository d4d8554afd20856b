"""A backend is untrusted code running as the user: these backends (tests/hostile.py) are broken
kernels that also try to hide it: by appending to the suite's code, rewriting golden/ or the golden
cache, forging results.json (from run(), then killing the run; or from a daemon after pytest has
exited), or stopping pytest. Each runs in a real pytest session, serially and with -n 2, in a
copy of the suite, its case files and goldens (no test can damage this checkout). For each: pytest
exits 1, the broken kernel's cases are failed in results.json, `report diff` against a clean
baseline exits 1, and what the backend attacked is unchanged."""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

from tests.reportkit import N2_HEAVY, ROOT
from tests.waiting import HANG_S

SLICE = ["--cases=cases/mse_loss_backward.yaml", "-p", "no:benchmark",
         "-k", "MseLossBackward-float32-atlas-a2 and 2x3.2x3.2x3-contiguous"]
TOTAL, MEAN = 8, "-mean-"
FAILED = 1              # the mean case's numbers (its determinism test passes: doubled twice alike)


def landlock_abi() -> int:
    """The kernel's Landlock ABI (0: none), asked directly, not through the suite."""
    if not sys.platform.startswith("linux"):
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return max(0, libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))


ABI = landlock_abi()
needs_writes = pytest.mark.skipif(ABI < 1, reason="no Landlock in this kernel: writes cannot be confined")
needs_signals = pytest.mark.skipif(ABI < 6, reason=f"Landlock ABI {ABI}: no signal scoping (needs 6, Linux 6.12)")
WORKERS = pytest.mark.parametrize("workers", [0, 2], ids=["serial", "n2"])


class Sandbox:
    """A copy of the suite (code, case files, goldens), a golden cache and a report folder."""

    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "checkout"
        self.root.mkdir()
        for name in ("pyproject.toml", "conftest.py", "README.md"):
            shutil.copy(ROOT / name, self.root / name)
        # With the checkout's bytecode caches (where it has them), which the runs here must not write:
        # a written cache would be a change to the tree (PYTHONDONTWRITEBYTECODE below).
        for name in ("suite", "cases", "golden"):
            shutil.copytree(ROOT / name, self.root / name)
        self.cache = tmp / "cache"
        (self.cache / "sub").mkdir(parents=True)
        (self.cache / "sub" / "entry.npz").write_bytes(b"a cached golden")
        self.reports = tmp / "reports"
        self.spy = tmp / "spy"
        self.spy.mkdir()
        # The run's temporary folder, which its backends may not write but for their own TMPDIR:
        # the test's own, so that the spy stays writable (in the system's it would not be); a short
        # path, as the Unix sockets made in it must be (108 bytes, under xdist's basetemp too)
        self.tmp = Path(tempfile.mkdtemp(prefix="aclnn-sandbox-"))

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self, target: Optional[Path] = None) -> Dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ACLNN_CONFORMANCE_HOME"))}
        env.update(PYTHONPATH=os.pathsep.join([str(self.root), str(ROOT)]), PYTHONDONTWRITEBYTECODE="1",
                   PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", HOSTILE_SPARE=str(os.getpid()), TMPDIR=str(self.tmp),
                   HOSTILE_SPY=str(self.spy), HOSTILE_TARGET=str(target or ""),
                   # behind the mount-namespace wall (suite/run/namespace.py) the test's folders under
                   # /tmp are hidden: the spy and the cache are bound back, so that Landlock is what
                   # these tests prove (a folder the backend cannot see, it cannot write either)
                   ACLNN_CONFORMANCE_BIND=os.pathsep.join([str(self.spy), str(self.cache)]))
        return env

    def args(self, backend: Optional[str], workers: int, reports: Optional[Path] = None, extra=(),
             quiet: bool = True) -> List[str]:
        return ([sys.executable, "-m", "pytest", "-p", "xdist.plugin", "-p", "no:cacheprovider",
                 *(["-q"] if quiet else []), *SLICE,
                 f"--golden-cache={self.cache}", f"--report-dir={reports or self.reports}", *extra]
                + (["--backend", f"tests.hostile:{backend}"] if backend else [])
                + (["-n", str(workers)] if workers else []))

    def popen(self, backend: Optional[str], workers: int, target: Optional[Path] = None, **kw) -> subprocess.Popen:
        return subprocess.Popen(self.args(backend, workers, **kw), cwd=self.root, env=self.env(target),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)

    def diff(self, base: Path) -> subprocess.CompletedProcess:
        # --trust-baseline: `base` lies in another test's folder, which the run did not protect
        # (tests/test_report_trust.py proves that refusal; here the gate's verdict is what counts)
        return subprocess.run([sys.executable, "-m", "suite.cli", "report", "diff", str(base),
                               str(self.reports / "results.json"), "--trust-baseline"], cwd=self.root, env=self.env(),
                              capture_output=True, text=True, timeout=HANG_S)

    def noted(self, name: str) -> List[str]:
        p = self.spy / name
        return p.read_text().split("\n")[:-1] if p.exists() else []


def finish(proc: subprocess.Popen, timeout: float) -> str:
    """The run's output; on overrunning `timeout`, its whole session is killed and the test fails."""
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the run did not finish within {timeout:g} s:\n{out[-2000:]}")


def digest(folder: Path) -> Dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    """results.json of the reference backend on the slice: the clean baseline of every diff."""
    box = Sandbox(tmp_path_factory.mktemp("baseline"))
    try:
        out = finish(box.popen(None, 0), 240)
    finally:
        box.close()
    assert "8 passed" in out, out[-2000:]
    return box.reports / "results.json"


@pytest.fixture
def box(tmp_path) -> Iterator[Sandbox]:
    box = Sandbox(tmp_path)
    yield box
    box.close()


def assert_caught(box: Sandbox, baseline: Path, out: str, returncode: int) -> dict:
    """Exit 1, the broken kernel's mean case (and only it) failed, and the gate says WORSE."""
    assert returncode == 1, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    doc = json.loads((box.reports / "results.json").read_text())
    failed = sorted(r["case"] for r in doc["records"] if r["outcome"] == "failed")
    assert len(failed) == FAILED and all(MEAN in c for c in failed), (failed, out[-2000:])
    assert doc["complete"] is True and doc["counts"]["passed"] == TOTAL - FAILED
    d = box.diff(baseline)
    assert d.returncode == 1 and "WORSE" in d.stdout, (d.stdout + d.stderr)[-2000:]
    return doc


WRITES = {"the suite's code": ("AppendToSuite", "suite"), "golden/": ("RewriteTree", "golden"),
          "the golden cache": ("RewriteTree", "cache")}


@needs_writes
@pytest.mark.parametrize("workers", N2_HEAVY)
@pytest.mark.parametrize("what", WRITES)
def test_a_backend_cannot_write_the_suite_its_goldens_or_the_cache(box, baseline, what, workers):
    backend, where = WRITES[what]
    target = box.cache if where == "cache" else box.root / where
    before = digest(target)
    proc = box.popen(backend, workers, target)
    out = finish(proc, HANG_S)
    assert digest(target) == before, f"the backend changed {target}"
    assert_caught(box, baseline, out, proc.returncode)
    refused = box.noted("refused")
    assert refused and "Permission" in refused[0], refused


@needs_writes
@needs_signals
@pytest.mark.parametrize("workers", N2_HEAVY)
def test_a_backend_cannot_forge_results_json_and_kill_the_run(box, baseline, workers):
    proc = box.popen("ForgeAndKill", workers, box.reports)
    out = finish(proc, HANG_S)
    assert_caught(box, baseline, out, proc.returncode)
    assert len(box.noted("refused")) >= 1


@needs_signals
@WORKERS
def test_a_backend_that_sigstops_its_parents_does_not_hang_the_run(box, baseline, workers):
    proc = box.popen("StopParents", workers, None, extra=("--case-timeout=20",))
    out = finish(proc, 120)
    assert_caught(box, baseline, out, proc.returncode)
    assert box.noted("stopped") == [], "a SIGSTOP reached a process outside the backend's"


def _daemon_dead(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reaping needs Linux's child subreaper")
@WORKERS
@pytest.mark.parametrize("confine", ["auto", "off"])
def test_no_daemon_of_the_backend_outlives_the_run_to_forge_its_reports(box, baseline, workers, confine):
    """The daemon waits until the run's processes are gone, then rewrites results.json. It must be
    dead before the reports are written: the file stays as the run left it, and the run's output
    pipe closes when pytest exits (the daemon held it)."""
    if confine == "auto" and ABI < 1:
        pytest.skip("no Landlock in this kernel")
    extra = ("-s",) + (("--confine=off",) if confine == "off" else ())      # -s: the daemon holds the pipe
    proc = box.popen("ForgingDaemon", workers, box.reports, extra=extra)
    out = finish(proc, HANG_S)
    left = (box.reports / "results.json").read_bytes()
    pids = [int(x) for x in box.noted("daemon")]
    assert pids, out[-2000:]
    time.sleep(2.0)                     # past the daemon's wait: it would have forged by now
    assert (box.reports / "results.json").read_bytes() == left
    assert all(_daemon_dead(p) for p in pids), f"daemon {pids} still alive"
    assert box.noted("forged") == []
    doc = assert_caught(box, baseline, out, proc.returncode)
    reproduce = [r["reproduce"] for r in doc["records"] if r["outcome"] == "failed"]
    assert all(("--confine off" in r) == (confine == "off") for r in reproduce), reproduce


COVER = ("the suite, its data, cache and reports; the interpreter, sys.path and PATH; the home folder's "
         "start-up files; the temporary folder but for the process's own TMPDIR")


@pytest.mark.parametrize("extra", [(), ("--confine=off",), ("--isolation=none",)], ids=["auto", "off", "none"])
def test_the_header_and_results_json_say_which_protections_the_run_had(box, extra):
    """Where Landlock or signal scoping is missing the run says 'not available: why' (and the tests
    that need them are skipped); it is reported, never an error."""
    proc = box.popen(None, 0, extra=extra, quiet=False)
    out = finish(proc, HANG_S)
    assert proc.returncode == 0, out[-2000:]
    doc = json.loads((box.reports / "results.json").read_text())
    got = doc["protections"]
    if extra == ("--isolation=none",):
        assert all(v.startswith("not available: --isolation none") for v in got.values()), got
    elif extra == ("--confine=off",):
        assert got["writes"] == got["signals"] == "off (--confine=off)"
    elif ABI >= 6:
        assert got["writes"] == f"landlock abi {ABI}: {COVER}" and got["signals"] == "landlock scope"
    elif ABI >= 1:
        assert got["writes"] == f"landlock abi {ABI}: {COVER}" and got["signals"].startswith("not available: ")
    else:
        assert got["writes"].startswith("not available: ") and got["signals"].startswith("not available: ")
    if sys.platform.startswith("linux") and extra != ("--isolation=none",):
        assert got["descendants"] == "subreaper" and got["launcher"] == "private socket pair, no listening socket"
        assert got["namespace"] == "off (--confine=off)" if extra else \
            got["namespace"].startswith(("bubblewrap ", "not available: ")), got
    header = "; protections: " + ", ".join(f"{k} {v}" for k, v in got.items())
    assert header in out, out[:2000]
