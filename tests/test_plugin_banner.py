"""report.html's banner (suite/report/verdict.py, read from results.json) says PASS exactly when the
run exits 0, in real sessions of the suite: each ends one way (everything passed, a failed case, a
backend that raises, every case skipped, -x, known failures, no conformance case at all) and the
banner's verdict of the results.json it wrote must agree with pytest's exit status. The same rule
at every ending, the plugin's objects built by hand, is tests/test_plugin_exit_status.py's."""
from __future__ import annotations

import pytest

from suite.report import results
from suite.report.verdict import verdict
from tests.reportkit import ROOT, run_suite

MSE = ["--cases=" + str(ROOT / "cases" / "mse_loss_backward.yaml"), "-k", "float32-atlas-a2 and 2x3.2x3.2x3-contiguous"]
KL = ["--cases=" + str(ROOT / "cases" / "kl_div_backward.yaml"), "-k", "float32-atlas-a2 and batchmean and 2x3"]
B = "tests.plugin_backends:"
KNOWN = "- cases: 'KlDivBackward-*'\n  reason: 1% too large\n"

SESSIONS = [
    # (what, pytest's arguments, the known-failures file or None, the exit status)
    ("the reference backend, every case passed", MSE, None, 0),
    ("a wrong kernel", KL + ["--backend", B + "WrongKL"], None, 1),
    ("a backend whose run() raises", MSE + ["--backend", B + "Crashes"], None, 1),
    ("every case skipped", MSE + ["-k", "test_bit_identical", "--backend", B + "Nondeterministic"], None, 1),
    ("-x: stopped at the first failure", KL + ["-x", "--backend", B + "WrongKL"], None, 1),
    ("the wrong kernel's failures known", KL + ["--backend", B + "WrongKL"], KNOWN, 0),
    ("a strict known failure that passed", MSE, "- cases: 'MseLossBackward-*'\n  reason: r\n  strict: true\n", 1),
    ("no case selected", MSE[:1] + ["-k", "no-such-case"], None, 5),
    ("no conformance case: the project's own tests", ["tests/test_report_shard.py"], None, 4),
]


@pytest.mark.parametrize("what,args,known,code", SESSIONS, ids=[s[0] for s in SESSIONS])
def test_the_banner_of_a_real_run_says_pass_exactly_when_it_exits_0(tmp_path, what, args, known, code):
    if known is not None:
        (tmp_path / "known.yaml").write_text(known)
        args = args + [f"--known-failures={tmp_path / 'known.yaml'}"]
    p = run_suite(args + [f"--report-dir={tmp_path / 'r'}"])
    out = p.stdout + p.stderr
    assert p.returncode == code, (what, out[-2000:])
    assert "Traceback" not in out, out[-2000:]
    passed, why = verdict(results.read(tmp_path / "r" / "results.json"))
    assert passed == (p.returncode == 0), (what, p.returncode, why)
