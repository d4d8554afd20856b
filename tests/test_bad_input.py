"""Issue 9: every bad input is one line naming the file (and the line and field where there is
one), never a traceback, and nothing runs. Files that are not UTF-8, hold NUL bytes, nest without
end, expand aliases without end or are too large; case shapes past their tier's limit."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from suite import cli, hardware, knownfail, tolerance, yamlfile
from suite.cases import load_cases
from suite.yamlfile import FileError

ROOT = Path(__file__).resolve().parents[1]
MSE = b"op: MseLossBackward\n"

# Every loader that reads YAML through suite.yamlfile, each given the path of a bad file.
LOADERS: dict = {
    "yaml": yamlfile.load,
    "cases": lambda p: load_cases([p]),
    "known-failures": knownfail.load_file,
    "tolerances": tolerance.load_table,
    "hardware": hardware.load_hardware,
}


def _write(tmp_path: Path, data: bytes, name: str = "bad.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _one_error(load: Callable, path: Path) -> str:
    with pytest.raises(FileError) as info:
        load(path)
    text = str(info.value)
    assert len(text.splitlines()) == 1 and text.startswith(f"{path}"), text
    return text


def _laughs(levels: int) -> bytes:
    """Nine aliases of nine aliases of ...: 9**levels values from ~20 lines."""
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return ("\n".join(lines) + "\n").encode()


# name -> (file bytes, the line the error names, words of the message)
BAD_YAML = {
    "latin-1": (MSE + b"# caf\xe9\n", 2, "not UTF-8 text (byte 0xe9 at offset 25)"),
    "utf-16": ("op: x\n".encode("utf-16"), 1, "not UTF-8 text (byte 0xff at offset 0)"),
    "nul": (MSE + b"cases:\n  - a\x00b\n", 3, "character U+0000 is not allowed in YAML"),
    "escape": (MSE + b"cases: \x1b[31m\n", 2, "character U+001B is not allowed in YAML"),
    "c1-after-crlf": (b"a: 1\r\nb: 2\r\nc: \xc2\x9b\r\n", 3, "character U+009B"),
    "deep-flow": (MSE + b"cases: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", 2,
                  f"nested more than {yamlfile.MAX_DEPTH} levels deep"),
    "deep-block": (MSE + "".join(f"{'  ' * i}k{i}:\n" for i in range(200)).encode(), 2 + yamlfile.MAX_DEPTH,
                   f"nested more than {yamlfile.MAX_DEPTH} levels deep"),
    "billion-laughs": (_laughs(9), 6, f"more than {yamlfile.MAX_NODES} values (an alias counts as all it repeats)"),
    "bad-date": (b"- cases: x\n  reason: y\n  issue: 2024-02-30\n", 3, "cannot read '2024-02-30': day is out of range"),
    "long-int": (b"a: " + b"7" * 5000 + b"\n", 1, "cannot read '7777"),
}


@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize("name", sorted(BAD_YAML))
def test_bad_yaml_is_one_line_with_its_line(tmp_path: Path, loader: str, name: str) -> None:
    data, line, words = BAD_YAML[name]
    path = _write(tmp_path, data)
    text = _one_error(LOADERS[loader], path)
    assert text.startswith(f"{path}:{line}: "), text
    assert words in text


def test_depth_and_alias_limits_are_not_hit_by_sensible_files(tmp_path: Path) -> None:
    """The limits sit far above what a real file does: MAX_DEPTH levels load, and aliases that
    share a list are fine up to MAX_NODES values in all."""
    n = yamlfile.MAX_DEPTH - 1                              # under the top-level mapping
    inner = yamlfile.load(_write(tmp_path, b"a: " + b"[" * n + b"]" * n + b"\n"))["a"]
    for _ in range(n - 1):
        inner = inner[0]
    assert inner == []
    shared = _write(tmp_path, b"a: &d [float32, float16]\nb: *d\nc: [*d, *d]\n", "shared.yaml")
    doc = yamlfile.load(shared)
    assert doc["b"] == doc["c"][1] == ["float32", "float16"]
    assert yamlfile.load(_write(tmp_path, _laughs(5), "five.yaml"))["a4"][8][8][8][8][8] == 1  # 9**5 values


def test_file_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with open(path, "wb") as f:
        f.truncate(yamlfile.MAX_BYTES + 1)                  # sparse: no disk, no memory
    for load in LOADERS.values():
        assert _one_error(load, path) == f"{path}: larger than 16 MiB"


def test_a_folder_or_a_missing_file_is_one_line(tmp_path: Path) -> None:
    assert _one_error(yamlfile.load, tmp_path) == f"{tmp_path}: cannot read: Is a directory"
    assert _one_error(knownfail.load_file, tmp_path / "nope.yaml") == \
        f"{tmp_path / 'nope.yaml'}: cannot read: No such file or directory"


def test_keys_with_line_breaks_stay_on_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, b'"a\\nb": 1\n"a\\nb": 2\n')
    assert _one_error(yamlfile.load, path) == f"{path}:2: field 'a\\nb': duplicate key"
    path = _write(tmp_path, b'- cases: x\n  reason: y\n  "x\\u2028y": 1\n', "k.yaml")
    assert _one_error(knownfail.load_file, path).startswith(f"{path}:3: field 'x\\u2028y': unknown field")


def test_cli_validate_bad_bytes_exits_2_with_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, BAD_YAML["latin-1"][0])
    r = subprocess.run([sys.executable, "-m", "suite.cli", "cases", "validate", str(path)],
                       cwd=ROOT, capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == f"error: {path}:2: not UTF-8 text (byte 0xe9 at offset 25)\n"
