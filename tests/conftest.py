"""The project's own tests: the heavy tier (whole-suite self-tests, `@pytest.mark.heavy`) runs only
when a marker expression asks for it (`python -m pytest -n 2 -m heavy tests`), so `.ci/run` stays
within its time. The conformance suite collected beside them (the README's test command) runs its
CI sample (tests/sampling.py); a run of the suite without tests/ (`pytest`, `pytest --backend X`)
runs every case, though pytest loads this file for it at the root."""
from __future__ import annotations

import os

import pytest

from tests import sampling

# The end-to-end tests start a pytest of the suite each (a few hundred in all). Where the environment
# sets PYTHONDONTWRITEBYTECODE (these machines do), each of them compiled every Python module it imports
# afresh: about 2 of the 3.8 s of CPU a small run costs. Their bytecode caches (git-ignored) may be
# written; nothing in the tests depends on them.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    # Before pytest's own `-m` selection (tryfirst), which then sees the sample's heavy marks.
    sampling.mark_conformance_sample(items)
    if config.option.markexpr:
        return
    heavy = [i for i in items if i.get_closest_marker("heavy")]
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = [i for i in items if not i.get_closest_marker("heavy")]


@pytest.fixture(scope="session")
def emu_dir(tmp_path_factory) -> str:
    """The host emulator with the made-up probe operator compiled in (tests/emulator/probe), built
    once per process: every test file that loads it in-process must share this one build, because
    the dynamic loader resolves a second build's libnnopbase.so and libopapi.so against the first
    build's libascendcl.so (same soname), so the two would count and check memory apart."""
    from tests import aclnn_checks as C
    from tests.emulator.build import BuildError, build, find_compiler
    if find_compiler() is None:
        pytest.skip("no C compiler (looked for $CC, cc, gcc, clang on PATH): cannot build the emulator")
    try:
        return str(build(tmp_path_factory.mktemp("emu") / "lib64", extra_ops=[C.PROBE_SOURCE]))
    except BuildError as exc:
        pytest.skip(f"emulator build failed: {exc}")


@pytest.fixture(autouse=True)
def _no_wall_left_over():
    """A session of the suite run inside this process (pytester) asks for the mount-namespace wall
    (suite/run/namespace.py) for the rest of the process; the next test's own backend processes
    start as they would in a process that has hosted no session's backend."""
    yield
    from suite.run import namespace
    namespace._wanted = None
