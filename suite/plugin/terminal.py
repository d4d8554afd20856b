"""What a run prints at its end (registered by suite/plugin/__init__.py): why a session could not
start or judged nothing, incidents outside any case, known failures not excused, and the results,
short: one line per operator and product, the dtypes of the groups where a case failed, and the
skips counted by reason. The full table (per operator, dtype and product) is summary.md's, and the
terminal's too with -v.

Imports suite.report and suite.plugin.report only."""
from __future__ import annotations

from collections import Counter
from typing import Any, List, Mapping

import pytest

from suite.plugin.report import REPORTER
from suite.report import accuracy, formats, summary

REASONS = 8                     # the most skip reasons listed (each with its count)


def _op_product(r: Mapping) -> tuple:
    return r["op"], r["product"]


def results_sections(records: List[Mapping], verbose: bool) -> List[tuple]:
    """(title, lines) of each section of the results, in order."""
    if verbose:
        return [("per operator, dtype and product",
                 summary.terminal_lines(records) + summary.within_standard(records))]
    out = [("per operator and product (-v: and dtype)",
            summary.terminal_lines(records, key=_op_product) + summary.within_standard(records))]
    failed = {_op_product(r) for r in records if r["outcome"] in ("failed", "xpassed")}
    if failed:
        out.append(("where cases failed, per dtype",
                    summary.terminal_lines([r for r in records if _op_product(r) in failed])))
    reasons = Counter(str(r.get("reason") or "(no reason given)") for r in records if r["outcome"] == "skipped")
    if reasons:
        lines = [f"{n:>7}  {why}" for why, n in reasons.most_common(REASONS)]
        if len(reasons) > REASONS:
            lines.append(f"... and {len(reasons) - REASONS} more reasons (-rs lists every skip)")
        out.append((f"{sum(reasons.values())} skipped, by reason", lines))
    return out


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    rep = config.stash.get(REPORTER, None)
    if rep is None:
        return
    for error in rep.setup_errors:
        terminalreporter.write_line(f"ERROR: {error}", red=True, bold=True)
    asked = rep.config.option.backend is not None or rep.dir is not None     # a conformance run
    nothing = (asked and rep.empty_run()) or rep.all_skipped()
    if nothing and not rep.interrupts.count and not (rep.setup_errors or rep.state().error):
        # (a session that could not start says why, alone: pytest's "ERROR:" line, or the one above)
        terminalreporter.write_line(f"ERROR: {nothing}", red=True, bold=True)
    incidents = rep.all_incidents()
    if incidents:
        terminalreporter.section("aclnn conformance: incidents outside any case (they fail the run)", red=True)
        for line in incidents:
            terminalreporter.write_line(line)
    if rep.unexcused:
        terminalreporter.section(f"aclnn conformance: {len(rep.unexcused)} known failures not excused "
                                 f"(they passed in --baseline)", yellow=True)
        for key in rep.unexcused[:20]:
            terminalreporter.write_line(key)
        if len(rep.unexcused) > 20:
            terminalreporter.write_line(f"... and {len(rep.unexcused) - 20} more")
    if not rep.records:
        return
    verbose = (getattr(rep.config.option, "verbose", 0) or 0) > 0
    for title, lines in results_sections(list(rep.records.values()), verbose):
        terminalreporter.section(f"aclnn conformance: {title}")
        for line in lines:
            terminalreporter.write_line(line)
    double = accuracy.terminal_lines({"records": list(rep.records.values())})     # --accuracy-baseline
    if double:
        terminalreporter.section(f"aclnn conformance: {double[0]}")
        for line in double[1:]:
            terminalreporter.write_line(line)
    if rep.dir is not None:
        terminalreporter.write_line(f"reports: {rep.dir}/{formats.file_list()}")
