"""Issue 9: every bad input is one line naming the file (and the line and field where there is
one), never a traceback, and nothing runs. Files that are not UTF-8, hold NUL bytes, nest without
end, expand aliases without end or are too large; case shapes past their tier's limit."""
from __future__ import annotations

import subprocess
import tracemalloc
import sys
from pathlib import Path
from typing import Callable

import pytest

pytest_plugins = ["pytester"]

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


# -- shapes past their tier's limit ---------------------------------------------------------------
CASE = "  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: %s%s}\n"
MATRIX = "matrices:\n  - dtypes: [float32]\n    products: [atlas-a2]\n    shapes: [%s]\n"
DEFAULT = f"past the default tier's limit of {1 << 28} per array"
HUGE = f"past the huge tier's limit of {1 << 33} per array"

# name -> (case file, line, field, words of the message)
TOO_BIG = {
    "single-case": ("cases:\n" + CASE % ("[100000x100000, 2x3, 2x3]", ""), 3, "shapes.gradOutput",
                    f"100000x100000 is 10000000000 elements, {DEFAULT}"),
    "single-case-broadcast": ("cases:\n" + CASE % ("[100000x1, 1x100000, 1]", ""), 3, "shapes",
                              f"the broadcast shape 100000x100000 is 10000000000 elements, {DEFAULT}"),
    "single-case-out": ("cases:\n" + CASE % ("[2x3, 2x3, 2x3]", ", out_shape: 100000x100000"), 3, "out_shape",
                        f"100000x100000 is 10000000000 elements, {DEFAULT}"),
    "inline": (MATRIX % "[2x3, 2x3, 2x3], [5, 5, 100000x100000]", 5, "shapes.target", DEFAULT),
    "shape-set": ("shapes:\n  s:\n    - [2, 2, 2]\n    - [3, [65536, 65536], 3]\n" + MATRIX % "s", 5,
                  "shapes.self", f"65536x65536 is 4294967296 elements, {DEFAULT}"),
    "overflowing-int64": (MATRIX % "[1, 1, 4294967296x4294967296]", 5, "shapes.target",
                          "4294967296x4294967296 is 18446744073709551616 elements"),
    "huge-tier": (MATRIX.replace("dtypes", "tier: huge\n    dtypes") % "[1, 1, 100000x100000]", 6,
                  "shapes.target", HUGE),
    "generated": ("shapes:\n  g:\n    generate:\n      shapes: [[N], [N], [N]]\n      N: [cores * 10000000]\n"
                  + MATRIX % "g", 4, "shapes.g",
                  f"400000000 (made for atlas-a2, float32) is 400000000 elements, {DEFAULT}"),
    "lowered-limit": ("limits: {default: 1000}\n" + MATRIX % "[1, 1, 1001]", 6, "shapes.target",
                      "1001 is 1001 elements, past the default tier's limit of 1000 per array"),
    "limits-not-a-mapping": ("limits: [1000]\n", 2, "limits", "a mapping of tier (default, huge)"),
    "limits-unknown-tier": ("limits:\n  small: 1000\n", 3, "small", "unknown tier (known: default, huge)"),
    "limits-negative": ("limits:\n  huge: -1\n", 3, "huge", "a positive number of elements, not -1"),
}


@pytest.mark.parametrize("name", sorted(TOO_BIG))
def test_shape_past_the_tier_limit_is_refused_when_read(tmp_path: Path, name: str, capsys) -> None:
    text, line, field, words = TOO_BIG[name]
    path = _write(tmp_path, MSE + text.encode())
    tracemalloc.start()
    try:
        message = _one_error(lambda p: load_cases([p]), path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message.startswith(f"{path}:{line}: field '{field}': "), message
    assert words in message
    assert peak < 8 << 20                                    # refused before anything is drawn
    assert cli.main(["cases", "validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"error: {message}\n")


def test_limits_raise_and_the_huge_tier_takes_what_default_refuses(tmp_path: Path) -> None:
    raised = _write(tmp_path, MSE + b"limits: {default: 10000000000}\n"
                    + (MATRIX % "[1, 1, 100000x100000]").encode(), "raised.yaml")
    assert [c.shapes[2][1] for c in load_cases([raised])[0]] == [(100000, 100000)] * 3
    huge = _write(tmp_path, MSE + (MATRIX.replace("dtypes", "tier: huge\n    dtypes")
                                   % "[1, 1, 65536x65536]").encode(), "huge.yaml")
    assert {c.tier for c in load_cases([huge])[0]} == {"huge"}


def test_project_case_files_fit_their_tiers(capsys) -> None:
    assert cli.main(["cases", "validate", str(ROOT / "cases")]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_pytest_refuses_a_shape_past_the_limit(pytester: pytest.Pytester, tmp_path: Path) -> None:
    path = _write(tmp_path, MSE + ("cases:\n" + CASE % ("[100000x100000, 2x3, 2x3]", "")).encode())
    pytester.makepyfile(test_x="from suite.plugin import check\nCASE_KIND = 'numbers'\n"
                               "def test_results(case, request):\n    check(request, case)\n")
    r = pytester.runpytest("-p", "suite.plugin", f"--cases={path}", "-p", "no:cacheprovider", "-p", "no:benchmark")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    err, out = r.stderr.str(), r.stdout.str()
    assert f"ERROR: {path}:3: field 'shapes.gradOutput': 100000x100000 is 10000000000 elements" in err
    assert err.count("ERROR:") == 1 and "Traceback" not in err + out
