"""A run that judged nothing is never a pass: a backend named in the wrong folder (the project's own
tests ran, or nothing), a report folder whose run collected nothing, a run whose every case was
skipped. Each fails with one line saying where pytest ran and what it selected, and `report diff`
and `report merge` refuse a side with no records."""
from __future__ import annotations

import json

import pytest

from suite.report import results
from tests.reportkit import N2_HEAVY, ROOT, cli, run_suite

MSE = "--cases=" + str(ROOT / "cases" / "mse_loss_backward.yaml")


def _pytest_in(folder, args):
    return run_suite(args, cwd=folder)


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "n2"])
def test_a_backend_named_where_only_the_projects_own_tests_are_fails(workers):
    p = _pytest_in(ROOT / "tests", ["--backend", "tests.plugin_backends:WrongKL", "test_report_shard.py"]
                   + (["-n", str(workers)] if workers else []))
    out = p.stdout + p.stderr
    assert p.returncode == 4, out[-2000:]
    assert "passed" in out        # the project's own tests did run ...
    line = next(x for x in out.splitlines() if x.startswith("ERROR: no conformance case ran"))
    assert f"pytest ran in {ROOT / 'tests'}" in line and "0 of them conformance cases" in line, line
    assert "Traceback" not in out


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "n2"])
@pytest.mark.parametrize("mistake,cause", [
    (["--backend", "no_such_backend"], "ERROR: unknown backend 'no_such_backend'"),
    (["--cases", "no/such/cases.yaml"], "ERROR: no/such/cases.yaml: no such case file or folder"),
], ids=["backend", "case-file"])
def test_a_backend_or_case_file_mistake_is_the_one_error_line(mistake, cause, workers):
    """It came second, after "no conformance case ran: ... run it in the project folder", and under
    xdist once per worker as a failed test (issue 42, item 9): now it is the run's only ERROR line."""
    p = run_suite(mistake + (["-n", str(workers)] if workers else []))
    out = p.stdout + p.stderr
    assert p.returncode == 4, out[-2000:]
    errors = [line for line in out.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and errors[0].startswith(cause), errors
    assert "setup-error" not in out and "failed" not in out and "Traceback" not in out, out[-2000:]


@pytest.mark.parametrize("folder", ["docs", "tests"])
def test_a_suite_option_with_no_test_path_runs_the_conformance_cases_in_any_subfolder(folder):
    """`cd docs && pytest --op X` collected nothing (exit 5, no hint) and `cd tests && pytest --op X`
    ran the project's own tests (issue 42, item 9): --backend or --op without a test path runs the
    conformance suite wherever pytest starts."""
    p = _pytest_in(ROOT / folder, ["--op", "MseLossBackward", "-k", "float32-atlas-a2-mean and uniform and 2x3"])
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-2000:]
    assert "MseLossBackward" in out and "test_report" not in out and "no conformance case ran" not in out, out[-2000:]
    assert "24 passed" in out.splitlines()[-1], out[-2000:]


@pytest.mark.parametrize("workers", N2_HEAVY)
def test_a_report_of_a_run_that_ran_no_case_is_not_complete_and_the_gate_refuses_it(tmp_path, workers):
    runs = {}
    for name in ("base", "new"):
        d = tmp_path / name
        p = run_suite([MSE, "-k", "no-such-case", f"--report-dir={d}"] + (["-n", str(workers)] if workers else []))
        assert p.returncode == 5, p.stdout[-2000:]
        doc = results.read(d / "results.json")
        assert doc["records"] == [] and doc["complete"] is False, doc
        assert doc["incomplete"].startswith("no conformance case ran"), doc["incomplete"]
        runs[name] = d / "results.json"
    p = cli(["report", "diff", str(runs["base"]), str(runs["new"])])
    assert p.returncode == 2 and "the run did not finish (no conformance case ran" in p.stderr, p.stderr
    p = cli(["report", "diff", str(runs["base"]), str(runs["new"]), "--allow-incomplete"])
    assert p.returncode == 2 and "the run has no records (no case ran)" in p.stderr, (p.stdout, p.stderr)
    # A finished run with no records (an older suite wrote them) is refused by merge too.
    forged = json.loads(runs["new"].read_text())
    forged.update(complete=True, incomplete=None)
    runs["new"].write_text(json.dumps(forged))
    for args in (["report", "diff", str(runs["new"]), str(runs["new"])],
                 ["report", "merge", str(runs["new"]), "-o", str(tmp_path / "m.json")],
                 ["report", "merge", str(runs["new"]), "--allow-incomplete", "-o", str(tmp_path / "m.json")]):
        p = cli(args)
        assert p.returncode == 2 and "the run has no records (no case ran)" in p.stderr, (args, p.stdout, p.stderr)
        assert not (tmp_path / "m.json").exists()


def test_a_report_dir_read_as_a_test_path_leaves_no_complete_report(tmp_path):
    """`--report-dir R` before a test path: pytest takes R/base as what to collect."""
    d = tmp_path / "R"
    p = run_suite([MSE, f"--report-dir={d}", str(tmp_path / "R" / "base")])
    assert p.returncode != 0
    doc = json.loads((d / "results.json").read_text())
    assert doc["complete"] is False and not doc["records"]


@pytest.mark.parametrize("workers", N2_HEAVY)
def test_a_run_whose_every_case_was_skipped_fails(tmp_path, workers):
    """A backend that declares itself nondeterministic, asked for determinism cases only."""
    p = run_suite([MSE, "-k", "test_bit_identical and float32-atlas-a2", "--backend",
                   "tests.plugin_backends:Nondeterministic", f"--report-dir={tmp_path}"]
                  + (["-n", str(workers)] if workers else []))
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-2000:]
    assert "ERROR: every one of the" in out and "was skipped, so none was judged" in out
    doc = results.read(tmp_path / "results.json")
    assert doc["records"] and all(r["outcome"] == "skipped" for r in doc["records"])
    # ... and one case judged is enough for the run to be a result
    p = run_suite([MSE, "-k", "float32-atlas-a2 and 2x3.2x3.2x3-contiguous", "--backend",
                   "tests.plugin_backends:Nondeterministic"] + (["-n", str(workers)] if workers else []))
    assert p.returncode == 0 and "skipped" in p.stdout, p.stdout[-2000:]


def test_a_backend_raising_not_implemented_everywhere_fails_every_case(tmp_path):
    """NotImplementedError is a crash of the backend's, not a skip: else a backend that computes
    nothing would make a run of skips."""
    p = run_suite([MSE, "-k", "float32-atlas-a2 and 2x3.2x3.2x3-contiguous", "--backend",
                   "tests.careless_backends:Unfinished", f"--report-dir={tmp_path}"])
    assert p.returncode == 1, p.stdout[-2000:]
    doc = results.read(tmp_path / "results.json")
    judged = doc["records"]
    assert len(judged) >= 8 and all(r["outcome"] == "failed" and "NotImplementedError: not written yet" in r["reason"]
                          for r in judged), judged[:2]


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "n2"])
def test_a_kind_with_no_selected_case_is_deselected_not_an_unexplained_skip(tmp_path, workers):
    """A user's case file of single numbers cases leaves the status and determinism modules without a
    case: pytest's "got empty parameter set" skip in each, counted as skipped without a reason in the
    table (issue 42, item 14). They are deselected, as any case not selected is."""
    mine = tmp_path / "my.yaml"
    mine.write_text("op: MseLoss\ncases:\n"
                    "  - {product: atlas-a2, dtypes: float32, reduction: mean, shapes: [7x5, 7x5]}\n")
    p = run_suite([f"--cases={mine}", "--backend", "reference", "-rs"] + (["-n", str(workers)] if workers else []))
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-2000:]
    assert "skipped" not in out.splitlines()[-1] and "empty parameter set" not in out, out[-2000:]
    # (under xdist the workers deselect, and the controller's last line does not count them)
    assert out.splitlines()[-1].startswith("1 passed, 2 deselected" if not workers else "1 passed in "), out[-2000:]
