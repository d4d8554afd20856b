"""A cancelled CI job or an impatient Ctrl-C: one, two or ten SIGTERM/SIGINT at any moment, to
pytest (serially, or to xdist's controller) or to the whole process group (a terminal's Ctrl-C
reaches the workers too). The run is never `complete: true`, its journal survives with the
finished cases, the exit status is 2 (interrupted), there is no INTERNALERROR, and no process the
run started (launcher, resource tracker, backend process) outlives it by more than a few seconds."""
from __future__ import annotations

import os
import signal
import time

import pytest

from suite.report import journal
from suite.report import results
from tests.reportkit import ROOT, popen_suite, serial_and_n2
from tests.waiting import HANG_S

SLICE = ["--cases=" + str(ROOT / "cases" / "mse_loss_backward.yaml"), "-p", "no:benchmark",
         "-k", "MseLossBackward-float32-atlas-a2", "--backend", "tests.careless_backends:Slow"]
T, I = signal.SIGTERM, signal.SIGINT
SCHEDULES = {                   # (signal, seconds to wait after it)
    "one SIGTERM": [(T, 0)],
    "two SIGTERM 0.5 s apart": [(T, 0.5), (T, 0)],
    "ten SIGINT": [(I, 0.05)] * 10,
    "SIGINT then SIGTERM": [(I, 0.3), (T, 0)],
}


def _default_signals() -> None:
    """In the child: SIGINT and SIGTERM at the OS's default, whatever this test inherited (a shell
    starts a background job with SIGINT ignored, and the run rightly keeps an ignored signal
    ignored: under `nohup pytest ... &` every SIGINT test here failed with a complete run)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _popen(args):
    return popen_suite(args, start_new_session=True, preexec_fn=_default_signals)


def _journal_records(path) -> int:
    return max(0, len(path.read_text().splitlines()) - 1) if path.exists() else 0


def _left_in_group(pgid: int, grace: float = 15.0) -> list:
    """The processes still in the run's process group `grace` seconds after pytest exited (the
    launchers, resource trackers and backend processes it started): none may outlive it long."""
    end = time.monotonic() + grace
    while True:
        left = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if os.getpgid(int(d)) == pgid:
                        left.append((int(d), open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" ")[:120]))
                except (ProcessLookupError, PermissionError, FileNotFoundError):
                    pass
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.2)


def _interrupt(tmp_path, schedule, workers, group):
    d = tmp_path / "run"
    proc = _popen([*SLICE, f"--report-dir={d}"] + (["-n", str(workers)] if workers else []))
    end = time.monotonic() + HANG_S
    while _journal_records(d / journal.JOURNAL) < 3:
        assert proc.poll() is None and time.monotonic() < end, proc.stdout.read()[-2000:]
        time.sleep(0.05)
    for sig, wait in schedule:
        if proc.poll() is not None:
            break
        (os.killpg(proc.pid, sig) if group else proc.send_signal(sig))
        time.sleep(wait)
    out, _ = proc.communicate(timeout=HANG_S)
    left = _left_in_group(proc.pid)
    assert not left, f"still running after the interrupted run ended: {left}"
    return proc.returncode, out, d


@pytest.mark.parametrize("name,workers", serial_and_n2(SCHEDULES, in_ci=("two SIGTERM 0.5 s apart",)))
def test_an_interrupted_run_is_never_complete_and_keeps_its_journal(tmp_path, name, workers):
    rc, out, d = _interrupt(tmp_path, SCHEDULES[name], workers, group=False)
    assert rc == 2, out[-3000:]
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    doc = results.read(d / "results.json")
    assert doc["complete"] is False and doc["incomplete"].startswith("interrupted"), doc["incomplete"]
    kept = journal.recover(d / journal.JOURNAL)
    assert len(kept["records"]) >= len(doc["records"]) >= 3
    assert {r["key"] for r in doc["records"]} <= {r["key"] for r in kept["records"]}


@pytest.mark.parametrize("name", ["two SIGTERM 0.5 s apart", "ten SIGINT"])
def test_signals_to_the_whole_group_reach_the_workers_and_the_run_still_says_so(tmp_path, name):
    rc, out, d = _interrupt(tmp_path, SCHEDULES[name], 2, group=True)
    assert rc == 2, out[-3000:]
    assert "INTERNALERROR" not in out, out[-3000:]
    doc = results.read(d / "results.json")
    assert doc["complete"] is False and doc["incomplete"].startswith(("interrupted", "a worker was interrupted"))
    assert (d / journal.JOURNAL).exists()


def test_at_exit_the_signals_a_run_handles_are_ignored_not_defaulted(tmp_path):
    """The interpreter's finalization puts a Python signal handler back to SIG_DFL; a second
    SIGTERM in those last milliseconds killed a finished run with -15 instead of its exit status
    (a fresh-clone CI run, 2026-12-02). The handlers are set to SIG_IGN at exit instead, which the
    finalization keeps; the process's atexit functions show it (their last one runs after ours)."""
    import subprocess
    import sys
    script = tmp_path / "s.py"
    script.write_text(
        "import atexit, signal\n"
        "def show():\n"
        "    print([signal.getsignal(s) == signal.SIG_IGN for s in (signal.SIGINT, signal.SIGTERM)])\n"
        "atexit.register(show)\n"                                  # registered first: runs last
        "from suite.run.interrupts import Interrupts\n"
        "i = Interrupts(); i.install()\n"
        "assert signal.getsignal(signal.SIGTERM) == i._handle\n")
    r = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0 and r.stdout.strip() == "[True, True]", (r.stdout, r.stderr)
