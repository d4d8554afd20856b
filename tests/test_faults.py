"""A backend is untrusted native code: these backends crash, exit (0 included), hang, reuse their
buffers, exit while closing, or cannot start (tests/misbehaving.py). Each runs in a real pytest
session, serially and with -n 2; for each, the exit code, the terminal, results.json and
summary.md must agree on what happened, the faulting cases must be failed with the signal, exit
code or deadline, and every other case must still have run and passed."""
from __future__ import annotations

import json
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

import pytest

from suite.report import results
from tests.reportkit import N2_HEAVY, ROOT, cli, popen_suite, run_suite, serial_and_n2
from tests.waiting import HANG_S

CASES = "--cases=" + str(ROOT / "cases" / "mse_loss_backward.yaml")
# 8 tests: numbers and determinism for reduction none/mean/sum, and two rejections. The planted
# faults hit the 2 with reduction=mean.
SLICE = [CASES, "-p", "no:benchmark", "-k", "MseLossBackward-float32-atlas-a2 and 2x3.2x3.2x3-contiguous"]
TOTAL = 8
MEAN = ("test_results[MseLossBackward-float32-atlas-a2-mean-", "test_bit_identical[MseLossBackward-float32-atlas-a2-mean-")


@dataclass(frozen=True)
class Misbehaviour:
    backend: str
    exit_code: int
    failed: int                       # failed cases (of TOTAL)
    fault: Optional[str]              # the records' fault field of the failed cases
    says: str                         # in the terminal and in every failed record's reason
    options: Tuple[str, ...] = ()
    incident: Optional[str] = None    # an incident outside any case, in all reports
    shows: Tuple[str, ...] = ()       # also in the terminal
    max_output: Optional[int] = None  # the terminal's output is at most this many characters


CASES_TABLE = {
    "segfault": Misbehaviour("Segfault", 1, 2, "signal 11 (SIGSEGV)", "was killed by signal 11 (SIGSEGV) during the call"),
    "os._exit(0)": Misbehaviour("ExitZero", 1, 2, "exit 0", "exited with code 0 during the call"),
    "os._exit(3)": Misbehaviour("ExitThree", 1, 2, "exit 3", "exited with code 3 during the call"),
    "sys.exit": Misbehaviour("SysExit", 1, 2, "exit 0", "exited with code 0 during the call"),
    "hang": Misbehaviour("Hang", 1, 2, "deadline", "overran its deadline of", ("--case-timeout", "1")),
    "reused buffer": Misbehaviour("ReusedBuffer", 1, 1, None, "shares memory with the first's"),
    "exit in close()": Misbehaviour("ExitInClose", 1, 1, None, "fails standard",
                                    incident="exited with code 0 during close() or its exit handlers"),
    "exit in atexit": Misbehaviour("ExitAtExit", 1, 1, None, "fails standard",
                                   incident="exited with code 0 during close() or its exit handlers"),
    # issue 20: the wire, the output, the contract's small print
    "junk on the socket": Misbehaviour("SocketJunk", 1, 2, "protocol",
                                       "protocol violation: the backend's process sent a malformed reply"),
    "forged reply": Misbehaviour("ForgedReply", 1, 2, "protocol", "protocol violation: the backend's process"),
    "output flood": Misbehaviour("Noisy", 1, 1, None, "fails standard",
                                 shows=("NOISY-START pppp", "NOISY-FD-END", "bytes left out between them"),
                                 max_output=200_000),
    "nondeterminism behind a cache": Misbehaviour("CachedNondeterministic", 1, 1, None,
                                                  "differs from the first process's in 1 of 6 elements"),
    "float status": Misbehaviour("FloatStatus", 1, 2, None,
                                 "the backend broke its contract: AclnnError's status is 161002.5 (float)"),
    "broken __str__": Misbehaviour("BrokenStr", 1, 2, None,
                                   "the backend crashed: _Unprintable: <unprintable _Unprintable"),
    "masked result": Misbehaviour("MaskedResult", 1, 2, None, "MaskedArray with 1 masked elements"),
}


def _terminal_counts(out: str) -> dict:
    last = [line for line in out.splitlines() if re.search(r"\d+ (passed|failed)|no tests ran", line)][-1]
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|xfailed|xpassed)", last)}


@pytest.mark.parametrize("name,workers", serial_and_n2(CASES_TABLE, in_ci=("segfault", "junk on the socket", "output flood")))
def test_misbehaving_backend_costs_its_cases_and_all_reports_agree(tmp_path, name, workers):
    m = CASES_TABLE[name]
    args = [*SLICE, "--backend", f"tests.misbehaving:{m.backend}", *m.options, f"--report-dir={tmp_path}"]
    p = run_suite(args + (["-n", str(workers)] if workers else []), timeout=HANG_S)
    out = p.stdout + p.stderr
    assert p.returncode == m.exit_code, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    doc = results.read(tmp_path / "results.json")
    md = (tmp_path / "summary.md").read_text()
    assert not (tmp_path / "results.journal").exists()      # a finished run removes its journal
    assert doc["complete"] is True and doc["incomplete"] is None
    # terminal, results.json and summary.md: the same counts
    counts = {k: v for k, v in doc["counts"].items() if v}
    assert _terminal_counts(out) == counts == {"failed": m.failed, "passed": TOTAL - m.failed}, out[-2000:]
    assert f"{m.failed} failed" in md.splitlines()[2] and f"## Failures ({m.failed})" in md
    # the faulting cases, and only they, failed; with the fault and a reproducer everywhere
    failed = [r for r in doc["records"] if r["outcome"] == "failed"]
    assert all(any(k in r["key"] for k in MEAN) for r in failed), [r["key"] for r in failed]
    for r in failed:
        assert r["fault"] == m.fault and m.says in r["reason"], r
        assert r["reproduce"].startswith("pytest ") and f"tests.misbehaving:{m.backend}" in r["reproduce"]
        assert r["reproduce"] in md and r["case"] in md
    assert m.says in out
    assert all(x in out for x in m.shows), out[-3000:]
    if m.max_output is not None:
        assert len(out) <= m.max_output, f"{len(out)} characters of terminal output"
    if m.fault is not None:
        assert "a fresh backend process serves the next case" in out
    if m.incident:
        assert doc["incidents"] and all(m.incident in x for x in doc["incidents"]), doc["incidents"]
        assert m.incident in md and m.incident in out and "incidents outside any case" in out
    else:
        assert doc["incidents"] == []


@pytest.mark.parametrize("workers", N2_HEAVY)
def test_a_backend_that_cannot_start_is_one_error_line_even_under_xdist(tmp_path, workers):
    """-k leaves no test that could carry the error under xdist: the controller must say it."""
    p = run_suite([*SLICE, "--backend", "tests.misbehaving:RaisingInit", f"--report-dir={tmp_path}"]
                  + (["-n", str(workers)] if workers else []))
    out = p.stdout + p.stderr
    assert p.returncode == 4, out[-3000:]
    assert "ERROR: backend 'tests.misbehaving:RaisingInit' failed to start: RuntimeError: no device 0" in out
    assert "Traceback" not in out
    doc = results.read(tmp_path / "results.json")
    assert doc["complete"] is False and "could not start" in doc["incomplete"] and not doc["records"]
    assert "INCOMPLETE RUN" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "n2"])
def test_setup_errors_under_xdist_reach_the_controller(tmp_path, workers):
    for bad, says in ((["--standard", "nosuch"], "ERROR: --standard nosuch: not in"),
                      (["--backend", "no.such.module:X"], "ERROR: backend 'no.such.module:X': cannot import")):
        p = run_suite([*SLICE, *bad] + (["-n", str(workers)] if workers else []))
        assert p.returncode == 4 and says in p.stdout + p.stderr, (p.stdout + p.stderr)[-2000:]


def test_a_backend_that_crashes_on_every_case_ends_quickly(tmp_path):
    p = run_suite([*SLICE, "--backend", "tests.misbehaving:CrashAlways", "--backend-restarts", "2",
                   f"--report-dir={tmp_path}"])
    assert p.returncode == 1, p.stdout[-2000:]
    doc = results.read(tmp_path / "results.json")
    assert doc["counts"]["failed"] == TOTAL
    faults = [r["fault"] for r in sorted(doc["records"], key=lambda r: r["key"])]
    # 3 faults (the first start and 2 restarts), then no more starts: the rest fail at once
    assert sorted(faults) == sorted(["exit 7"] * 3 + ["gave up"] * (TOTAL - 3)), faults
    assert "it is not restarted again (--backend-restarts 2)" in p.stdout


def _popen(args, tmp_path):
    return popen_suite(args)


def _wait_for_records(path: Path, n: int, proc, limit: float = HANG_S) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if path.exists() and len(path.read_text().splitlines()) >= n + 1:
            return
        if proc.poll() is not None:
            raise AssertionError(proc.stdout.read()[-2000:])
        time.sleep(0.1)
    raise AssertionError(f"{path}: fewer than {n} records after {limit} s")


def test_a_killed_run_leaves_its_finished_cases_and_reports_marked_incomplete(tmp_path):
    """SIGKILL while the backend hangs on the first mean case: no reports were written at the end,
    so the ones on disk say the run did not finish, the journal holds the finished cases, and
    `report recover` makes reports of them that diff and merge refuse without --allow-incomplete."""
    d = tmp_path / "run"
    proc = _popen([*SLICE, "--backend", "tests.misbehaving:Hang", "--case-timeout", "600",
                   f"--report-dir={d}"], tmp_path)
    _wait_for_records(d / "results.journal", 1, proc)
    time.sleep(1.0)
    proc.kill()
    proc.wait(HANG_S)
    doc = results.read(d / "results.json")
    assert doc["complete"] is False and "report recover" in doc["incomplete"] and not doc["records"]
    assert "INCOMPLETE RUN" in (d / "summary.md").read_text()
    ref = tmp_path / "ref"
    assert run_suite([*SLICE, f"--report-dir={ref}"]).returncode == 0
    p = cli(["report", "diff", str(ref / "results.json"), str(d / "results.json")])
    assert p.returncode == 2 and "the run did not finish" in p.stderr and "--allow-incomplete" in p.stderr
    p = cli(["report", "recover", str(d)])
    assert p.returncode == 0, p.stderr
    doc = results.read(d / "results.json")
    n = len(doc["records"])
    assert 1 <= n < TOTAL and doc["complete"] is False and "killed" in doc["incomplete"]
    assert all(r["outcome"] == "passed" for r in doc["records"])
    # (ref ran after the killed run started, in a folder it did not protect: trusted by name;
    # tests/test_report_trust.py proves the refusal)
    p = cli(["report", "diff", str(ref / "results.json"), str(d / "results.json"), "--allow-incomplete",
             "--trust-baseline"])
    assert p.returncode == 1 and f"{TOTAL - n} vanished cases" in p.stdout and "NEW did not finish" in p.stdout
    p = cli(["report", "merge", str(d / "results.json"), "-o", str(tmp_path / "m.json")])
    assert p.returncode == 2 and "did not finish" in p.stderr


def test_sigterm_ends_the_run_with_reports_marked_interrupted(tmp_path):
    d = tmp_path / "run"
    proc = _popen([*SLICE, "--backend", "tests.misbehaving:Hang", "--case-timeout", "600",
                   f"--report-dir={d}"], tmp_path)
    _wait_for_records(d / "results.journal", 1, proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 2, out[-2000:]
    doc = results.read(d / "results.json")
    assert doc["complete"] is False and doc["incomplete"].startswith("interrupted")
    assert doc["records"] and "**INCOMPLETE RUN**: interrupted" in (d / "summary.md").read_text()
    assert (d / "results.journal").exists()           # an unfinished run keeps its journal


def test_an_unwritable_report_dir_is_found_before_the_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    p = run_suite([*SLICE, f"--report-dir={blocker / 'sub'}"])
    assert p.returncode == 4 and f"--report-dir {blocker / 'sub'}: cannot write there" in p.stdout + p.stderr
    assert "passed" not in p.stdout


def test_records_of_a_hosted_backend_equal_those_of_an_in_process_one(tmp_path):
    """The process boundary changes nothing a backend sees: same views, same results, same metrics."""
    a, b = tmp_path / "a", tmp_path / "b"
    sl = [CASES, "-p", "no:benchmark", "-k", "float16 and atlas-a2 and (2x3 or 0x3)"]
    pa = run_suite([*sl, f"--report-dir={a}"])
    pb = run_suite([*sl, "--isolation=none", f"--report-dir={b}"])
    assert pa.returncode == pb.returncode == 0, pa.stdout[-2000:]
    ra, rb = (json.loads((x / "results.json").read_text())["records"] for x in (a, b))
    assert len(ra) > 50 and ra == rb


def test_in_pytest_s_process_a_crash_under_xdist_still_reaches_every_report(tmp_path):
    """--isolation none puts the backend in the xdist worker: a segfault kills the worker, and the
    record xdist's controller makes of it is rebuilt from the node id into the reports."""
    p = run_suite([*SLICE, "--backend", "tests.misbehaving:Segfault", "--isolation=none", "-n", "2",
                   f"--report-dir={tmp_path}"])
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-3000:]
    doc = results.read(tmp_path / "results.json")
    failed = [r for r in doc["records"] if r["outcome"] == "failed"]
    assert len(failed) == 2 and all(r["fault"] == "process died" and "crashed while running" in r["reason"]
                                    for r in failed), failed
    assert _terminal_counts(out)["failed"] == 2 == doc["counts"]["failed"]
    assert "## Failures (2)" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize("workers", N2_HEAVY)
def test_results_in_numpy_subclasses_are_judged_by_value(tmp_path, workers):
    """np.matrix and an unmasked masked array with the right values pass (they crashed the
    backend's process in the wire's send: 'exited with code 1')."""
    p = run_suite([*SLICE, "--backend", "tests.misbehaving:MatrixResult", f"--report-dir={tmp_path}"]
                  + (["-n", str(workers)] if workers else []))
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "Traceback" not in out, out[-3000:]
    assert results.read(tmp_path / "results.json")["counts"]["passed"] == TOTAL


@pytest.mark.parametrize("workers", N2_HEAVY)
def test_a_device_fault_with_recovered_no_is_a_lost_device(tmp_path, workers):
    """recovered="no" is not the promise True is: bool("no") made it one, and the run went on."""
    p = run_suite([*SLICE, "--backend", "tests.misbehaving:RecoveredNo", f"--report-dir={tmp_path}"]
                  + (["-n", str(workers)] if workers else []))
    out = p.stdout + p.stderr
    assert p.returncode != 0 and "Traceback" not in out, out[-3000:]
    doc = results.read(tmp_path / "results.json")
    failed = [r for r in doc["records"] if r["outcome"] == "failed"]
    assert failed and all(r["fault"] == "device lost" and "is not a bool" in r["reason"] for r in failed), failed
    assert doc["complete"] is False and "could not recover" in doc["incomplete"]
