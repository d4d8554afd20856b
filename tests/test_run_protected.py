"""suite/run/protected.py: which paths, besides the run's own files, a confined backend may not write
(the interpreter, every folder the next run imports or runs commands from, the home folder's
start-up files, the temporary folder) and which it may always write. What a confined process can
do with them: tests/test_run_confine.py; attacks in real runs: tests/test_confine_startup.py."""
from __future__ import annotations

import os
import site
import sys
import zipfile

from suite.run import protected


def test_the_interpreter_s_own_files_are_protected_the_user_site_even_where_it_is_missing(tmp_path, monkeypatch):
    missing = tmp_path / "home" / ".local" / "lib" / "python3.11" / "site-packages"
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(missing))
    got = protected.python_environment()
    assert str(missing) in got and not missing.exists()
    real = os.path.realpath
    assert real(os.path.dirname(os.__file__)) in got                          # the stdlib actually imported
    assert real(os.path.dirname(real(sys.executable))) in got                 # the base interpreter's folder
    assert all(real(p) in got for p in site.getsitepackages())
    if sys.prefix != sys.base_prefix:
        assert real(sys.prefix) in got


def test_every_folder_the_next_run_imports_or_runs_from_is_protected(tmp_path):
    cwd, there = tmp_path / "cwd", tmp_path / "zips"
    (cwd / "rel").mkdir(parents=True)
    there.mkdir()
    with zipfile.ZipFile(there / "a.zip", "w") as z:
        z.writestr("inner/m.py", "")
    path = ["", "rel", "__editable__.x-1.0.finder.__path_hook__", str(tmp_path / "lib" / "python311.zip"),
            str(there / "a.zip" / "inner"), str(tmp_path / "pp"), "/"]
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "missing"), ""]),
           "PATH": os.pathsep.join([str(tmp_path / "bin"), "relative", ""])}
    got = protected.search_path(path, str(cwd), env)
    assert got == sorted({str(cwd), str(cwd / "rel"), str(tmp_path / "lib" / "python311.zip"), str(tmp_path / "lib"),
                          str(there / "a.zip" / "inner"), str(there), str(tmp_path / "pp"), "/",
                          str(tmp_path / "missing"), str(tmp_path / "bin")})


def test_by_default_the_search_path_is_sys_path_pythonpath_and_path():
    got = protected.search_path()
    real = os.path.realpath
    assert {real(p or os.getcwd()) for p in sys.path if os.path.isabs(p) or not p} <= set(got)
    assert {real(p) for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(p)} <= set(got)


def test_the_home_folder_s_start_up_files_are_protected_whether_they_exist_or_not(tmp_path):
    home, dots = tmp_path / "home", tmp_path / "dotfiles"
    home.mkdir()
    dots.mkdir()
    (dots / "bashrc").write_text("")
    (home / ".bashrc").symlink_to(dots / "bashrc")              # both it and where it leads
    env = {"PYTHONSTARTUP": str(tmp_path / "startup.py"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "PIP_CONFIG_FILE": str(tmp_path / "pip.conf"), "BASH_ENV": str(tmp_path / "env.sh"), "ENV": "relative"}
    got = protected.startup_files(str(home), env)
    names = {".profile", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".zshenv", ".zprofile",
             ".zshrc", ".zlogin", ".zlogout", ".config", ".gitconfig", ".pythonrc", ".pythonrc.py", ".pip",
             ".local/bin", "bin"}
    assert got == sorted({str(home / n) for n in names}
                         | {str(tmp_path / n) for n in ("startup.py", "xdg", "pip.conf", "env.sh")}
                         | {str(dots / "bashrc")})


def test_the_temp_root_is_the_real_temporary_folder_and_devices_and_cann_logs_are_granted(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.setattr(protected.tempfile, "tempdir", str(tmp_path / "link"))
    assert protected.temp_root() == str(tmp_path / "real")
    assert protected.always_granted(str(tmp_path / "home")) == ["/dev", str(tmp_path / "home" / "ascend")]
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    every = protected.everything([str(tmp_path / "suite")])
    assert {str(tmp_path / "suite"), str(tmp_path / "real"), str(tmp_path / "h" / ".bashrc")} <= set(every)
