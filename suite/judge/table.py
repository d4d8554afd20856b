"""The tolerance table (cases/tolerances.yaml): named standards built from the rules, and which one
judges each operator and dtype; a bad table fails with its file, line and field."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple


from suite.common import dtypes
from suite.common.yamlfile import FileError, LineDict, load
from suite.judge.rules import COMMON, RULES


@dataclass(frozen=True)
class Standard:
    name: str
    rule: str
    params: Mapping[str, Mapping[str, float]]
    doc: str = ""

    def param(self, key: str, dtype_name: str) -> Optional[float]:
        return self.params.get(key, {}).get(dtype_name)


@dataclass
class ToleranceTable:
    standards: Dict[str, Standard]
    default: str
    operators: Dict[str, str]
    slack_ulps: float
    source: str = ""
    aliases: Dict[str, str] = field(default_factory=dict)    # another tool's word -> a standard's name

    def for_op(self, op: str, override: Optional[str] = None) -> Standard:
        return self.standards[self.resolve(override or self.operators.get(op, self.default))]

    def resolve(self, name: str) -> str:
        """A standard's name, or the standard an alias names."""
        return self.aliases.get(name, name)

    def names(self) -> Tuple[str, ...]:
        """Every name a case file, --standard or the operators table may use: standards, then aliases."""
        return tuple(self.standards) + tuple(self.aliases)


def load_table(path: Path) -> ToleranceTable:
    """Read and check the tolerance table; every mistake names file, line and field."""
    doc = load(path)
    if not isinstance(doc, LineDict):
        raise FileError(path, 1, None, "the tolerance table is a mapping")
    allowed = {"default", "operators", "standards", "float32_slack_ulps", "aliases"}
    for k in doc:
        if k not in allowed:
            raise FileError(path, doc.line_of(k), k, f"unknown key (allowed: {', '.join(sorted(allowed))})")
    stds = doc.get("standards")
    if not isinstance(stds, LineDict) or not stds:
        raise FileError(path, doc.line_of("standards"), "standards", "is a mapping of standard name to its rule")
    standards: Dict[str, Standard] = {}
    for name, body in stds.items():
        where = f"standards.{name}"
        if not isinstance(name, str):
            raise FileError(path, stds.line_of(name), where, "a standard's name is text")
        if not isinstance(body, LineDict):
            raise FileError(path, stds.line_of(name), where, "is a mapping: its rule, doc and parameters")
        if "rule" not in body:
            raise FileError(path, stds.line_of(name), where, "gives a 'rule'")
        rule = body["rule"]
        if not isinstance(rule, str) or rule not in RULES:
            raise FileError(path, body.line_of("rule"), f"{where}.rule",
                            f"unknown rule {rule!r} (known: {', '.join(RULES)})")
        if not isinstance(body.get("doc", ""), str):
            raise FileError(path, body.line_of("doc"), f"{where}.doc", f"is text, not {body['doc']!r}")
        params: Dict[str, Dict[str, float]] = {}
        for key, val in body.items():
            if key in ("rule", "doc"):
                continue
            if key not in RULES[rule].params + RULES[rule].optional + COMMON:
                raise FileError(path, body.line_of(key), f"{where}.{key}", f"not a parameter of rule {rule}")
            if not isinstance(val, LineDict):
                raise FileError(path, body.line_of(key), f"{where}.{key}", "is a mapping of dtype to number")
            params[key] = {}
            for dt, num in val.items():
                if dt not in dtypes.JUDGED:
                    what = ("an exact dtype, compared bit for bit: it has no tolerance"
                            if dt in dtypes.EXACT else "unknown dtype")
                    raise FileError(path, val.line_of(dt), f"{where}.{key}.{dt}",
                                    f"{what} (judged dtypes: {', '.join(dtypes.JUDGED)})")
                if isinstance(num, bool) or not isinstance(num, (int, float)) or not 0 <= num < math.inf:
                    raise FileError(path, val.line_of(dt), f"{where}.{key}.{dt}",
                                    f"expected a finite non-negative number, got {num!r}")
                if key == "gross" and num == 0:
                    raise FileError(path, val.line_of(dt), f"{where}.{key}.{dt}",
                                    f"the gross-error guard is a finite positive relative error, got {num!r}")
                if key in RULES[rule].shares and num > 1:
                    raise FileError(path, val.line_of(dt), f"{where}.{key}.{dt}",
                                    f"a share of elements is at most 1, got {num!r}")
                params[key][dt] = float(num)
        for key in RULES[rule].params:
            missing = [d for d in dtypes.JUDGED if d not in params.get(key, {})]
            if missing:
                line = body.line_of(key) if key in body else stds.line_of(name)
                raise FileError(path, line, f"{where}.{key}", f"no value for {', '.join(missing)}")
        for group in RULES[rule].together:
            given = [k for k in group if k in params]
            for dt in dtypes.JUDGED:
                have = [k for k in given if dt in params[k]]
                if have and len(have) < len(group):
                    lack = next(k for k in group if k not in have)
                    raise FileError(path, body.line_of(have[0]), f"{where}.{lack}",
                                    f"{' and '.join(group)} are given together: no {lack} for {dt}")
        standards[name] = Standard(name, rule, params, body.get("doc", ""))
    aliases = _aliases(path, doc, standards)
    default = doc.get("default")
    if not isinstance(default, str) or aliases.get(default, default) not in standards:
        raise FileError(path, doc.line_of("default"), "default", f"names no standard ({', '.join(standards)})")
    operators = doc.get("operators")
    if operators is None:                   # absent, or `operators:` with nothing under it
        operators = {}
    if not isinstance(operators, dict):
        raise FileError(path, doc.line_of("operators"), "operators",
                        f"is a mapping of operator to standard name, not {operators!r}")
    for op, std in operators.items():
        if not isinstance(op, str):
            raise FileError(path, operators.line_of(op), f"operators.{op}", "an operator's name is text")
        if not isinstance(std, str) or aliases.get(std, std) not in standards:
            raise FileError(path, operators.line_of(op), f"operators.{op}", f"names no standard {std!r}")
    slack = doc.get("float32_slack_ulps", 8)
    if isinstance(slack, bool) or not isinstance(slack, (int, float)) or not 0 <= slack < math.inf:
        raise FileError(path, doc.line_of("float32_slack_ulps"), "float32_slack_ulps",
                        f"a finite non-negative number, not {slack!r}")
    return ToleranceTable(standards, default, dict(operators), float(slack), str(path), aliases)


def _aliases(path: Path, doc: LineDict, standards: Mapping[str, Standard]) -> Dict[str, str]:
    """`aliases:`: another tool's name for a standard (the test kit's `mix_tolerance`, an ATK case
    file's `single_bm`), each naming a standard of the table, none a standard's own name."""
    raw = doc.get("aliases")
    if raw is None:
        return {}
    if not isinstance(raw, LineDict):
        raise FileError(path, doc.line_of("aliases"), "aliases", f"is a mapping of a name to a standard, not {raw!r}")
    out: Dict[str, str] = {}
    for name, std in raw.items():
        where = f"aliases.{name}"
        if not isinstance(name, str):
            raise FileError(path, raw.line_of(name), where, "an alias is text")
        if name in standards:
            raise FileError(path, raw.line_of(name), where, "is a standard's own name")
        if not isinstance(std, str) or std not in standards:
            raise FileError(path, raw.line_of(name), where,
                            f"names no standard {std!r} (standards: {', '.join(standards)})")
        out[name] = std
    return out


def standard_names(path: Path) -> Tuple[str, Tuple[str, ...]]:
    """(the table's file, its standards' names): what a case file's `standard:` is checked against
    when it is read (suite/cases/load.py), by the plugin and `aclnn-conform cases validate`."""
    return str(path), load_table(path).names()
