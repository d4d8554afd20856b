"""The pytest11 entry point (pyproject.toml): it loads the suite into a pytest run that asks for it,
and leaves every other pytest run in the environment alone.

A run asks for the suite when its command line (with addopts and PYTEST_ADDOPTS) gives one of
TRIGGERS and nothing else in the run defines that option (no other plugin, no initial conftest.py of
the project being tested): `pytest --backend mykernels.backend:Backend --op NAME` in a
kernel team's own folder. The suite's plugin (suite.plugin) is then loaded as `-p suite.plugin` would
load it, and, with no test path on the command line, it collects the conformance tests
(suite/plugin/__init__.py). Any other run sees no option, hook or test of the suite: another pytest
project, or one whose conftest.py defines a --backend of its own, which keeps it. `-p suite.plugin`
and the checkout's conftest.py load the suite as before; `-p no:aclnn-conformance` turns this off.

Imports pytest only, and nothing of the suite at its top level: every pytest run in the environment
imports this module."""
from __future__ import annotations

from argparse import ArgumentError
from typing import List, Sequence

import pytest

PLUGIN = "suite.plugin"
TRIGGERS = ("--backend", "--op")


def named(args: Sequence[str]) -> List[str]:
    """The TRIGGERS a command line gives (`--backend X` or `--backend=X`), before any `--`."""
    args = list(args)
    args = args[:args.index("--")] if "--" in args else args
    return [t for t in TRIGGERS if any(a == t or a.startswith(t + "=") for a in args)]


def _defined(parser: pytest.Parser, option: str) -> bool:
    """Whether something already loaded (a plugin, an initial conftest.py) defines `option`."""
    try:
        _, unknown = parser.parse_known_and_unknown_args([option, "x"])
    except (pytest.UsageError, SystemExit):
        return True                      # defined, and it takes no value the way the suite's does
    return option not in unknown


@pytest.hookimpl(hookwrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: List[str]):
    outcome = yield                      # the initial conftest.py files first: theirs win
    pm = early_config.pluginmanager
    asked = named(args)
    if not asked or pm.has_plugin(PLUGIN) or pm.is_blocked(PLUGIN):
        return
    if any(_defined(parser, t) for t in asked):
        return                           # the option is another plugin's or conftest's: theirs
    try:
        pm.import_plugin(PLUGIN)
    except (ValueError, ArgumentError) as e:     # an option of the suite's is defined already
        error = pytest.UsageError(
            f"aclnn-conformance: {e}: another plugin or conftest.py defines an option of the suite's; "
            f"run the suite where that one is not loaded (`-p no:NAME` turns a plugin off)")
        if not hasattr(outcome, "force_exception"):    # pluggy before 1.1
            raise error
        outcome.force_exception(error)        # (raised here, pluggy would add a warning to the line)
