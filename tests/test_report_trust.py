"""`report diff` refuses a baseline the candidate run's backend could have written
(suite/report/trust.py; issue 43, item 5): one on the run's host whose inode changed inside the
run's window, or that lies outside every folder the run protected, unless --trust-baseline. The
checks at, inside and outside each boundary on made-up windows; then a real file's change time;
then real runs: a backend (tests/hostile_baseline.py) that rewrites a baseline lying in a folder
the run left writable, refused by the gate, and the documented flows, which pass."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from suite.cli import main as cli
from suite.report import compare, results, trust
from suite.report.trust import Place
from tests.test_confine import landlock_abi
from tests.reportkit import N2_HEAVY, PYTEST, ROOT, cli as cli_process, sample_record, suite_env
from tests.waiting import HANG_S

HOST = "gate-host"
START, END = 1_796_600_000_000_000_000, 1_796_600_060_000_000_000      # a minute of a run, in ns
SAFE = "/work/reports"


DEFAULT: Any = object()


def window(start: int = START, end: Optional[int] = END, protected: Any = DEFAULT,
           host: str = HOST) -> Dict[str, Any]:
    return {"hostname": host, "start_ns": start, "end_ns": end,
            "protected": [SAFE, "/opt/suite"] if protected is DEFAULT else protected}


def new_doc(*windows: Dict[str, Any], writes: str = "landlock abi 7") -> Dict[str, Any]:
    return {"windows": list(windows), "machine": {"hostname": HOST}, "protections": {"writes": writes}}


def at(ctime: int, path: str = SAFE + "/base.json", real: Optional[str] = None) -> Place:
    return Place(path, real or path, ctime)


# -- the window: both ends belong to it --------------------------------------------------------
@pytest.mark.parametrize("ctime,refused", [
    (START - 1, False), (START, True), (START + 1, True), (END - 1, True), (END, True), (END + 1, False)],
    ids=["just-before", "at-start", "just-after-start", "just-before-end", "at-end", "just-after-end"])
def test_a_change_inside_the_window_is_refused_and_one_outside_it_is_not(ctime: int, refused: bool) -> None:
    why = trust.refusal(at(ctime), new_doc(window()), HOST)
    assert (why is not None) == refused, why
    if refused:
        assert why.startswith(f"changed at {trust.when(ctime)}, while the run on {HOST} could write it (windows[0]: ")
        assert trust.when(START) in why and trust.when(END) in why


def test_a_run_without_an_end_reaches_every_later_change() -> None:
    """A killed run's window (the journal's): no end, and which folders it protected is not known."""
    open_ended = new_doc(window(end=None))
    assert trust.refusal(at(START - 1), open_ended, HOST) is None
    for ctime in (START, START + 10**15):
        assert "its end (not recorded)" in trust.refusal(at(ctime), open_ended, HOST)
    unknown = new_doc(window(protected=None))
    assert "did not record which folders it protected (windows[0]: protected null" in trust.refusal(
        at(START - 1), unknown, HOST)


def test_a_run_on_another_host_reaches_no_file_here() -> None:
    """The gate job on another machine (the CI example): the baseline there is not the run's to write."""
    inside_and_outside = at(START + 5, "/tmp/base.json")
    assert trust.refusal(inside_and_outside, new_doc(window()), "gate-job") is None
    assert trust.refusal(inside_and_outside, new_doc(window()), HOST) is not None


# -- the place: inside a protected folder, as given and as resolved ------------------------------
@pytest.mark.parametrize("path,real,refused", [
    (SAFE + "/base.json", None, False),
    (SAFE + "/deep/er/base.json", None, False),
    (SAFE, None, False),                                     # the protected path itself (a file named by --baseline)
    ("/tmp/base.json", None, True),
    (SAFE + "-old/base.json", None, True),                   # a sibling whose name starts like it
    ("/work/base.json", None, True),                         # its parent: not protected
    ("/tmp/link.json", SAFE + "/base.json", True),           # a link outside, into it: the link can be changed
    (SAFE + "/link.json", "/tmp/base.json", True),           # a link inside, out of it
], ids=["inside", "deeper", "itself", "tmp", "prefix", "parent", "link-in", "link-out"])
def test_a_baseline_must_lie_in_a_folder_the_run_protected(path: str, real: Optional[str], refused: bool) -> None:
    why = trust.refusal(at(START - 1, path, real), new_doc(window()), HOST)
    assert (why is not None) == refused, why
    if refused:
        shown = path if real is None else f"{path} -> {real}"
        assert why == (f"{shown} lies outside every folder the run on {HOST} protected (windows[0]: protected, "
                       f"2 paths), so its backend could write it")


@pytest.mark.parametrize("writes", ["off (--confine=off)", "not available: this kernel has no Landlock (Linux 5.13+)",
                                    "not available: --isolation none (the backend runs in pytest's process)"])
def test_a_run_without_confinement_protected_nothing_and_the_refusal_says_why(writes: str) -> None:
    why = trust.refusal(at(START - 1), new_doc(window(protected=[]), writes=writes), HOST)
    assert why == (f"the run on {HOST} protected no folder (windows[0]: protected [], protections.writes: "
                   f"{writes}), so its backend could write it")


def test_every_window_on_this_host_is_judged() -> None:
    """A merged file: one window per shard; each shard's backend reached its own machine."""
    elsewhere = window(protected=[], host="shard-2")
    assert trust.refusal(at(START + 1, "/tmp/b.json"), new_doc(window(end=START), elsewhere), HOST) is not None
    assert trust.refusal(at(START - 1), new_doc(window(), elsewhere), HOST) is None
    later = window(start=END + 10, end=END + 20)
    why = trust.refusal(at(END + 15), new_doc(window(), later), HOST)
    assert why is not None and "(windows[1]: " in why


def test_a_results_json_without_windows_is_compared_with_a_warning_on_its_own_host(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text("{}")
    assert trust.judge(base, {"machine": {"hostname": HOST}}, HOST) == (
        None, f"no field 'windows' (a results.json of a suite before it): whether its run could have "
              f"written {base} is not checked")
    assert trust.judge(base, {"machine": {"hostname": "elsewhere"}}, HOST) == (None, None)
    assert trust.judge(base, {"machine": {}}, HOST) == (None, None)
    assert trust.judge(tmp_path / "gone.json", new_doc(window()), HOST)[0].startswith("cannot look at it")


# -- results.json's field ------------------------------------------------------------------------
RUN = {"backend": {"spec": "fake", "options": {}}, "products": ["atlas-a2"], "standard_override": None,
       "manifest_hash": "ab" * 32, "machine": {"platform": "p", "python": "3", "numpy": "2", "hostname": HOST},
       "shard": None}


def doc_with(windows: Any = None, shard: Optional[str] = None, **run: Any) -> Dict[str, Any]:
    fields = dict(RUN, shard=shard, **run)
    if windows is not None:
        fields["windows"] = windows
    return results.make_document(fields, [sample_record("k")])


@pytest.mark.parametrize("windows,says", [
    ({}, "run: field 'windows' is {}, expected list"),
    ([1], "run.windows[0]: not an object"),
    ([dict(window(), extra=1)], "run.windows[0]: fields must be hostname, start_ns, end_ns, protected (and optionally granted)"),
    ([dict(window(), granted=[""])], "run.windows[0]: field 'granted' must list paths"),
    ([dict(window(), granted="/dev")], "run.windows[0]: field 'granted' is not list"),
    ([dict(window(), start_ns="1")], "run.windows[0]: field 'start_ns' is not int"),
    ([dict(window(), start_ns=True)], "run.windows[0]: field 'start_ns' is not int"),
    ([dict(window(), end_ns=START - 1)], "run.windows[0]: needs 0 <= start_ns <= end_ns"),
    ([dict(window(), start_ns=-1)], "run.windows[0]: needs 0 <= start_ns <= end_ns"),
    ([dict(window(), protected=["", 3])], "run.windows[0]: field 'protected' must list paths"),
    ([dict(window(), hostname=None)], "run.windows[0]: field 'hostname' is not str"),
])
def test_a_bad_windows_field_is_one_line_naming_the_file_and_field(tmp_path: Path, capsys, windows, says) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    results.write(good, doc_with())
    bad.write_text(json.dumps(doc_with(windows)))
    assert cli.main(["report", "diff", str(good), str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: {bad}: not a results.json") and says in err, err
    assert len(err.splitlines()) == 1


def test_well_formed_windows_are_valid_and_a_merge_keeps_every_shards() -> None:
    a = doc_with([window()], shard="1/2")
    b = doc_with([window(host="other", end=None, protected=None)], shard="2/2")
    assert results.validate(a) == [] and results.validate(b) == []
    merged = compare.merge([("a", a), ("b", b)])
    assert merged["windows"] == a["windows"] + b["windows"] and results.validate(merged) == []
    older = doc_with(shard="2/2")                      # a shard of an earlier suite: the merge cannot vouch
    assert "windows" not in compare.merge([("a", a), ("b", older)])


# -- a real file's change time, through the command ----------------------------------------------
def _files(tmp_path: Path, windows_of) -> tuple:
    """base.json written now, and new.json whose windows `windows_of(base's ctime)` gives."""
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    results.write(base, doc_with())
    ctime = os.stat(base).st_ctime_ns
    results.write(new, doc_with(windows_of(ctime), machine=dict(RUN["machine"], hostname=socket.gethostname())))
    return str(base), str(new), ctime


@pytest.mark.parametrize("span,refused", [((0, 0), True), ((-5, 0), True), ((0, 5), True),
                                          ((1, 9), False), ((-9, -1), False)],
                         ids=["start=end=ctime", "end=ctime", "start=ctime", "just-after", "just-before"])
def test_report_diff_reads_the_baselines_change_time(tmp_path: Path, capsys, span, refused: bool) -> None:
    here = socket.gethostname()
    base, new, ctime = _files(tmp_path, lambda c: [window(c + span[0], c + span[1], [str(tmp_path)], here)])
    code = cli.main(["report", "diff", base, new])
    out, err = capsys.readouterr()
    if not refused:
        assert (code, out, err) == (0, "OK: no new failures, no precision regressions\n", "")
        return
    assert (code, out) == (2, "")
    assert err == (f"error: {base}: changed at {trust.when(ctime)}, while the run on {here} could write it "
                   f"(windows[0]: {trust.when(ctime + span[0])} to {trust.when(ctime + span[1])}) (NEW: {new}); "
                   f"--trust-baseline compares it anyway (docs/ci-gate.md, \"Where the baseline lives\")\n")
    assert cli.main(["report", "diff", base, new, "--trust-baseline"]) == 0


def test_report_diff_refuses_a_baseline_outside_the_protected_folders_unless_trusted(tmp_path: Path, capsys) -> None:
    here = socket.gethostname()
    elsewhere = str(tmp_path / "reports")
    base, new, _ = _files(tmp_path, lambda c: [window(c - 10, c - 1, [elsewhere], here)])
    assert cli.main(["report", "diff", base, new]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {base}: {base} lies outside every folder the run on {here} protected") and \
        "--trust-baseline compares it anyway" in err and len(err.splitlines()) == 1, err
    assert cli.main(["report", "diff", base, new, "--trust-baseline"]) == 0
    # the same file, but the run on another machine: nothing to check
    base, new, _ = _files(tmp_path, lambda c: [window(c - 10, c + 10, [elsewhere], "another-" + here)])
    assert cli.main(["report", "diff", base, new]) == 0
    # no windows (an earlier suite's results.json) on this host: compared, with a warning
    results.write(Path(new), doc_with(machine=dict(RUN["machine"], hostname=here)))
    capsys.readouterr()
    assert cli.main(["report", "diff", base, new]) == 0
    assert capsys.readouterr().err == f"warning: {new}: no field 'windows' (a results.json of a suite before it): " \
                                      f"whether its run could have written {base} is not checked\n"


# -- real runs -----------------------------------------------------------------------------------
SLICE = ["--cases=cases/mse_loss_backward.yaml", "-k", "MseLossBackward-float32-atlas-a2 and 2x3.2x3.2x3-contiguous"]
TOTAL, FAILED = 8, 1                 # the doubled mean's numbers test fails


needs_writes = pytest.mark.skipif(landlock_abi() < 1, reason="no Landlock in this kernel: writes cannot be confined")


def run(tmp: Path, reports: Path, backend: Optional[str] = None, target: Optional[Path] = None,
        extra=(), workers: int = 0) -> subprocess.CompletedProcess:
    spy, temp = tmp / "spy", tmp / "t"
    spy.mkdir(exist_ok=True)
    temp.mkdir(exist_ok=True)
    # The run's temporary folder is the test's own: the system's is protected whole (but for each
    # backend process's TMPDIR), where the spy, and the writable place the attack needs, lie
    env = suite_env(HOSTILE_TARGET=str(target or ""), HOSTILE_SPY=str(spy), HOSTILE_SPARE=str(os.getpid()),
                    TMPDIR=str(temp),
                    # behind the mount-namespace wall (suite/run/namespace.py) the test's folders under /tmp
                    # are out of the backend's sight: the spy and the baseline's folder are bound back, so
                    # that these tests prove the gate for a baseline the backend can see (one in $HOME, say)
                    ACLNN_CONFORMANCE_BIND=os.pathsep.join([str(spy), str(tmp / "baseline")]))
    args = [sys.executable, *PYTEST, *SLICE, f"--report-dir={reports}", *extra] \
        + (["--backend", f"tests.hostile_baseline:{backend}"] if backend else []) \
        + (["-n", str(workers)] if workers else [])
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_S)


def diff(base: Path, new: Path, *extra: str) -> subprocess.CompletedProcess:
    return cli_process(["report", "diff", str(base), str(new), *extra])


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The reference backend's results.json on the slice: the baseline each test copies."""
    d = tmp_path_factory.mktemp("reference")
    p = run(d, d / "ref")
    assert p.returncode == 0, p.stdout[-2000:]
    return d / "ref" / "results.json"


def _baseline(tmp: Path, reference: Path) -> Path:
    base = tmp / "baseline" / "results.json"
    base.parent.mkdir()
    shutil.copy(reference, base)
    return base


@pytest.mark.parametrize("workers", N2_HEAVY)
def test_a_backend_that_rewrites_a_baseline_in_a_writable_folder_is_refused_by_the_gate(tmp_path, reference, workers):
    base = _baseline(tmp_path, reference)
    p = run(tmp_path, tmp_path / "new", "RewriteBaseline", base, workers=workers)
    assert p.returncode == 1, p.stdout[-3000:]
    assert {r["outcome"] for r in json.loads(base.read_text())["records"]} == {"failed"}, "the attack did not land"
    d = diff(base, tmp_path / "new" / "results.json")
    assert (d.returncode, d.stdout) == (2, ""), (d.stdout, d.stderr)
    assert d.stderr.startswith(f"error: {base}: changed at ") and "while the run on" in d.stderr, d.stderr
    assert "--trust-baseline compares it anyway" in d.stderr and len(d.stderr.splitlines()) == 1, d.stderr
    # what the refusal stands between: the forged baseline makes the unguarded diff pass
    trusted = diff(base, tmp_path / "new" / "results.json", "--trust-baseline")
    assert trusted.returncode == 0 and trusted.stdout.startswith("OK"), trusted.stdout


@needs_writes
def test_a_baseline_named_with_baseline_is_protected_and_the_gate_says_worse(tmp_path, reference):
    """The documented flow on one machine: the baseline fetched before the run, and named to it."""
    base = _baseline(tmp_path, reference)
    before = base.read_bytes()
    p = run(tmp_path, tmp_path / "new", "RewriteBaseline", base, extra=[f"--baseline={base}"])
    assert p.returncode == 1, p.stdout[-3000:]
    assert base.read_bytes() == before
    assert "Permission" in (tmp_path / "spy" / "refused").read_text()
    doc = results.read(tmp_path / "new" / "results.json")
    (w,) = doc["windows"]
    assert w["hostname"] == socket.gethostname() and w["start_ns"] <= w["end_ns"]
    assert os.path.realpath(base) in w["protected"] and os.path.realpath(tmp_path / "new") in w["protected"]
    d = diff(base, tmp_path / "new" / "results.json")
    assert d.returncode == 1 and d.stdout.startswith(f"WORSE: {FAILED} new failures") and d.stderr == "", \
        (d.stdout, d.stderr)


@pytest.mark.parametrize("confine", [pytest.param("auto", marks=needs_writes), "off"])
def test_a_baseline_fetched_into_the_report_folder_after_the_run_passes_unless_the_run_was_unconfined(
        tmp_path, reference, confine):
    new = tmp_path / "new"
    p = run(tmp_path, new, extra=["--confine=off"] if confine == "off" else [])
    assert p.returncode == 0, p.stdout[-3000:]
    base = new / "baseline.json"
    shutil.copy(reference, base)                       # after the run: inside its window's end, in its folder
    d = diff(base, new / "results.json")
    if confine == "auto":
        assert d.returncode == 0 and d.stdout.startswith("OK") and d.stderr == "", (d.stdout, d.stderr)
        return
    assert d.returncode == 2 and d.stdout == "", d.stdout
    assert f"protected no folder (windows[0]: protected [], protections.writes: off (--confine=off))" in d.stderr
    assert len(d.stderr.splitlines()) == 1, d.stderr


@pytest.mark.parametrize("path, refused", [
    ("/home/u/ascend/base.json", True),             # granted inside the protected home: writable
    ("/home/u/ascend", True),                       # the granted path itself
    ("/home/u/ascend/log/keep/base.json", False),   # a protected path nearer than the grant
    ("/home/u/ascendant/base.json", False),         # a sibling whose name starts the same way
    ("/home/u/base.json", False),                   # protected, not granted
])
def test_a_baseline_in_a_granted_folder_inside_the_protected_ones_is_refused(path: str, refused: bool) -> None:
    """The run's grants (/dev, $HOME/ascend) are writable although they lie inside protected
    folders (issue 43): a baseline there is one the backend could have rewritten."""
    w = dict(window(protected=["/home/u", "/home/u/ascend/log/keep"]), granted=["/home/u/ascend", "/dev"])
    why = trust.refusal(at(START - 1, path), new_doc(w), HOST)
    assert (why is not None) == refused, why
    if refused:
        assert why == (f"{path} lies in a folder the run on {HOST} left writable inside the protected ones "
                       f"(windows[0]: granted), so its backend could write it")
