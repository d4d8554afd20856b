"""Fuzzing the loaders (issue 9): whatever bytes a user's file holds, each loader either returns or
raises its one documented error (FileError, ResultsError, GoldenError), whose message is one line
starting with the file's path, and it does so in bounded memory.

Inputs: random bytes; random YAML and JSON documents built from the schemas' own keys and values
(so they get past the first type check); valid files of each kind with a few lines or values
changed. CI runs a fixed, small set of examples (deterministic: the same examples every run); set
ACLNN_FUZZ_EXAMPLES=N to run N random examples per test instead, e.g. 2000 for a few minutes:

    ACLNN_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz.py -p no:cacheprovider
"""
from __future__ import annotations

import copy
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from suite.golden import source as golden_source
from suite.golden import manifest as golden_manifest
from suite.report import results
from suite.judge import table as tolerance
from suite.cases import hardware
from suite.report import knownfail
from suite.common import yamlfile
from suite.cases.load import load_cases
from suite.common.yamlfile import FileError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("ACLNN_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXAMPLES or 40,
    derandomize=not EXAMPLES,              # CI: the same examples every run; a long run explores
    deadline=None,                         # a first call imports and warms caches
    database=None,                         # nothing written into the work tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],   # big generated files
)
PEAK_BYTES = 32 << 20                      # what one load of a <100 kB file may allocate at its peak

# name -> (file name, loader, the error it may raise)
LOADERS: Dict[str, tuple] = {
    "yaml": ("f.yaml", yamlfile.load, FileError),
    "cases": ("f.yaml", lambda p: load_cases([p]), FileError),
    "known-failures": ("f.yaml", knownfail.load_file, FileError),
    "tolerances": ("f.yaml", tolerance.load_table, FileError),
    "hardware": ("f.yaml", hardware.load_hardware, FileError),
    "results": ("f.json", results.read, results.ResultsError),
    "manifest": (golden_source.MANIFEST, lambda p: golden_manifest.read_manifest(p.parent), golden_source.GoldenError),
}
YAML_LOADERS = [k for k, v in LOADERS.items() if v[0].endswith(".yaml")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def check_load(folder: Path, name: str, data: bytes) -> Any:
    """Load `data` as the kind of file `name` reads: a value, or its one error type as one line
    that starts with the path; within PEAK_BYTES."""
    file_name, load, error = LOADERS[name]
    path = folder / name / file_name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    tracemalloc.start()
    try:
        return load(path)
    except error as e:
        text = str(e)
        assert text.startswith(str(path)), text
        assert len(text.splitlines()) == 1 and "\n" not in text, text
        assert len(text) < 20_000
        return e
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < PEAK_BYTES, f"{name}: {peak} bytes at the peak"


# -- strategies ----------------------------------------------------------------------------------
WORDS = ["op", "shapes", "matrices", "cases", "limits", "MseLossBackward", "KlDivBackward", "name",
         "products", "dtypes", "reductions", "logTarget", "layouts", "values", "determinism", "exclude",
         "tier", "timing", "huge", "default", "product", "reduction", "out_shape", "layout", "expect", "generate",
         "N", "cores", "tile", "atlas-a2", "atlas-training", "all", "float32", "float16", "bfloat16",
         "inputs", "out", "self", "target", "gradOutput", "none", "mean", "sum", "batchmean",
         "2x3", "scalar", "100000x100000", "2147483649", "contiguous", "strided", "uniform", "tiny",
         "reason", "issue", "strict", "standards", "operators", "float32_slack_ulps", "rule", "ulp",
         "max_ulp", "share", "gross", "atol", "rtol", "exact", "doc", "socs", "ub_bytes", "block_bytes",
         "repeat_bytes", "max_repeat", "peak_gbps", "peak_source", "atlas-a3", "atlas-inference", "key", "records", "counts",
         "schema_version", "backend", "outcome", "passed", "kind", "numbers", "metrics", "format",
         "files", "spec", "file", "samples", "nterms", "sum", "abs_sum", "inputs", "nonfinite",
         "1/2", "0x1.0p+0", "N + 1", "cores*tile + 1", "min(N, 2)"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(),
                    st.text(max_size=12), st.sampled_from(WORDS))
keys = st.one_of(st.sampled_from(WORDS), st.text(max_size=6), st.integers(-3, 3))
trees = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(keys, inner, max_size=5)),
                     max_leaves=40)
shaped = st.one_of(trees, st.dictionaries(st.sampled_from(WORDS), trees, min_size=1, max_size=6),
                   st.lists(st.dictionaries(st.sampled_from(WORDS), trees, min_size=1, max_size=4), max_size=4))
# Pieces of YAML syntax that loaders trip on: anchors, aliases, tags, merges, flow and block marks.
FRAGMENTS = ["&a ", "*a", "*b", "&b [*a, *a, *a]", "!!set ", "!!binary ", "!!omap ", "!!python/name:os.system",
             "!!float ", "!foo ", "<<: *a", "? ", "- ", ": ", "[", "]", "{", "}", ",", "'", '"', "#", "|", ">",
             "---\n", "...\n", "%YAML 1.1\n", "\t", "\x00", "\x1b", "\ufeff", "\u2028", "\r", "~", "1e999",
             "2024-02-30", "0x1F", "0o17", "1_000", ".inf", "-.nan", "100000x100000", "2xx3", "-1", "null",
             "\\u0000", "\"\\x00\"", "\n  ", "\n    - "]
fragments = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=10))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" -"))


@st.composite
def mutated(draw: Callable, text: str) -> str:
    """`text` with 1-4 edits: a value (with what is nested under it) replaced by a random one in
    flow style; a line deleted, duplicated or replaced; a fragment inserted; the rest cut off."""
    lines = text.splitlines(keepends=True) or [""]
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["value", "value", "delete", "duplicate", "replace", "insert", "cut"]))
        if how == "value" and ":" in lines[i]:
            end = i + 1
            while end < len(lines) and _indent(lines[end]) > _indent(lines[i]):
                end += 1
            flow = yaml.safe_dump(draw(trees), default_flow_style=True, width=10**6).replace("\n...", "")
            lines[i:end] = [lines[i][:lines[i].index(":") + 1] + " " + flow.strip() + "\n"]
        elif how == "delete" and len(lines) > 1:
            del lines[i]
        elif how == "duplicate":
            lines.insert(i, lines[i])
        elif how == "replace":
            indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = indent + draw(fragments) + draw(fragments) + "\n"
        elif how == "insert":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(fragments) + lines[i][at:]
        else:
            lines = lines[:i + 1]
    return "".join(lines)


def _yaml(tree: Any, flow: bool) -> bytes:
    return yaml.safe_dump(tree, default_flow_style=flow, allow_unicode=True).encode()


# Valid files of each kind: what the mutations start from.
CASE_FILE = """op: MseLossBackward
limits: {default: 100000}
shapes:
  small:
    - [2x3, 2x3, 2x3]
    - [scalar, 4, 4]
  gen:
    generate:
      shapes: [[N], [N], [N]]
      N: [tile - 1, cores + 1]
matrices:
  - name: m
    products: [atlas-a2]
    dtypes: [float32, {inputs: float16, out: float32}]
    reductions: [none, mean]
    shapes: [small, [3, 3, 3]]
    layouts: [contiguous, strided]
    values: [uniform]
    exclude:
      - {reduction: mean, layout: strided}
  - products: [atlas-a3]
    dtypes: [float32]
    reductions: [none]
    shapes: [gen]
    tier: huge
cases:
  - {product: atlas-a2, dtypes: float32, reduction: mean, shapes: [null, 2x3, 2x3], expect: 161001}
  - {product: atlas-training, dtypes: bfloat16, reduction: none, shapes: [2, 2, 2], out_shape: 2}
"""
KNOWN_FILE = """- cases: "MseLossBackward-bfloat16-*-mean-*"
  reason: mean divides in bfloat16
  issue: https://example.org/issues/12
  strict: true
- cases: [a*, b*]
  reason: two
"""
SEEDS = {
    "yaml": CASE_FILE, "cases": CASE_FILE, "known-failures": KNOWN_FILE,
    "tolerances": (ROOT / "cases" / "tolerances.yaml").read_text(),
    "hardware": (ROOT / "cases" / "hardware.yaml").read_text(),
}


def _results_doc() -> dict:
    run = {"backend": {"name": "reference"}, "products": ["atlas-a2"], "standard_override": None,
           "manifest_hash": "", "machine": {}, "shard": "1/2"}
    rec = {"key": "t::a", "case": "a", "kind": "numbers", "op": "MseLossBackward", "product": "atlas-a2",
           "dtypes": {"self": "float32"}, "out_dtype": "float32", "reduction": 0, "logTarget": None,
           "shapes": {"self": [2, 3]}, "out_shape": [2, 3], "layout": "contiguous", "values": "uniform",
           "expect": 0, "outcome": "passed", "reason": None, "status": 0, "reproduce": None,
           "metrics": {"standard": "cann", "n": 6, "max_ulp": 0.5, "share_over": "nan"}}
    return results.make_document(run, [rec, dict(rec, key="t::b", outcome="failed")])


def _manifest_doc() -> dict:
    m = golden_manifest.read_manifest(ROOT / "golden")
    small = next(k for k, e in m["cases"].items() if "file" in e)
    large = next(k for k, e in m["cases"].items() if "file" not in e)
    f = m["cases"][small]["file"]
    return {**m, "files": {f: m["files"][f]}, "cases": {small: m["cases"][small], large: m["cases"][large]}}


JSON_SEEDS = {"results": _results_doc(), "manifest": _manifest_doc()}


@st.composite
def json_mutated(draw: Callable, doc: Any) -> Any:
    """`doc` with 1-3 values somewhere in it replaced by random trees, or deleted."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        parent, key = None, None
        node = doc
        while isinstance(node, (dict, list)) and node and draw(st.booleans()):
            parent = node
            key = draw(st.sampled_from(sorted(node, key=str) if isinstance(node, dict) else range(len(node))))
            node = node[key]
        if parent is None:
            continue
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[key]
        else:
            parent[key] = draw(trees)
    return doc


# -- the tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(LOADERS))
@FUZZ
@given(data=st.binary(max_size=4000))
# Regressions: each of these raised something other than the loader's error (a traceback).
@example(data=b"\xff")                                            # UnicodeDecodeError
@example(data=b"a: \x00")                                         # yaml ReaderError, two lines
@example(data=b"[" * 5000)                                        # RecursionError
@example(data=b"a: 2024-02-30\n")                                 # ValueError from the date
@example(data=b"a: " + b"1" * 5000 + b"\n")                        # ValueError: > 4300 digits
@example(data=b"default: a\nstandards:\n  a: {rule: []}\n")        # tolerances: unhashable rule
@example(data=b"default: a\nstandards:\n  a: {rule: exact}\noperators: [1]\n")   # list.items()
@example(data=b"default: [1]\nstandards:\n  a: {rule: exact}\n")   # unhashable default
@example(data=b'{"records": 5}')                                  # results: enumerate(5)
@example(data=b'{"records": [{"key": []}]}')                      # results: unhashable key
def test_random_bytes(folder: Path, name: str, data: bytes) -> None:
    check_load(folder, name, data)


@pytest.mark.parametrize("name", YAML_LOADERS)
@FUZZ
@given(tree=shaped, flow=st.booleans())
@example(tree={0: None}, flow=False)                              # FileError of an int field
def test_random_yaml_documents(folder: Path, name: str, tree: Any, flow: bool) -> None:
    check_load(folder, name, _yaml(tree, flow))


@pytest.mark.parametrize("name", YAML_LOADERS)
@FUZZ
@given(data=st.data())
def test_mutated_valid_yaml_files(folder: Path, name: str, data) -> None:
    assert not isinstance(check_load(folder, name, SEEDS[name].encode()), Exception)   # the seed is valid
    check_load(folder, name, data.draw(mutated(SEEDS[name])).encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("name", sorted(JSON_SEEDS))
@FUZZ
@given(tree=shaped)
def test_random_json_documents(folder: Path, name: str, tree: Any) -> None:
    check_load(folder, name, json.dumps(tree).encode())


@pytest.mark.parametrize("name", sorted(JSON_SEEDS))
@FUZZ
@given(data=st.data())
def test_mutated_valid_json_files(folder: Path, name: str, data) -> None:
    assert not isinstance(check_load(folder, name, json.dumps(JSON_SEEDS[name]).encode()), Exception)
    doc = data.draw(json_mutated(JSON_SEEDS[name]))
    text = json.dumps(doc, indent=data.draw(st.sampled_from([None, 1])))
    check_load(folder, name, data.draw(mutated(text)).encode("utf-8", "surrogatepass")
               if data.draw(st.booleans()) else text.encode())
