"""benchmarks/mutation_score.py prints the score docs/mutation-score.md quotes: what it counts as
killed, equivalent and not run, and which file a mutant belongs to, must be right."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
import yaml

from tests.reportkit import ROOT


def _load():
    spec = importlib.util.spec_from_file_location("mutation_score", ROOT / "benchmarks" / "mutation_score.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ms = _load()


@pytest.mark.parametrize("name,path", [
    ("suite.report.shard.x_parse__mutmut_3", "suite/report/shard.py"),
    ("suite.run.runner.xǁRunnerǁcheck_numbers__mutmut_12", "suite/run/runner.py"),
    ("suite.plugin.x_pytest_configure__mutmut_1", "suite/plugin/__init__.py"),      # a package's own module
    ("suite.judge.x_f__mutmut_2", "suite/judge/__init__.py"),
])
def test_a_mutant_is_counted_in_its_file(name: str, path: str) -> None:
    assert ms.module_of(name) == path
    assert (ROOT / path).is_file()


def test_a_listed_equivalent_counts_only_once_it_ran_and_survived() -> None:
    statuses = {"suite.report.shard.x_a__mutmut_1": "killed", "suite.report.shard.x_a__mutmut_2": "survived",
                "suite.report.shard.x_a__mutmut_3": "survived", "suite.report.shard.x_a__mutmut_4": "not checked",
                "suite.report.shard.x_a__mutmut_5": "timeout"}
    listed = {n: {"was": "", "now": "", "why": "w"} for n in
              ("suite.report.shard.x_a__mutmut_3", "suite.report.shard.x_a__mutmut_4")}
    (row,) = ms.score(statuses, listed, check_lines=False)
    assert (row["mutants"], row["killed"], row["survived"], row["equivalent"], row["other"]) == (5, 2, 1, 1, 1)
    assert row["score"] == pytest.approx(2 / 4)


def test_without_mutmut_it_says_so_in_one_line(tmp_path) -> None:
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mutation_score.py"), "--report"], cwd=ROOT,
                       env={"PATH": str(tmp_path)}, capture_output=True, text=True)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip() == "mutation_score: mutmut is not installed here (pip install mutmut; docs/mutation-score.md)"


def test_survivors_are_the_unlisted_mutants_that_ran_and_survived() -> None:
    statuses = {"suite.report.shard.x_a__mutmut_1": "killed", "suite.report.shard.x_a__mutmut_2": "survived",
                "suite.report.shard.x_a__mutmut_3": "survived", "suite.report.shard.x_a__mutmut_4": "not checked",
                "suite.report.shard.x_a__mutmut_5": "timeout", "suite.judge.rules.x_b__mutmut_1": "survived"}
    listed = {"suite.report.shard.x_a__mutmut_3": {"was": "", "now": "", "why": "w"}}
    assert ms.survivors(statuses, listed, "suite/report/shard.py") == ["suite.report.shard.x_a__mutmut_2"]


class _OneOfEach(yaml.SafeLoader):
    """safe_load keeps the last of two equal keys silently; this loader refuses the second."""


def _mapping_once(loader, node):
    keys = [loader.construct_object(k) for k, _ in node.value]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise yaml.constructor.ConstructorError(None, None, f"listed twice: {twice}", node.start_mark)
    return loader.construct_mapping(node)


_OneOfEach.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_once)


def test_no_mutant_is_listed_twice_as_equivalent() -> None:
    """A merge of two branches' lists once left a name twice; the second entry would hide the first."""
    with pytest.raises(yaml.constructor.ConstructorError, match="listed twice"):
        yaml.load("a:\n  why: x\nb: 1\na: 2\n", Loader=_OneOfEach)
    assert yaml.load(ms.EQUIVALENT.read_text(), Loader=_OneOfEach)


def test_the_listed_equivalents_are_yaml_each_with_its_lines_and_reason_in_a_module_of_only_mutate() -> None:
    """tests/mutation/equivalent.yaml as the score reads it: a file that is no YAML (a colon in an
    unquoted line) or an entry without was/now/why would stop the score only when someone runs it."""
    listed = ms.load_equivalents()
    assert len(listed) > 50
    for name, entry in listed.items():
        assert all(isinstance(entry.get(k), str) and entry[k].strip() for k in ("was", "now", "why")), name
    tomllib = pytest.importorskip("tomllib")                 # Python 3.11 on
    mutated = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"])
    assert [n for n in listed if ms.module_of(n) not in mutated] == []
