"""`report diff` leads with the new failures' counts per operator and kind (issue 42, item 6): a
user's diff said "WORSE: 737 new failures" and showed ten, all one operator's determinism tests,
while another operator's 88 numbers failures were invisible. Now every operator and kind is counted
first, largest first, and a few of each are shown with their messages and reproducers; what is worse
(and the exit status) is unchanged."""
from __future__ import annotations

from pathlib import Path

from suite.cli import main as cli
from suite.report import compare, newfailures, results
from tests.test_report_compare import rec, run


def _failing(key, op, kind, reason):
    return {**rec(key, "failed", kind=kind, reason=f"{key}: {reason}"), "op": op}


def _runs():
    """BASE: all pass. NEW: 30 determinism failures of one operator (their keys sort first), 8
    numbers failures of another, 2 rejection (status) failures of a third, and an incident."""
    big = [_failing(f"a{i:02d}", "OpA", "determinism", "out: two runs on identical inputs differ in 1 of 4 elements")
           for i in range(30)]
    hidden = [_failing(f"m{i}", "OpM", "numbers", "out float32[2, 3] fails standard 'cann': 6 elements over")
              for i in range(8)]
    status = [_failing(f"s{i}", "OpS", "rejection", "status 0 (ACLNN_SUCCESS), expected 161002") for i in range(2)]
    new = big + hidden + status
    base = run(*(dict(r, outcome="passed", reason=None, reproduce=None) for r in new))
    return base, run(*new, incidents=["gw0: the backend's process exited with code 3 in close()"])


def test_the_diff_leads_with_counts_per_operator_and_kind_then_a_few_of_each_with_messages() -> None:
    base, new = _runs()
    d = compare.diff(base, new)
    lines = compare.render_diff(d).splitlines()
    assert lines[:6] == ["WORSE: 40 new failures, 1 incidents",
                         "new failures and incidents by operator and kind (41):",
                         "  30  OpA  determinism",
                         "   8  OpM  numbers",
                         "   2  OpS  status",
                         "   1  -    incident"]
    at = lines.index("new failures, OpM numbers (8):")
    assert lines[at + 1:at + 4] == ["  m0  (passed before)",
                                    "    out float32[2, 3] fails standard 'cann': 6 elements over",
                                    "    reproduce: pytest 'm0'"]
    assert lines[at + 10] == "  ... and 5 more"                   # three of each group, then the count
    assert "new failures, OpA determinism (30):" in lines and "  ... and 27 more" in lines
    assert "new failures, OpS status (2):" in lines and "  s1  (passed before)" in lines
    assert lines.index("new failures, OpA determinism (30):") < at < lines.index("new failures, OpS status (2):")


def test_the_limit_caps_each_group_and_the_verdict_is_unchanged(tmp_path: Path, capsys) -> None:
    base, new = _runs()
    for name, doc in (("base", base), ("new", new)):
        results.write(tmp_path / f"{name}.json", doc)
    code = cli.main(["report", "diff", str(tmp_path / "base.json"), str(tmp_path / "new.json"), "--limit", "1"])
    out = capsys.readouterr().out
    assert code == 1 and out.count("reproduce: pytest ") == 3          # one of each of the three groups
    assert "  ... and 29 more" in out and "  ... and 7 more" in out and "  ... and 1 more" in out
    assert compare.diff(base, new).worse and not compare.diff(base, base).worse


def test_a_long_message_is_cut() -> None:
    r = _failing("k", "OpA", "numbers", "x" * 1000)
    (line,) = [x for x in newfailures.lines([(r, None)], 10, lambda r, b: "new case") if x.startswith("    x")]
    assert len(line) == 4 + newfailures.MAX_MESSAGE and line.endswith("…")


def test_the_limit_is_shared_out_among_the_groups() -> None:
    base, new = _runs()
    d = compare.diff(base, new)
    shown = lambda limit: compare.render_diff(d, limit).count("reproduce: pytest ")     # noqa: E731
    assert (shown(0), shown(1), shown(3), shown(10), shown(30), shown(1000)) == (0, 3, 3 + 3 + 2, 3 + 3 + 2, 10 + 8 + 2, 40)
