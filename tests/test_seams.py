"""The seams between the suite's stages are typed and single (issue 21, item 2): a backend and the
host it runs in are `typing.Protocol`s that the built-ins satisfy, the report files are named in one
registry that every writer and reader uses, the CANN library search is written once for the
backend and the doctor, and no function of suite/ takes a long positional list."""
from __future__ import annotations

import ast
import json
import os
import shutil
import typing
from pathlib import Path

import pytest

from suite.backends import cann
from suite.backends import _aclnn_lib as lib
from suite.backends.aclnn import AclnnBackend
from suite.backends.reference import ReferenceBackend
from suite.report import journal
from suite.run.calls import InProcess
from suite.run.host import Hosted
from tests.reportkit import sample_record

SUITE = Path(__file__).resolve().parents[1] / "suite"
RUN = {"backend": {"spec": "reference", "options": {}}, "products": ["atlas-a2"], "standard_override": None,
       "manifest_hash": "0" * 64, "machine": {}, "shard": None}


# -- the backend and the host as protocols ----------------------------------------------------
def _builtin_backends():
    out = [ReferenceBackend(), AclnnBackend(lib_dir="/nonexistent-cann")]   # (no CANN: made, unavailable)
    try:
        from suite.backends.torch_backend import TorchBackend
        out.append(TorchBackend())
    except ImportError:                              # torch is optional; the others still count
        pass
    return out


@pytest.mark.parametrize("backend", _builtin_backends(), ids=lambda b: type(b).__name__)
def test_every_builtin_backend_is_a_backend_and_declares_its_hooks_as_the_contract_types_them(backend):
    from suite.run import seams
    assert isinstance(backend, seams.Backend)
    hints = typing.get_type_hints(seams.BackendHooks)
    declared = [n for n in hints if n in vars(type(backend)) or n in vars(backend)]
    assert declared, "every built-in declares some optional hook"
    for name in declared:
        value = getattr(backend, name)
        origin = typing.get_origin(hints[name]) or hints[name]
        assert isinstance(value, origin), f"{type(backend).__name__}.{name} is {value!r}, not {hints[name]}"
    if hasattr(backend, "close"):
        assert callable(backend.close)


def test_an_object_without_run_is_not_a_backend():
    from suite.run import seams
    class NoRun:
        name = "x"
    assert not isinstance(NoRun(), seams.Backend)


def test_both_hosts_satisfy_the_host_protocol_the_runner_calls():
    from suite.run import seams
    assert isinstance(InProcess(ReferenceBackend()), seams.Host)
    assert isinstance(Hosted(None, {}), seams.Host)          # (not started: no process yet)
    members = {n for n in vars(seams.Host) if not n.startswith("_")} | set(typing.get_type_hints(seams.Host))
    # Every member of the protocol is what the runner (and the plugin, which closes it) uses of a host.
    users = "".join((SUITE / p).read_text() for p in ("run/runner.py", "plugin/__init__.py"))
    for name in members:
        assert f"host.{name}" in users, f"Host.{name} is used by neither the runner nor the plugin"


def test_the_runner_is_annotated_with_the_host_protocol():
    from suite.run import seams
    from suite.run.runner import Runner
    assert typing.get_type_hints(Runner)["host"] is seams.Host


def test_the_in_process_host_answers_the_optional_questions_as_no():
    host = InProcess(ReferenceBackend())
    assert host.copies == 0 and host.deadline_for(10 ** 9) is None
    assert host.take_output() is None and host.twin() is None


# -- the report files: one registry -----------------------------------------------------------
def _doc():
    from suite.report import results
    return results.make_document(RUN, [sample_record("a")], None)


def test_the_reports_written_are_exactly_the_registry_s(tmp_path):
    from suite.report import formats
    formats.write_reports(tmp_path, _doc())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.file for f in formats.FORMATS)
    assert {f.file for f in formats.FORMATS} >= {"results.json", "summary.md", "report.html"}
    assert formats.JOURNAL == journal.JOURNAL == "results.journal"


def test_a_new_format_is_one_entry_and_recover_writes_it_too(tmp_path, monkeypatch, capsys):
    from suite.report import formats
    extra = formats.Format("lines", "records.txt", lambda path, doc: path.write_text(
        "\n".join(r["key"] for r in doc["records"])))
    monkeypatch.setattr(formats, "FORMATS", (*formats.FORMATS, extra))
    (tmp_path / formats.JOURNAL).write_text(json.dumps({"journal": journal.VERSION, "run": RUN}) + "\n"
                                            + json.dumps(sample_record("a")) + "\n")
    from suite.cli.main import main
    assert main(["report", "recover", str(tmp_path)]) == 0
    assert (tmp_path / "records.txt").read_text() == "a"
    assert "records.txt" in capsys.readouterr().out            # the message names what it wrote
    assert "records.txt" in formats.file_list()


def _string_constants(path: Path):
    tree = ast.parse(path.read_text())
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings:
            yield n.lineno, n.value


def _names_a_file(text: str, name: str, results: str) -> bool:
    """`results.json` is also the name of the document type (its schema, a diff's inputs): only as
    a path, or a list of files, is it a report file; the other names are files only."""
    if name != results:
        return name in text
    return text == name or f"/{name}" in text or f"{name}, " in text


def test_no_module_but_the_registry_names_a_report_file_in_its_code():
    from suite.report import formats
    names = {f.file for f in formats.FORMATS} | {formats.JOURNAL}
    found = [f"{p.relative_to(SUITE.parent)}:{line}: {text!r}"
             for p in SUITE.rglob("*.py") if p.name != "formats.py" or p.parent.name != "report"
             for line, text in _string_constants(p) if any(_names_a_file(text, n, formats.RESULTS) for n in names)]
    assert not found, "report file names outside suite/report/formats.py:\n" + "\n".join(found)


# -- the CANN library search, once ------------------------------------------------------------
def _fake_toolkit(root: Path) -> Path:
    """A toolkit whose lib64 holds a loadable libascendcl.so (a copy of Python's own _ctypes
    extension: any shared object that ctypes.CDLL opens will do)."""
    import _ctypes
    (root / "lib64").mkdir(parents=True)
    shutil.copy(_ctypes.__file__, root / "lib64" / lib.RUNTIME_LIB)
    return root


@pytest.mark.parametrize("where", ["ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH"])
def test_doctor_names_the_toolkit_whose_library_the_backend_loads(tmp_path, where):
    """ASCEND_HOME_PATH names a folder without the libraries; the next place the backend searches
    holds them. The doctor's toolkit is the one the backend's library came from."""
    real = _fake_toolkit(tmp_path / "real")
    (tmp_path / "stale").mkdir()
    env = {"ASCEND_HOME_PATH": str(tmp_path / "stale"),
           where: str(real / "opp") if where == "ASCEND_OPP_PATH" else str(real)}
    found = lib.load_one(lib.RUNTIME_LIB, lib.search_dirs(None, env), loader=False)
    assert Path(found.path).parent.parent == real
    toolkit = cann.toolkit_of(None, env)
    assert toolkit["path"] == str(real) and toolkit["exists"]


def test_the_backend_and_the_doctor_read_one_search_list(tmp_path):
    env = {"ASCEND_HOME_PATH": "/a", "ASCEND_TOOLKIT_HOME": "/b", "ASCEND_OPP_PATH": "/c/opp"}
    places = cann.library_dirs(None, env)
    assert lib.search_dirs(None, env) == [(p.dir, p.why) for p in places]
    assert [p.toolkit for p in places][::2] == ["/a", "/b", "/c"]
    # nothing holds a library: the doctor names the first place, as before
    assert cann.toolkit_of(None, env)["path"] == "/a"
    assert lib.search_dirs(str(tmp_path), env) == [(str(tmp_path), "lib_dir"),
                                                  (str(tmp_path / "lib64"), "lib_dir/lib64")]


def test_toolkit_search_is_written_once():
    """The variables the search reads are named in suite/backends/cann.py alone."""
    for p in SUITE.rglob("*.py"):
        if p == SUITE / "backends" / "cann.py":
            continue
        for line, text in _string_constants(p):
            assert text not in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH"), \
                f"{p.relative_to(SUITE.parent)}:{line} names {text}"


# -- no long positional lists -----------------------------------------------------------------
MAX_POSITIONAL = 6


def test_no_function_of_suite_takes_more_than_six_positional_parameters():
    """Outside the operator modules (suite/ops/, whose `_sig` helpers the operator family step owns)."""
    long = []
    for p in SUITE.rglob("*.py"):
        if p.parent.name == "ops":
            continue
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [a.arg for a in n.args.posonlyargs + n.args.args if a.arg not in ("self", "cls")]
                if len(names) > MAX_POSITIONAL:
                    long.append(f"{p.relative_to(SUITE.parent)}:{n.lineno} {n.name}({', '.join(names)})")
    assert not long, "\n".join(long)


def _is_fixture(fn: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(d) for d in fn.decorator_list)


def test_no_helper_of_the_tests_takes_more_than_six_positional_parameters():
    """The tests' own helpers too (a call like measure(g, x, dt, s, n, p, "float16") reads wrong
    silently when a parameter moves); a test or a fixture takes what pytest hands it, by name."""
    tests = SUITE.parent / "tests"
    long = []
    for p in sorted(tests.rglob("*.py")):
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("test_") \
                    and not _is_fixture(n):
                names = [a.arg for a in n.args.posonlyargs + n.args.args if a.arg not in ("self", "cls")]
                if len(names) > MAX_POSITIONAL:
                    long.append(f"{p.relative_to(tests.parent)}:{n.lineno} {n.name}({', '.join(names)})")
    assert not long, "\n".join(long)


def test_setup_error_is_its_own_type_not_a_str():
    from suite.plugin import SetupError
    e = SetupError("bad backend")
    assert not isinstance(e, str) and e.message == "bad backend"
    import dataclasses
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.message = "other"                                   # type: ignore[misc]


def test_the_judging_tallies_say_what_they_count():
    from suite.judge import judging, rules
    assert not hasattr(rules, "Tally") and not hasattr(judging, "_Tally")
    assert set(typing.get_type_hints(rules.RuleCount)) == {"n", "n_rule", "mean_ulp", "sums", "dtype"}
