"""The run's journal: every record appended to --report-dir as its case finishes, so that a run
killed halfway (SIGKILL, a machine that went down, a CI job cancelled) still leaves every finished
case on disk. `aclnn-conform report recover DIR` turns it into the reports (suite/report/formats.py),
marked incomplete. A run that ends normally writes its reports and removes the journal.

Format: JSON lines. The first is {"journal": 1, "run": {...}} with the run's fields known at its
start; every other line is one results.json record. A line cut short by the kill is dropped."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, IO, Mapping, Optional

from suite.report import results
from suite.report.formats import JOURNAL
from suite.report.results import ResultsError

VERSION = 1
IN_PROGRESS = ("the run is in progress, or ended without writing its reports (killed?): "
               f"`aclnn-conform report recover DIR` recovers its finished cases from {JOURNAL}")


class Journal:
    """Appends records to DIR/<JOURNAL>, one flushed line each."""

    def __init__(self, folder: Path, run: Mapping[str, Any]) -> None:
        self.path = Path(folder) / JOURNAL
        self._f: Optional[IO[str]] = open(self.path, "w", encoding="utf-8")
        self._line({"journal": VERSION, "run": dict(run)})

    def _line(self, obj: Mapping) -> None:
        if self._f is not None:
            self._f.write(json.dumps(obj, allow_nan=False, separators=(",", ":")) + "\n")
            self._f.flush()

    def add(self, record: Mapping) -> None:
        self._line(record)

    def close(self, remove: bool) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
        if remove:
            self.path.unlink(missing_ok=True)


def recover(path: Path) -> Dict[str, Any]:
    """The results.json document of a journal, marked incomplete."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: no journal (a run writes one into its --report-dir while it runs, "
                           f"and removes it once it has written its reports)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path}: cannot read: {e}") from None
    lines = text.split("\n")
    complete_last = text.endswith("\n")
    records: Dict[str, Any] = {}
    run: Optional[Dict[str, Any]] = None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            if i == len(lines) and not complete_last:
                break                          # the line the kill cut short
            raise ResultsError(f"{path}:{i}: not a JSON line") from None
        if run is None:
            if not isinstance(obj, dict) or obj.get("journal") != VERSION or not isinstance(obj.get("run"), dict):
                raise ResultsError(f"{path}:{i}: not a journal of version {VERSION} (its first line names the run)")
            run = obj["run"]
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("key"), str):
            raise ResultsError(f"{path}:{i}: not a record")
        records[obj["key"]] = obj
    if run is None:
        raise ResultsError(f"{path}: empty journal")
    doc = results.make_document(run, records.values(),
                                f"killed: the run ended without writing its reports; {len(records)} "
                                f"finished cases recovered from its journal")
    errors = results.validate(doc)
    if errors:
        raise ResultsError(f"{path}: the journal does not make a valid results.json: " + "; ".join(errors[:5]))
    return doc
