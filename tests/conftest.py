"""The project's own tests: the heavy tier (whole-suite self-tests, `@pytest.mark.heavy`) runs only
when a marker expression asks for it (`python -m pytest -n 2 -m heavy tests`), so `.ci/run` stays
within its time."""
from __future__ import annotations

import os

# The end-to-end tests start a pytest of the suite each (a few hundred in all). Where the environment
# sets PYTHONDONTWRITEBYTECODE (these machines do), each of them compiled every Python module it imports
# afresh: about 2 of the 3.8 s of CPU a small run costs. Their bytecode caches (git-ignored) may be
# written; nothing in the tests depends on them.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_collection_modifyitems(config, items) -> None:
    if config.option.markexpr:
        return
    heavy = [i for i in items if i.get_closest_marker("heavy")]
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = [i for i in items if not i.get_closest_marker("heavy")]
