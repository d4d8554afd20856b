"""Which tests a conformance run collects: `pytest --backend X` or `--op Y` with no test path runs
the suite's conformance tests wherever it is started (suite/plugin/__init__.py's pytest_configure
calls collect_the_suite); and a conformance test module's kind, as its CASE_KIND line sets it
(suite/plugin/report.py reads it too)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"     # the conformance tests
# A conformance test module's kind, as it sets it at its top level (suite/plugin/report.py reads it too)
CASE_KIND_LINE = re.compile(r"^CASE_KIND\s*=\s*(?:Kind\.(\w+)|[\"'](\w+)[\"'])", re.M)


def collect_the_suite(config: pytest.Config) -> None:
    """`pytest --backend X` or `--op Y` with no test path on the command line runs the conformance
    tests wherever it is started: a kernel team's own folder (suite/pytest_entry.py loaded the suite
    there), or a subfolder of the checkout, where pytest would otherwise collect what lies there (or
    the project's `testpaths`). A test path given is run as given, and so is a folder that holds
    conformance test modules of its own (a test_*.py that sets CASE_KIND)."""
    opt = config.option
    if config.args_source != pytest.Config.ArgsSource.ARGS and (opt.backend is not None or opt.op) \
            and not _holds_conformance_tests(Path(config.invocation_params.dir)):
        config.args = [str(CONFORMANCE)]


def _holds_conformance_tests(folder: Path) -> bool:
    for path in folder.glob("test_*.py"):
        try:
            if CASE_KIND_LINE.search(path.read_text(encoding="utf-8")):
                return True
        except (OSError, UnicodeDecodeError):
            continue
    return False
