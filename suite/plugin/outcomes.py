"""What a pytest report comes to as a results.json outcome (docs/results-schema.md, `outcome` and
`reason`): kept apart from the report hooks (suite/plugin/report.py) because it is a pure reading of
pytest's report, testable without a session."""
from __future__ import annotations

from typing import Optional, Tuple

import pytest


def outcome_of(report: pytest.TestReport) -> Optional[Tuple[str, Optional[str]]]:
    """(outcome, reason) of a report that finishes a case's test, else None (the setup or teardown
    report of a test that goes on)."""
    xfail = getattr(report, "wasxfail", None)
    if report.when == "call":
        if report.passed:
            return ("xpassed", xfail) if xfail is not None else ("passed", None)
        if report.failed:
            return "failed", None
    if report.skipped:
        if xfail is not None:
            return "xfailed", xfail
        lr = report.longrepr
        reason = lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)
        return "skipped", reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
    return None
