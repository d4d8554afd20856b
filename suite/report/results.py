"""results.json: the per-run record other tools read. Schema (documented in docs/results-schema.md),
build, validate, read/write. Merging shards and the diff behind the CI gate are in suite/report/compare.py
(their names are still importable from here)."""
from __future__ import annotations

import json
import math
import platform
import socket
import sys
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

import suite
from suite.cases.model import Kind
from suite.common import jsonfile
from suite.report import accuracy, shard, trust
from suite.common.files import atomic_write
from suite.common.jsonfile import short
from suite.perf import pair
from suite.perf import record as timing_record

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)          # version 1 lacks complete, incomplete, incidents, fault and attrs
OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed")
KINDS = tuple(k.value for k in Kind)
METRICS = ("standard", "n", "n_over", "share_over", "mismatches", "n_gross", "max_ulp", "mean_ulp",
           "max_abs", "max_rel", "rmse")


class ResultsError(Exception):
    """A results.json that is unreadable, off-schema, or that cannot be merged with another."""


# -- the schema, as data: name -> (types, required) --------------------------------------------
# Types: "str", "int", "num" (number, or "inf"/"-inf"/"nan" for non-finite), "bool", "null",
# "list", "dict". The same table is rendered in docs/results-schema.md.
RUN_FIELDS: Dict[str, Tuple[Tuple[str, ...], bool]] = {
    "schema_version": (("int",), True),
    "suite_version": (("str",), True),
    "backend": (("dict",), True),              # {name, spec, options, capabilities, deterministic}
    "products": (("list",), True),
    "standard_override": (("str", "null"), True),
    "manifest_hash": (("str",), True),
    "tolerances_hash": (("str",), False),      # sha256 of the tolerance table the run judged by
    "machine": (("dict",), True),              # {platform, python, numpy, hostname}
    "shard": (("str", "null"), True),          # "K/N", or null for an unsharded (or merged) run
    "merged_from": (("list",), False),         # shards a merged file was made of
    "counts": (("dict",), True),               # outcome -> number of records
    "complete": (("bool",), False),            # v2: false when the run did not finish (absent in v1: true)
    "incomplete": (("str", "null"), False),    # v2: why it did not finish
    "incidents": (("list",), False),           # v2: what went wrong outside any case, one line each
    "protections": (("dict",), False),         # v2, optional: what confined the backend's process (suite/run/confine.py)
    "timing_baseline": (("dict",), False),     # v2, optional: --timing-baseline's {spec, options}
    "accuracy_baseline": (("dict",), False),   # v2, optional: --accuracy-baseline's {spec, options, level}
    "windows": (("list",), False),             # v2, optional: when and where the backend could write (suite/report/trust.py)
    "records": (("list",), True),
}
RECORD_FIELDS: Dict[str, Tuple[Tuple[str, ...], bool]] = {
    "key": (("str",), True),                   # the pytest node id: unique per run
    "case": (("str",), True),
    "kind": (("str",), True),                  # numbers | rejection | determinism
    "op": (("str",), True),
    "product": (("str",), True),
    "dtypes": (("dict",), True),               # input name -> dtype name (null: a NULL tensor)
    "out_dtype": (("str", "null"), True),
    "reduction": (("int", "null"), True),
    "attrs": (("dict",), False),               # v2: every attribute of the call, reduction included
    "logTarget": (("bool", "null"), False),    # v1 only (v2: in attrs)  names-ok: schema v1's field
    "shapes": (("dict",), True),               # input name -> list of dims (null: NULL tensor)
    "out_shape": (("list", "null"), True),
    "layout": (("str",), True),
    "values": (("str",), True),
    "expect": (("int",), True),                # 0: numbers; else the expected aclnn status
    "outcome": (("str",), True),
    "reason": (("str", "null"), True),         # skip/xfail reason, or the failure's first line
    "status": (("int", "null"), True),         # the status the backend returned (0: success)
    "reproduce": (("str", "null"), True),      # one-line reproducer of a failure
    "metrics": (("dict", "null"), True),       # numbers/determinism metrics below, or null
    "fault": (("str", "null"), False),         # v2: the backend's process crashed, exited or hung:
                                               # 'signal 11 (SIGSEGV)', 'exit 0', 'deadline', ...
    "worst": (("list",), False),               # v2: a numbers failure's worst elements (WORST_FIELDS)
    "outputs": (("dict",), False),             # v2, optional: several outputs: name -> metrics of each judged one
    "failed_outputs": (("dict",), False),      # v2, optional: several outputs: name -> worst elements of each failing one
    "timing": (("dict",), False),              # v2, optional: the case's timing record (suite/perf/record.py)
    "interleaved": (("dict",), False),         # v2, optional: the baseline's timing and the gate's verdict (suite/perf/pair.py)
    "accuracy": (("dict",), False),            # v2, optional: the double benchmark (suite/report/accuracy.py)
}
# One element of a record's `worst` (written only for a failed numeric check).
WORST_FIELDS: Dict[str, Tuple[Tuple[str, ...], bool]] = {
    "index": (("list",), True),                # the element's index in out
    "inputs": (("dict", "null"), True),        # input name -> value behind it (null: a sum of terms)
    "golden": (("num",), True),
    "lo": (("num",), True),                    # where a correct kernel may land, in out's dtype
    "hi": (("num",), True),
    "got": (("num",), True),
    "error": (("num",), True),                 # in `unit`s
    "unit": (("str",), True),                  # "ulp" of out's dtype at the golden, or "abs" (golden 0)
    "why": (("str",), True),                   # "mismatch", "gross", "over", or "" (the largest error)
}
OPTIONAL_WRITTEN = ("worst", "outputs", "failed_outputs", "timing", "interleaved", "accuracy")      # record fields written only where they apply
METRIC_TYPES = {"standard": ("str",), "n": ("int",), "n_over": ("int",), "mismatches": ("int",),
                "n_gross": ("int",),
                "share_over": ("num",), "max_ulp": ("num",), "mean_ulp": ("num",), "max_abs": ("num",),
                "max_rel": ("num",), "rmse": ("num",)}


def _is(value: Any, types: Sequence[str]) -> bool:
    for t in types:
        if t == "str" and isinstance(value, str):
            return True
        if t == "int" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if t == "num" and ((isinstance(value, (int, float)) and not isinstance(value, bool))
                           or value in ("inf", "-inf", "nan")):
            return True
        if t == "bool" and isinstance(value, bool):
            return True
        if t == "null" and value is None:
            return True
        if t == "list" and isinstance(value, list):
            return True
        if t == "dict" and isinstance(value, dict):
            return True
    return False


def _check_fields(obj: Mapping, spec: Mapping, where: str) -> List[str]:
    errors = []
    for name, (types, required) in spec.items():
        if name not in obj:
            if required:
                errors.append(f"{where}: missing field '{name}'")
        elif not _is(obj[name], types):
            errors.append(f"{where}: field '{name}' is {short(obj[name])}, expected {' or '.join(types)}")
    for name in obj:
        if name not in spec:
            errors.append(f"{where}: unknown field {short(name)}")
    return errors


def validate(doc: Any) -> List[str]:
    """Every way `doc` departs from the documented schema; empty when it conforms."""
    if not isinstance(doc, dict):
        return ["top level: not an object"]
    errors = _check_fields(doc, RUN_FIELDS, "run")
    if doc.get("schema_version") not in (None,) + READABLE_VERSIONS:
        errors.append(f"run: schema_version {short(doc['schema_version'])} is not one of "
                      f"{', '.join(map(str, READABLE_VERSIONS))}")
    th = doc.get("tolerances_hash")
    if isinstance(th, str) and th and not (len(th) == 64 and all(c in "0123456789abcdef" for c in th)):
        errors.append(f"run: tolerances_hash {short(th)} is not a sha256 (64 lowercase hex digits) or \"\"")
    incidents = doc.get("incidents")
    if isinstance(incidents, list) and not all(isinstance(x, str) for x in incidents):
        errors.append("run: incidents must be strings")
    prot = doc.get("protections")
    if isinstance(prot, dict) and not all(isinstance(v, str) for v in prot.values()):
        errors.append("run: protections must map names to strings")
    tb = doc.get("timing_baseline")
    if isinstance(tb, dict) and (set(tb) != {"spec", "options"} or not isinstance(tb["spec"], str)
                                 or not isinstance(tb["options"], dict)
                                 or not all(isinstance(v, str) for v in tb["options"].values())):
        errors.append("run: timing_baseline must be {\"spec\": str, \"options\": {str: str}}")
    ab = doc.get("accuracy_baseline")
    if isinstance(ab, dict) and (set(ab) != {"spec", "options", "level"} or not isinstance(ab["options"], dict)
                                 or not all(isinstance(v, str) for v in [ab["spec"], ab["level"], *ab["options"].values()])):
        errors.append("run: accuracy_baseline must be {\"spec\": str, \"options\": {str: str}, \"level\": str}")
    if "windows" in doc and isinstance(doc["windows"], list):
        errors += trust.problems(doc["windows"])
    if isinstance(doc.get("shard"), str):
        try:
            shard.parse(doc["shard"])
        except shard.ShardError:
            errors.append(f"run: shard {short(doc['shard'])} is not K/N with 1 <= K <= N <= {shard.MAX_SHARDS}")
    keys = set()
    records = doc.get("records")
    for i, r in enumerate(records if isinstance(records, list) else []):
        where = f"records[{i}]"
        if not isinstance(r, dict):
            errors.append(f"{where}: not an object")
            continue
        errors += _check_fields(r, RECORD_FIELDS, where)
        if r.get("outcome") not in OUTCOMES:
            errors.append(f"{where}: outcome {short(r.get('outcome'))} not one of {', '.join(OUTCOMES)}")
        if r.get("kind") not in KINDS:
            errors.append(f"{where}: kind {short(r.get('kind'))} not one of {', '.join(KINDS)}")
        if isinstance(r.get("key"), str):
            if r["key"] in keys:
                errors.append(f"{where}: duplicate key {short(r['key'])}")
            keys.add(r["key"])
        errors += _check_elements(r.get("worst"), f"{where}.worst")
        failed = r.get("failed_outputs")
        for name, elements in (failed.items() if isinstance(failed, dict) else ()):
            if not isinstance(elements, list):
                errors.append(f"{where}.failed_outputs: {short(name)} is {short(elements)}, not a list of elements")
            errors += _check_elements(elements, f"{where}.failed_outputs.{short(name)}")
        m = r.get("metrics")
        if isinstance(m, dict):
            errors += _check_metrics(m, f"{where}.metrics")
        outs = r.get("outputs")
        for name, om in (outs.items() if isinstance(outs, dict) else ()):
            if not isinstance(om, dict):
                errors.append(f"{where}.outputs: {short(name)} is {short(om)}, not an object of metrics")
            else:
                errors += _check_metrics(om, f"{where}.outputs.{short(name)}")
        if "timing" in r:
            errors += [f"{where}.{p}" for p in timing_record.problems(r["timing"])]
        if "interleaved" in r:
            errors += [f"{where}.{p}" for p in pair.problems(r["interleaved"])]
        if "accuracy" in r:
            errors += [f"{where}.{p}" for p in accuracy.problems(r["accuracy"])]
    counts = doc.get("counts")
    if isinstance(counts, dict) and isinstance(records, list) and not errors:     # records well formed
        if counts != count_outcomes(doc["records"]):
            errors.append("run: counts do not match the records")
    return errors


def _check_elements(worst: Any, where: str) -> List[str]:
    """How a list of worst elements (WORST_FIELDS) departs from the schema (not a list: nothing)."""
    errors = []
    for j, e in enumerate(worst if isinstance(worst, list) else []):
        if not isinstance(e, dict):
            errors.append(f"{where}[{j}]: not an object")
            continue
        errors += _check_fields(e, WORST_FIELDS, f"{where}[{j}]")
        if e.get("unit") not in (None, "ulp", "abs"):
            errors.append(f"{where}[{j}]: unit {short(e['unit'])} not one of ulp, abs")
    return errors


def _check_metrics(m: Mapping, where: str) -> List[str]:
    """How one metrics object departs from METRIC_TYPES (a record's, or one output's)."""
    errors = []
    for name, types in METRIC_TYPES.items():
        if name in m and not _is(m[name], types):
            errors.append(f"{where}: field '{name}' is {short(m[name])}, expected {types[0]}")
    for name in m:
        if name not in METRIC_TYPES:
            errors.append(f"{where}: unknown field {short(name)}")
    return errors


# -- building ----------------------------------------------------------------------------------
def jsonable_number(v: Any) -> Any:
    """JSON has no inf/nan: they are written as strings (a mismatch has an infinite ulp error)."""
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return repr(v)                  # 'inf' or '-inf'
        return v
    if isinstance(v, np.integer):
        return int(v)
    return v


def number(v: Any) -> Optional[float]:
    """A metric back as a float (None for a missing one)."""
    if v is None:
        return None
    return float(v)


def case_fields(case: Any, kind: str, nodeid: str) -> Dict[str, Any]:
    """The fields of a record that come from the case itself (not from running it)."""
    # (a float attribute may be NaN or infinite, e.g. a C float parameter's rejection cases)
    attrs = {k: jsonable_number(v) for k, v in dict(case.attrs).items()}
    return {"key": nodeid, "case": case.id, "kind": kind, "op": case.op, "product": case.product,
            "dtypes": dict(case.dtypes), "out_dtype": case.out_dtype,
            "reduction": attrs.get("reduction"), "attrs": attrs,
            "shapes": {k: None if s is None else list(s) for k, s in case.shapes.items()},
            "out_shape": None if case.out_shape is None else list(case.out_shape),
            "layout": case.layout, "values": case.values, "expect": case.expect}


V1_ONLY = ("logTarget",)           # fields version 2 no longer writes  names-ok: schema v1's field


def make_record(fields: Mapping[str, Any], outcome: str, reason: Optional[str]) -> Dict[str, Any]:
    """A schema record from what travelled on `report.aclnn` plus the report's outcome."""
    rec = {k: fields.get(k) for k in RECORD_FIELDS
           if k not in ("outcome", "reason", "metrics") + V1_ONLY + OPTIONAL_WRITTEN}
    metrics = {k: jsonable_number(fields[k]) for k in METRICS if k in fields}
    rec.update(outcome=outcome, reason=reason, metrics=metrics or None)
    if fields.get("worst"):
        rec["worst"] = [_jsonable_element(e) for e in fields["worst"]]
    if fields.get("failed_outputs"):
        rec["failed_outputs"] = {n: [_jsonable_element(e) for e in w] for n, w in fields["failed_outputs"].items()}
    if fields.get("outputs"):
        rec["outputs"] = {n: {k: jsonable_number(m[k]) for k in METRICS if k in m} for n, m in fields["outputs"].items()}
    if fields.get("timing"):
        rec["timing"] = dict(fields["timing"])       # a TimingRecord's or NotTimed's to_json()
    if fields.get("interleaved"):
        rec["interleaved"] = dict(fields["interleaved"])   # suite/perf/pair.py's make()
    if fields.get("accuracy"):
        rec["accuracy"] = _jsonable_tree(fields["accuracy"])   # suite/run/double.py's field
    return rec


def _jsonable_tree(v: Any) -> Any:
    """`v` with every number JSON can hold (an infinite ratio is "inf"), nested objects included."""
    return {k: _jsonable_tree(x) for k, x in v.items()} if isinstance(v, Mapping) else jsonable_number(v)


def _jsonable_element(e: Mapping[str, Any]) -> Dict[str, Any]:
    inputs = e.get("inputs")
    return {**{k: jsonable_number(v) for k, v in e.items() if k != "inputs"},
            "inputs": None if inputs is None else {k: jsonable_number(v) for k, v in inputs.items()}}


def machine() -> Dict[str, str]:
    return {"platform": platform.platform(), "python": sys.version.split()[0],
            "numpy": np.__version__, "hostname": socket.gethostname()}


def count_outcomes(records: Iterable[Mapping]) -> Dict[str, int]:
    counts = {o: 0 for o in OUTCOMES}
    for r in records:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    return counts


def make_document(run: Mapping[str, Any], records: Iterable[Mapping], incomplete: Optional[str] = None,
                  incidents: Sequence[str] = ()) -> Dict[str, Any]:
    recs = sorted(records, key=lambda r: r["key"])
    return {"schema_version": SCHEMA_VERSION, "suite_version": suite.__version__, **run,
            "counts": count_outcomes(recs), "complete": incomplete is None, "incomplete": incomplete,
            "incidents": list(incidents), "records": recs}


def is_complete(doc: Mapping) -> bool:
    """Whether the run finished (a version-1 file, which cannot say, counts as finished)."""
    return doc.get("complete") is not False


# Strict JSON (a NaN or inf that is not one of the strings "nan", "inf", "-inf" is a ValueError):
# the run's fields indented, each record on one line.
_HEAD = json.JSONEncoder(allow_nan=False, indent=1)
_RECORD = json.JSONEncoder(allow_nan=False, separators=(",", ":"))


def dumps(doc: Mapping) -> bytes:
    """Indented, but one line per record (the last field): readable, diffable, ~1 kB per case."""
    text = _HEAD.encode({k: v for k, v in doc.items() if k != "records"})[:-2]
    recs = ",\n  ".join(_RECORD.encode(r) for r in doc["records"])
    return (text + ',\n "records": ' + ("[\n  " + recs + "\n ]" if recs else "[]") + "\n}\n").encode()


def write(path: Path, doc: Mapping) -> None:
    atomic_write(Path(path), dumps(doc))


def read(path: Path) -> Dict[str, Any]:
    """Load and validate; a bad file is one ResultsError naming the file and the first problems
    (suite.jsonfile: size, encoding and nesting limits; NaN and Infinity, which JSON has not and
    which write() could not write back, are refused)."""
    doc = jsonfile.load_strict(Path(path), ResultsError)
    errors = validate(doc)
    if errors:
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise ResultsError(f"{path}: not a results.json of schema {SCHEMA_VERSION}: "
                           + "; ".join(errors[:5]) + more)
    return doc

