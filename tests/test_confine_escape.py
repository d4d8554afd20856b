"""Issue 43, items 1 and 4, in a real run (tests/test_confine.py's sandbox, serially and with -n 2):
a backend that looks for a listening socket to ask for a process outside its confinement finds
none, so nothing forges results.json after pytest exits; and a backend that cleans the temporary
folder (what `rm -rf /tmp/*` in a kernel's test fixture does) costs its own case, every later case
runs and no record holds a traceback. The run's TMPDIR is a folder of the test's (HOSTILE_TMP), so
the attacks never see the machine's /tmp."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile_escape import MARK
from tests.test_confine import FAILED, TOTAL, WORKERS, Sandbox, assert_caught, baseline, box, finish  # noqa: F401
from tests.hostile import alive
from tests.waiting import HANG_S, until

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reaping and /proc are Linux's")


def _popen(box: Sandbox, backend: str, workers: int, extra=()) -> subprocess.Popen:
    tmp = box.root.parent / "tmp"
    tmp.mkdir()
    (tmp / MARK).write_text("the run's stand-in for /tmp (tests/hostile_escape.py)\n")
    env = box.env(box.reports)
    env.update(TMPDIR=str(tmp), HOSTILE_TMP=str(tmp),          # bound back behind the namespace wall
               ACLNN_CONFORMANCE_BIND=os.pathsep.join([env["ACLNN_CONFORMANCE_BIND"], str(tmp)]))
    args = box.args(None, workers, extra=extra) + ["--backend", f"tests.hostile_escape:{backend}"]
    return subprocess.Popen(args, cwd=box.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def _end(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@linux
@WORKERS
def test_a_backend_finds_no_socket_to_ask_for_a_process_outside_its_confinement(box, baseline, workers):
    """Before: it found multiprocessing's forkserver listening in the run's TMPDIR, had it fork a
    process that killed the forkserver and, once pytest had exited, rewrote results.json to say
    all passed."""
    proc = _popen(box, "ForkserverEscape", workers)
    escaped = []
    try:
        out = finish(proc, HANG_S)
        # every process a forkserver was asked for has done what it would (forged, then exited),
        # however busy the machine: waited for by its pid, not for a fixed time
        asked = [int(a.rsplit("pid ", 1)[1]) for a in box.noted("asked")]
        until(lambda: not any(alive(p) for p in asked), "the processes a forkserver started to end")
        escaped = [int(x) for x in box.noted("escaped")]
        assert_caught(box, baseline, out, proc.returncode)           # not forged to say all passed
        assert escaped == [] and box.noted("forged") == [], (escaped, box.noted("forged"), box.noted("asked"))
        looked = box.noted("listeners")
        assert looked and set(looked) == {"[]"}, looked       # every process that attacked found none
        assert any("no listening socket in reach" in r for r in box.noted("refused")), box.noted("refused")
    finally:
        _end(escaped or [int(x) for x in box.noted("escaped")])


@linux
@pytest.mark.parametrize("confine, workers", [("off", 0), ("off", 2), ("auto", 0)])
def test_a_backend_that_cleans_the_temporary_folder_costs_only_its_own_case(box, confine, workers):
    """Before: it removed the forkserver's socket, every later start raised FileNotFoundError, and
    the records of the cases lost held traceback fragments. Unconfined (--confine=off), the cleaning
    lands and costs only its case (no socket to lose, each process's TMPDIR made as it starts);
    confined, the temporary folder outside its own TMPDIR is protected and nothing is removed."""
    proc = _popen(box, "CleanTmp", workers, extra=[f"--confine={confine}"])
    out = finish(proc, HANG_S)
    removed = int(box.noted("removed")[0])
    from suite.run.confine import landlock_abi
    confined = confine == "auto" and landlock_abi()[0] >= 1
    assert removed == 0 if confined else removed > 0, out[-2000:]
    assert proc.returncode == 1, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    doc = json.loads((box.reports / "results.json").read_text())
    failed = [r for r in doc["records"] if r["outcome"] == "failed"]
    assert len(failed) == 1 and "exited with code 3" in failed[0]["reason"], failed
    assert doc["complete"] is True and doc["counts"]["passed"] == TOTAL - 1, doc["counts"]
    text = json.dumps(doc["records"])
    assert "Traceback" not in text and "FileNotFoundError" not in text and "Error:" not in text
