"""The CLI's front door: bare `aclnn-conform`, or a group with no command, lists what it can do
(argparse alone says "the following arguments are required: group")."""
from __future__ import annotations

import subprocess
import sys

import pytest

from suite.cli.main import build_parser, main
from tests.waiting import HANG_S

LEAVES = ["doctor", "golden generate", "golden check", "cases validate", "cases list", "cases import", "ops",
          "report diff", "report merge", "report recover"]


def test_bare_command_lists_every_command_with_its_help(capsys) -> None:
    assert main([]) == 2
    out, err = capsys.readouterr()
    lines = out.splitlines()
    for leaf in LEAVES:
        assert any(s.strip().split("  ")[0] == leaf for s in lines), (leaf, out)
    assert "can the suite run here?" in out and "write goldens for every numeric case" in out
    assert "aclnn-conform COMMAND --help" in out
    assert "required" not in out + err


@pytest.mark.parametrize("group", ["golden", "cases", "report"])
def test_a_group_without_a_command_lists_its_own(group: str, capsys) -> None:
    assert main([group]) == 2
    out = capsys.readouterr().out
    mine = [leaf for leaf in LEAVES if leaf.startswith(group + " ")]
    assert mine and all(leaf in out for leaf in mine)
    assert not any(leaf in out for leaf in LEAVES if not leaf.startswith(group + " ") and " " in leaf)


def test_the_listing_is_the_parser_itself() -> None:
    """A command added to the parser appears in the listing: nothing is written twice."""
    from suite.cli.main import commands
    p = build_parser()
    assert [name for name, _ in commands(p)] == LEAVES


def test_the_installed_script_says_the_same() -> None:
    r = subprocess.run([sys.executable, "-m", "suite.cli"], capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 2 and "golden check" in r.stdout and "Traceback" not in r.stderr


def test_generates_progress_is_a_line_per_case_in_a_terminal_and_one_a_second_in_a_log(monkeypatch, capsys) -> None:
    from suite.cli import progress
    clock = iter([0.0, 0.4, 1.0, 1.5, 2.2])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    log = progress.Progress()
    for i in range(5):
        log(f"{i + 1}/5 cases")
    log.end()
    assert capsys.readouterr().err.splitlines() == ["  1/5 cases", "  3/5 cases", "  5/5 cases"]
    tty = progress.Progress()
    tty.tty = True
    for i in range(3):
        tty(f"{i + 1}/3 cases")
    tty.end()
    assert capsys.readouterr().err == "".join(f"\r\033[K  {i}/3 cases" for i in (1, 2, 3)) + "\n"
