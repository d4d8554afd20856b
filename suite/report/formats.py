"""The files a run writes into --report-dir, in one registry: each report format's name, its file
and its writer, and the journal's file. The plugin, `aclnn-conform report recover` and every
message that names the reports read them from here, so a new format is one entry of FORMATS
(docs/results-schema.md, "Report files")."""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Tuple

from suite.common.files import atomic_write
from suite.report import html, results, summarymd


@dataclass(frozen=True)
class Format:
    """One report: `write(path, doc)` writes the results document `doc` to `path`, atomically (a
    killed run must never leave half a report for the CI gate to read)."""

    name: str
    file: str
    write: Callable[[Path, Mapping], None]


def _text(render: Callable[[Mapping], str]) -> Callable[[Path, Mapping], None]:
    return lambda path, doc: atomic_write(path, render(doc).encode())


RESULTS = "results.json"                 # the record other tools read (the gate's diff and merge)
JOURNAL = "results.journal"              # the records of a run still going, or killed (suite/report/journal.py)
FORMATS: Tuple[Format, ...] = (
    Format("results", RESULTS, results.write),
    Format("summary", "summary.md", _text(summarymd.markdown)),
    Format("html", "report.html", _text(html.render)),
)


def write_reports(folder: Path, doc: Mapping) -> None:
    """Every format of FORMATS, each written atomically into `folder`."""
    for f in FORMATS:
        f.write(Path(folder) / f.file, doc)


def file_list() -> str:
    """The report files, as messages name them: 'results.json, summary.md, report.html'."""
    return ", ".join(f.file for f in FORMATS)


def unwritable(folder: Path) -> Optional[str]:
    """Why `folder` cannot take the reports (made if missing), or None: found before the run, not
    after it."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return f"cannot write there: {e.strerror or e}"
    return None
