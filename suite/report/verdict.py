"""A run's verdict: FAIL for a failed case, an incident outside any case, a run that did not
finish, or nothing judged (no case ran, or every case skipped). Else PASS. Known failures (xfailed)
and known failures that now pass (xpassed) do not fail a run; a strict one that passed is recorded
as failed.

`reasons` is the one statement of these rules: the reports' banner reads it from the results
document (`verdict`), the run's exit status (suite/plugin/report.py exit_status) from the live
session, so that report.html says PASS exactly when the run exits 0."""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Tuple

from suite.report.results import is_complete

OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed")


def counts(doc: Mapping) -> Dict[str, int]:
    """The five outcomes' counts of `doc`, and `errors`: the cases in which the backend's process
    ended or was stopped (a record's `fault`) plus the incidents outside any case."""
    c = {o: int(doc["counts"].get(o, 0)) for o in OUTCOMES}
    c["errors"] = sum(1 for r in doc["records"] if r.get("fault")) + len(doc.get("incidents") or [])
    return c


def reasons(outcomes: Mapping[str, int], records: int, incidents: int, incomplete: Optional[str]) -> List[str]:
    """Why a run is not a pass, each reason one short line (none: it passed), from the records'
    outcome counts, how many records and incidents there are, and why the run did not finish
    (None: it did)."""
    c = {o: int(outcomes.get(o, 0)) for o in OUTCOMES}
    why = []
    if c["failed"]:
        why.append(f"{c['failed']} failed")
    if incidents:
        why.append(f"{incidents} incident{'s' if incidents != 1 else ''} outside any case")
    if incomplete is not None:
        why.append(f"the run did not finish: {incomplete}")
    judged = c["passed"] + c["failed"] + c["xfailed"] + c["xpassed"]
    if not records:
        why.append("no case ran")
    elif not judged:
        why.append("nothing judged: every case skipped")
    return why


def verdict(doc: Mapping) -> Tuple[bool, List[str]]:
    """(passed, why not) of a results document: each reason one short line, empty for a run that passed."""
    incomplete = None if is_complete(doc) else (doc.get("incomplete") or "incomplete")
    why = reasons(counts(doc), len(doc["records"]), len(doc.get("incidents") or []), incomplete)
    return not why, why


def options_text(options: object) -> str:
    """Backend options as `key=value` words (as --backend-opt takes them), 'none' for none."""
    if not isinstance(options, Mapping) or not options:
        return "none" if not options else str(options)
    return " ".join(f"{k}={v}" for k, v in options.items())


def _field_text(key: str, v: object) -> str:
    if key == "options":
        return options_text(v)
    if v is None:
        return "-"
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v) or "-"
    return str(v)


def backend_change(base: Mapping, new: Mapping) -> str:
    """What differs between two runs' `backend` fields, field by field (`spec fake -> other;
    options none -> factor=2`): a reader of `report diff` sees the change, not two Python dicts."""
    keys = list(dict.fromkeys([*base, *new]))
    return "; ".join(f"{k} {_field_text(k, base.get(k))} -> {_field_text(k, new.get(k))}"
                     for k in keys if base.get(k) != new.get(k))
