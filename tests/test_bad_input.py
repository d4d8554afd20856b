"""Issue 9: every bad input is one line naming the file (and the line and field where there is
one), never a traceback, and nothing runs. Files that are not UTF-8, hold NUL bytes, nest without
end, expand aliases without end or are too large; case shapes past their tier's limit."""
from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Callable

import pytest

pytest_plugins = ["pytester"]

from suite.cli import main as cli
from suite.golden import source as golden_source
from suite.golden import manifest as golden_manifest
from suite.golden import store as golden_store
from suite.report import results
from suite.judge import table as tolerance
from suite.cases import hardware
from suite.common import files, jsonfile, yamlfile
from suite.report import knownfail
from suite.cases.load import load_cases
from suite.common.yamlfile import FileError
from tests.reportkit import sample_record

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
    "limits-unknown-tier": ("limits:\n  small: 1000\n", 3, "limits.small", "unknown tier (known: default, huge)"),
    "limits-negative": ("limits:\n  huge: -1\n", 3, "limits.huge", "a positive number of elements, not -1"),
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
    assert [c.shapes["target"] for c in load_cases([raised])[0]] == [(100000, 100000)] * 3
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


# -- golden manifest -----------------------------------------------------------------------------
SHA = "0" * 64
SMALL = {"file": "MseLossBackward/01-000000000000.npz", "spec": "abc"}
LARGE = {"spec": "abc", "sum": "0x1.0p+0", "abs_sum": "0x1.0p+0", "nonfinite": "00", "nterms": 3,
         "samples": [[0, "0x1.0p+0", "0x1.0p+0"]], "inputs": {"self": SHA}}


def _manifest(**change) -> dict:
    m = {"format": golden_source.FORMAT, "generator_version": golden_source.GENERATOR_VERSION,
         "files": {SMALL["file"]: SHA}, "cases": {"small": dict(SMALL), "large": dict(LARGE)}}
    m.update(change)
    return m


def _with(entry: dict, **change) -> dict:
    e = dict(entry)
    e.update(change)
    for k in [k for k, v in change.items() if v is None]:
        del e[k]
    return _manifest(cases={"k": e})


# name -> (manifest.json bytes, words of the message)
BAD_MANIFEST = {
    "list": (b"[]", "not a golden manifest of format 3: unknown format"),
    "format-2": (json.dumps(_manifest(format=2)).encode(), "format 3: unknown format; restore it"),
    "files-list": (json.dumps(_manifest(files=[])).encode(), "format 3: 'files' and 'cases' are objects; restore it"),
    "entry-not-object": (json.dumps(_manifest(cases={"k": 1})).encode(), "cases: 'k': not an object; restore it"),
    "entry-no-spec": (json.dumps(_with(SMALL, spec=None)).encode(),
                      "cases: 'k': field 'spec' is missing or not a string; restore it"),
    "entry-spec-int": (json.dumps(_with(SMALL, spec=7)).encode(),
                       "cases: 'k': field 'spec' is missing or not a string; restore it"),
    "entry-unlisted-file": (json.dumps(_with(SMALL, file="MseLossBackward/02-111111111111.npz")).encode(),
                            "cases: 'k': field 'file' names no bundle of 'files'; restore it"),
    # optional (an older generator's manifest lacks them), but when present a hex float
    "entry-scale-sum-not-hex": (json.dumps(_with(LARGE, scale_sum=1.5)).encode(),
                                "cases: 'k': field 'scale_sum' is not a hexadecimal float; restore it"),
    "entry-path-sum-not-hex": (json.dumps(_with(LARGE, path_sum="one")).encode(),
                               "cases: 'k': field 'path_sum' is not a hexadecimal float; restore it"),
    "entry-sum-not-hex": (json.dumps(_with(LARGE, sum=1.5)).encode(),
                          "cases: 'k': field 'sum' is missing or not a hexadecimal float; restore it"),
    "entry-nterms-bool": (json.dumps(_with(LARGE, nterms=True)).encode(),
                          "cases: 'k': fields 'nonfinite' (a string) and 'nterms' (an integer) are required; restore it"),
    "entry-samples": (json.dumps(_with(LARGE, samples=[[0, "0x1p0"]])).encode(),
                      "cases: 'k': field 'samples' is not a list of [position, out, scale, path] (hex floats); restore it"),
    "entry-sample-out": (json.dumps(_with(LARGE, samples=[[0, "one", "0x1p0"]])).encode(),
                         "field 'samples' is not a list of [position, out, scale, path] (hex floats); restore it"),
    "entry-sample-five": (json.dumps(_with(LARGE, samples=[[0] + ["0x1p0"] * 4])).encode(),
                          "field 'samples' is not a list of [position, out, scale, path] (hex floats); restore it"),
    "entry-inputs": (json.dumps(_with(LARGE, inputs={"self": 1})).encode(),
                     "cases: 'k': field 'inputs' is not an object of input name to sha256; restore it"),
    "file-outside": (json.dumps(_manifest(files={"/etc/passwd": SHA})).encode(),
                     "files: '/etc/passwd': not <op>/<bucket>-<sha>.npz"),
    "file-sha": (json.dumps(_manifest(files={SMALL["file"]: "xyz"})).encode(), "with a sha256"),
    "key-with-newline": (json.dumps(_manifest(cases={"a\nb": []})).encode(), "cases: 'a\\nb': not an object"),
    "not-json": (b'{\n "format": 3,\n "files": {]\n}', ":3: not JSON: Expecting property name"),
    "latin-1": (b'{"cases": "caf\xe9"}', ":1: not UTF-8 text (byte 0xe9 at offset 14)"),
    "deep": (b"[" * 100_000 + b"]" * 100_000, ": not JSON this suite reads: nested too deeply"),
    "long-int": (b"[" + b"9" * 5000 + b"]", ": not JSON this suite reads: Exceeds the limit (4300 digits)"),
}


@pytest.mark.parametrize("name", sorted(BAD_MANIFEST))
def test_malformed_manifest_is_one_golden_error(tmp_path: Path, name: str, capsys) -> None:
    data, words = BAD_MANIFEST[name]
    path = _write(tmp_path, data, golden_source.MANIFEST)
    with pytest.raises(golden_source.GoldenError) as info:
        golden_manifest.read_manifest(tmp_path)
    text = str(info.value)
    assert text.startswith(str(path)) and len(text.splitlines()) == 1 and words in text, text
    case = load_cases([_write(tmp_path, MSE + b"cases:\n" + (CASE % ("[2x3, 2x3, 2x3]", "")).encode(), "c.yaml")])[0][0]
    with pytest.raises(golden_source.GoldenError, match="^" + re.escape(text) + "$"):
        golden_store.GoldenStore(tmp_path).load(case)                  # where entries are used
    assert cli.main(["golden", "check", "--cases", str(tmp_path / "c.yaml"), "--golden-dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == text + "\n" and "Traceback" not in err


def test_manifest_size_limit(tmp_path: Path) -> None:
    with open(tmp_path / golden_source.MANIFEST, "wb") as f:
        f.truncate(jsonfile.MAX_BYTES + 1)
    with pytest.raises(golden_source.GoldenError, match=r"manifest.json: larger than 256 MiB$"):
        golden_manifest.read_manifest(tmp_path)


def test_the_committed_manifest_is_well_formed() -> None:
    assert len(golden_manifest.read_manifest(ROOT / "golden")["cases"]) > 1000


# -- results.json for report diff and merge ------------------------------------------------------
def _results(**change) -> dict:
    run = {"backend": {"name": "reference"}, "products": ["atlas-a2"], "standard_override": None,
           "manifest_hash": "", "machine": {}, "shard": None}
    doc = results.make_document(run, [])
    doc.update(change)
    return doc


# name -> (results.json bytes, words of the message)
BAD_RESULTS = {
    "latin-1": (b'{"backend":\n "caf\xe9"}', ":2: not UTF-8 text (byte 0xe9 at offset 17)"),
    "utf-16": (json.dumps(_results()).encode("utf-16"), ":1: not UTF-8 text (byte 0xff at offset 0)"),
    "deep": (b"[" * 100_000 + b"]" * 100_000, ": not JSON this suite reads: nested too deeply"),
    "deep-unclosed": (b'{"records": ' + b"[" * 100_000, ": not JSON this suite reads: nested too deeply"),
    "not-json": (b'{\n\n "records": [,]}', ":3: not JSON: Expecting value (column 14)"),
    "records-object": (json.dumps(_results(records={"a": 1})).encode(), "field 'records' is {'a': 1}, expected list"),
    "record-key-list": (json.dumps(_results(records=[{"key": [1]}])).encode(), "records[0]: field 'key' is [1]"),
    "newline-field": (json.dumps(_results(**{"a\nb": 1})).encode(), "run: unknown field 'a\\nb'"),
    "long-value": (json.dumps(_results(backend="x" * 10**6)).encode(), "field 'backend' is 'xxxxxx"),
    "fields-missing": (b'{"schema_version": 1}', ": not a results.json of schema 2: run: missing field 'suite_version'; "
                       "run: missing field 'backend'; "),
    "windows-ends-first": (json.dumps(_results(windows=[{"hostname": "h", "start_ns": 2, "end_ns": 1,
                                                         "protected": []}])).encode(),
                           "run.windows[0]: needs 0 <= start_ns <= end_ns"),
    "shard-1e12": (json.dumps(_results(shard="1/1000000000000")).encode(),
                   "run: shard '1/1000000000000' is not K/N with 1 <= K <= N <= 100000"),
}


@pytest.mark.parametrize("name", sorted(BAD_RESULTS))
def test_bad_results_is_one_line_for_diff_and_merge(tmp_path: Path, name: str, capsys) -> None:
    data, words = BAD_RESULTS[name]
    bad = _write(tmp_path, data, "bad.json")
    good = tmp_path / "good.json"
    results.write(good, _results(records=[sample_record("a")], counts={**_results()["counts"], "passed": 1}))
    with pytest.raises(results.ResultsError) as info:
        results.read(bad)
    text = str(info.value)
    assert text.startswith(str(bad)) and len(text.splitlines()) == 1 and words in text, text
    assert len(text) < 2000
    for argv in (["report", "diff", str(good), str(bad)], ["report", "merge", str(good), str(bad), "-o",
                                                            str(tmp_path / "m.json")]):
        assert cli.main(argv) == 2
        assert capsys.readouterr() == ("", f"error: {text}\n")
    assert not (tmp_path / "m.json").exists()


def test_results_size_limit(tmp_path: Path) -> None:
    with open(tmp_path / "r.json", "wb") as f:
        f.truncate(jsonfile.MAX_BYTES + 1)
    with pytest.raises(results.ResultsError, match=r"r.json: larger than 256 MiB$"):
        results.read(tmp_path / "r.json")


# -- where the CLI writes ------------------------------------------------------------------------
@pytest.mark.parametrize("where,says", [
    ("folder", "{out}: is a folder; -o names the file to write"),
    ("no-folder", "{out}: {tmp}/nope does not exist"),
    ("under-a-file", "{out}: {tmp}/good.json is not a folder"),
])
def test_merge_output_that_cannot_be_a_file_is_one_line(tmp_path: Path, where: str, says: str, capsys) -> None:
    good = tmp_path / "good.json"
    results.write(good, _results(records=[sample_record("a")], counts={**_results()["counts"], "passed": 1}))
    out = {"folder": tmp_path, "no-folder": tmp_path / "nope" / "m.json",
           "under-a-file": good / "m.json"}[where]
    # checked before the inputs are read: a missing input is not what it reports
    assert cli.main(["report", "merge", str(good), str(tmp_path / "missing.json"), "-o", str(out)]) == 2
    assert capsys.readouterr() == ("", f"error: {says.format(out=out, tmp=tmp_path)}\n")
    assert not (tmp_path / "nope").exists()


def _refuse_writes(monkeypatch, folder: Path) -> None:
    """What the OS answers a user without write access to `folder` (root, which runs CI, is never
    refused by mode bits, so a chmod alone proves nothing there)."""
    real = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kw):
        if dir is not None and Path(dir).resolve().is_relative_to(folder.resolve()):
            raise PermissionError(errno.EACCES, "Permission denied", str(dir))
        return real(*args, dir=dir, **kw)
    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)


def test_merge_into_a_folder_that_cannot_be_written(tmp_path: Path, monkeypatch, capsys) -> None:
    good = tmp_path / "good.json"
    results.write(good, _results(records=[sample_record("a")], counts={**_results()["counts"], "passed": 1}))
    (tmp_path / "ro").mkdir()
    _refuse_writes(monkeypatch, tmp_path / "ro")
    assert cli.main(["report", "merge", str(good), "-o", str(tmp_path / "ro" / "m.json")]) == 2
    assert capsys.readouterr() == ("", f"error: {tmp_path / 'ro'}: cannot write: Permission denied\n")


GOLDEN_CASE = MSE + b"cases:\n" + (CASE % ("[2x3, 2x3, 2x3]", "")).encode()


def test_generate_into_a_read_only_golden_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    cases = _write(tmp_path, GOLDEN_CASE, "c.yaml")
    (tmp_path / "g").mkdir()
    _refuse_writes(monkeypatch, tmp_path / "g")
    assert cli.main(["golden", "generate", "--cases", str(cases), "--golden-dir", str(tmp_path / "g")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines()[-1] == f"error: {tmp_path / 'g' / 'MseLossBackward'}: cannot write: Permission denied"
    assert "Traceback" not in err and list((tmp_path / "g").rglob("*.npz")) == []


def test_generate_where_a_file_is_in_the_way(tmp_path: Path) -> None:
    cases = _write(tmp_path, GOLDEN_CASE, "c.yaml")
    blocker = _write(tmp_path, b"", "g")
    r = subprocess.run([sys.executable, "-m", "suite.cli", "golden", "generate", "--cases", str(cases),
                        "--golden-dir", str(blocker)], cwd=ROOT, capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (2, "") and "Traceback" not in r.stderr
    assert r.stderr.splitlines()[-1] == f"error: {blocker / 'MseLossBackward'}: cannot write: Not a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through mode bits")
def test_generate_into_a_chmod_read_only_folder(tmp_path: Path) -> None:
    cases = _write(tmp_path, GOLDEN_CASE, "c.yaml")
    (tmp_path / "g").mkdir(mode=0o555)
    r = subprocess.run([sys.executable, "-m", "suite.cli", "golden", "generate", "--cases", str(cases),
                        "--golden-dir", str(tmp_path / "g")], cwd=ROOT, capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (2, "") and "Traceback" not in r.stderr
    assert r.stderr.splitlines()[-1].endswith(": cannot write: Permission denied")


# Issue 42, item 4: what `cases validate` accepts, `golden generate` can draw; what it cannot draw,
# validate refuses with the file, line and field (a UINT8 class index past 255 classes).
CLASSES = b"""op: NLLLoss
matrices:
  - products: [atlas-a2]
    dtypes: [{inputs: float32, target: uint8}]
    reductions: [sum]
    ignoreIndex: [0]
    shapes:
      - [4x5, 4, 5]
      - [4x%d, 4, %d]
"""


def test_a_case_whose_value_set_its_dtype_cannot_hold_is_refused_by_validate_and_generate(
        tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, CLASSES % (300, 300), "classes.yaml")
    for argv in (["cases", "validate", str(path)],
                 ["golden", "generate", "--cases", str(path), "--golden-dir", str(tmp_path / "g")]):
        assert cli.main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith(f"error: {path}:9: field 'shapes': case NLLLoss-") and \
            "input target: the value set draws 0..299, outside uint8's 0..255" in err, err
    assert not (tmp_path / "g").exists()


def test_a_case_at_the_edge_of_its_dtype_validates_and_generates(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, CLASSES % (256, 256), "classes.yaml")
    assert cli.main(["cases", "validate", str(path)]) == 0
    assert cli.main(["golden", "generate", "--cases", str(path), "--golden-dir", str(tmp_path / "g")]) == 0
    assert "goldens: 2 cases" in capsys.readouterr().out
