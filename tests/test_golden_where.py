"""Whose goldens a command writes (issue 42, item 1): `golden generate` given a user's case file
never writes or removes the suite's own goldens; its goldens go beside the file; the suite's are
written from all of its cases only; every hint prints the exact command that is safe."""
from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Dict

import pytest

from suite.cli import main as cli
from suite.cases.load import load_cases
from suite.golden import build as golden_build
from suite.golden import where
from suite.golden.source import GoldenError
from suite.golden.store import GoldenStore
from tests.core_helpers import KL_TINY, MSE_TINY, write


MY = KL_TINY.replace("[2x3, 3, 2x3]", "[2x4, 4, 2x4]")          # a user's case file: other data


def _files(folder: Path) -> Dict[str, str]:
    """Every file under `folder` and the sha256 of its bytes."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    """A data folder (as $ACLNN_CONFORMANCE_HOME names one) with two case files and their goldens,
    and a user's case file outside it."""
    data = tmp_path / "home"
    (data / "cases").mkdir(parents=True)
    write(data / "cases", "mse.yaml", MSE_TINY)
    write(data / "cases", "kl.yaml", KL_TINY)
    monkeypatch.setenv("ACLNN_CONFORMANCE_HOME", str(data))
    golden_build.generate(load_cases([data / "cases"])[0], data / "golden")
    (tmp_path / "mine").mkdir()
    write(tmp_path / "mine", "my.yaml", MY)
    return data


def test_generate_given_a_users_case_file_leaves_the_suites_goldens_and_writes_beside_it(
        home: Path, tmp_path: Path, capsys) -> None:
    before = _files(home / "golden")
    mine = tmp_path / "mine" / "my.yaml"
    assert cli.main(["golden", "generate", "--cases", str(mine)]) == 0
    assert _files(home / "golden") == before, "the suite's goldens were rewritten"
    out = capsys.readouterr().out
    assert f"in {tmp_path / 'mine' / 'my.golden'}" in out and "0 removed" in out
    assert golden_build.check(load_cases([mine])[0], tmp_path / "mine" / "my.golden") == []
    assert cli.main(["golden", "check", "--cases", str(mine)]) == 0       # the same folder by default


def test_generate_refuses_a_users_case_file_into_the_suites_goldens_with_the_safe_command(
        home: Path, tmp_path: Path, capsys) -> None:
    before = _files(home / "golden")
    mine = tmp_path / "mine" / "my.yaml"
    assert cli.main(["golden", "generate", "--cases", str(mine), "--golden-dir", str(home / "golden")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: --golden-dir {home / 'golden'}: the suite's own goldens, which a command given your "
                   f"case file {mine} never writes; run `aclnn-conform golden generate --cases {mine} "
                   f"--golden-dir {tmp_path / 'mine' / 'my.golden'}`")
    assert _files(home / "golden") == before and not (tmp_path / "mine" / "my.golden").exists()
    # the same with the suite's cases beside it: still the user's file
    assert cli.main(["golden", "generate", "--cases", str(home / "cases"), "--cases", str(mine),
                     "--golden-dir", str(home / "golden")]) == 2
    assert _files(home / "golden") == before


def test_generate_refuses_part_of_the_suites_cases_into_its_goldens(home: Path, capsys) -> None:
    before = _files(home / "golden")
    assert cli.main(["golden", "generate", "--cases", str(home / "cases" / "mse.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: --cases {home / 'cases' / 'mse.yaml'}: part of the suite's cases") \
        and "run `aclnn-conform golden generate`" in err
    assert _files(home / "golden") == before
    assert cli.main(["golden", "generate", "--cases", str(home / "cases")]) == 0       # all of them: fine
    assert cli.main(["golden", "generate"]) == 0
    assert _files(home / "golden") == before


def test_several_of_a_users_case_paths_need_a_golden_dir(home: Path, tmp_path: Path, capsys) -> None:
    other = write(tmp_path / "mine", "other.yaml", MSE_TINY)
    assert cli.main(["golden", "generate", "--cases", str(tmp_path / "mine" / "my.yaml"), "--cases", str(other)]) == 2
    assert "several case paths of your own; name the folder for their goldens with --golden-dir" \
        in capsys.readouterr().err
    assert cli.main(["golden", "generate", "--cases", str(tmp_path / "mine" / "my.yaml"), "--cases", str(other),
                     "--golden-dir", str(tmp_path / "both")]) == 0
    assert (tmp_path / "both" / "manifest.json").exists()


def test_a_users_golden_folder_is_named_after_the_file_or_folder_beside_it(tmp_path: Path) -> None:
    (tmp_path / "team" / "cases").mkdir(parents=True)
    assert where.beside(tmp_path / "my.yaml") == tmp_path / "my.golden"
    assert where.beside(tmp_path / "team" / "cases") == tmp_path / "team" / "cases.golden"


def test_the_hint_of_a_missing_golden_is_the_command_that_remakes_that_folder_alone(
        home: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine" / "my.yaml"
    case = next(c for c in load_cases([mine])[0] if c.expect == 0)
    folder = tmp_path / "theirs"
    golden_build.generate(load_cases([home / "cases"])[0], folder)
    store = GoldenStore(folder, command=where.command([mine], folder))
    with pytest.raises(GoldenError) as e:
        store.entry(case)
    assert str(e.value) == (f"no golden for {case.datakey}; run `aclnn-conform golden generate "
                            f"--cases {mine} --golden-dir {folder}`")
    # the suite's folder: the bare command (it makes the suite's goldens from all its cases)
    assert where.command([], home / "golden") == where.command([mine], home / "golden") \
        == "aclnn-conform golden generate"
    assert where.command([Path("a b.yaml")], Path("g")) == "aclnn-conform golden generate --cases 'a b.yaml' --golden-dir g"
    stale = dataclasses.replace(case, datakey="NoSuch")
    with pytest.raises(GoldenError, match="no golden manifest; run `aclnn-conform golden generate --cases"):
        GoldenStore(tmp_path / "none", command=where.command([mine], tmp_path / "none")).entry(stale)


def test_golden_check_names_the_command_for_its_folder(home: Path, tmp_path: Path, capsys) -> None:
    mine = tmp_path / "mine" / "my.yaml"
    assert cli.main(["golden", "generate", "--cases", str(mine)]) == 0
    write(tmp_path / "mine", "my.yaml", MY.replace("[sum, batchmean]", "[sum]"))
    assert cli.main(["golden", "check", "--cases", str(mine)]) == 1
    err = capsys.readouterr().err
    assert f"run `aclnn-conform golden generate --cases {mine} --golden-dir {tmp_path / 'mine' / 'my.golden'}`" in err


def test_a_case_is_the_suites_own_when_its_file_is_in_the_data_folders_cases(home: Path, tmp_path: Path) -> None:
    own = load_cases([home / "cases"])[0][0]
    theirs = load_cases([tmp_path / "mine" / "my.yaml"])[0][0]
    assert where.is_own_case(own) and not where.is_own_case(theirs)
    assert where.is_own(home / "cases") and where.is_own(home / "cases" / "x.yaml")
    assert not where.is_own(home / "cases2") and not where.is_own(home)
