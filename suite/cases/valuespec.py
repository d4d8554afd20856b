"""A case's own values: `values:` given as a mapping of input name to a spec (a range, a constant,
`full`, or a range with special values sprinkled in; inputs it does not name draw from the value set
`set:`, default uniform). Parsed once where it is written (it names no dtype), checked against each
combination's dtypes, named in ids and datakeys by a token (`v` + 10 hex digits of the sha256 of its
canonical JSON) and drawn through suite/values' exact transforms (docs/cases.md)."""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from suite.common import dtypes
from suite.common.yamlfile import FileError, LineDict
from suite.values.draw import Binades, Constant, Dist, Sprinkle, Uniform
from suite.values.exact import Integers, IntSprinkle

WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0": -0.0}
SHARE = 0.2                                  # a sprinkle's default share of elements
BASE = "uniform"                             # the value set of the inputs a mapping does not name
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")     # "3.39e38": YAML 1.1 reads it as text
Number = Union[int, float, str]              # an int, a finite float, or a word of WORDS


@dataclass(frozen=True)
class Range:
    """Uniform on [lo, hi) (an exact input: the integers lo..hi); finite numbers, lo < hi."""
    lo: Union[int, float]
    hi: Union[int, float]


@dataclass(frozen=True)
class Const:
    value: Number


@dataclass(frozen=True)
class Full:
    """Every finite magnitude of the dtype over its binades, both signs (an exact input: its range)."""


@dataclass(frozen=True)
class Mixed:
    base: Union[Range, Full]
    specials: Tuple[Number, ...]
    share: float


@dataclass(frozen=True)
class ValueSpec:
    base: str                                           # the value set of the inputs not named
    inputs: Tuple[Tuple[str, Any], ...]                 # input name -> Range, Const, Full or Mixed
    token: str                                          # v + 10 hex digits: the id's value-set field
    lines: Tuple[Tuple[str, int], ...] = field(default=(), compare=False, hash=False)


def canonical(item: Any) -> Any:
    """An input's spec as the token hashes it: numbers as int or float (JSON writes a float as
    Python's repr), the words as written, `full`."""
    if isinstance(item, Range):
        return [item.lo, item.hi]
    if isinstance(item, Const):
        return item.value
    if isinstance(item, Full):
        return "full"
    return {"range": canonical(item.base), "specials": list(item.specials), "share": item.share}


def token_of(base: str, inputs: Mapping[str, Any]) -> str:
    doc = {**{n: canonical(s) for n, s in inputs.items()}, "set": base}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return "v" + hashlib.sha256(text.encode()).hexdigest()[:10]


# -- parsing -----------------------------------------------------------------------------------
def parse(ctx: Any, op: Any, node: Any, key: Any, value: Any) -> Union[str, ValueSpec]:
    """`values` of a single case, or one entry of a matrix's list: a value set's name, or a
    mapping of input name to a spec (with `set:`)."""
    if isinstance(value, str):
        if value not in op.value_sets:
            raise ctx.fail(node, key, f"unknown value set {value!r} (known: {', '.join(op.value_sets)})")
        return value
    if not isinstance(value, LineDict) or not value:
        raise ctx.fail(node, key, "a value set's name, or a mapping of input name to a range, a constant, "
                                  "full or {range, specials, share}")
    base = value.get("set", BASE)
    if not isinstance(base, str) or base not in op.value_sets:
        raise FileError(ctx.path, value.line_of("set"), "values.set",
                        f"unknown value set {base!r} (known: {', '.join(op.value_sets)})")
    items: Dict[str, Any] = {}
    for name in value:
        if name == "set":
            continue
        if name not in op.inputs:
            raise FileError(ctx.path, value.line_of(name), f"values.{name}",
                            f"unknown input (inputs: {', '.join(op.inputs)}; or set)")
        items[name] = _item(_Fail(ctx.path, value.line_of(name), f"values.{name}"), value[name])
    if not items:
        raise ctx.fail(node, key, "names no input (give at least one input's spec, or the value set's name)")
    ordered = {n: items[n] for n in op.inputs if n in items}
    return ValueSpec(base, tuple(ordered.items()), token_of(base, ordered),
                     tuple((n, value.line_of(n)) for n in ordered))


class _Fail:
    def __init__(self, path: Any, line: int, where: str) -> None:
        self.path, self.line, self.where = path, line, where

    def __call__(self, message: str) -> FileError:
        return FileError(self.path, self.line, self.where, message)


def _number(fail: _Fail, v: Any) -> Number:
    """A constant: an int, a finite float, or a word (nan, inf, -inf, -0; YAML's .nan, .inf, -.inf
    and -0.0 become the same words)."""
    if isinstance(v, str) and v.strip().lower() in WORDS:
        return v.strip().lower()
    if isinstance(v, str) and _NUMBER.fullmatch(v.strip()):
        v = float(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise fail(f"expected a number or one of {', '.join(WORDS)}, full, [lo, hi] or "
                   f"{{range, specials, share}}, not {v!r}")
    if isinstance(v, int):
        try:
            float(v)
        except OverflowError:
            raise fail(f"{v} is past float64's range") from None
        return v
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "-0" if v == 0 and math.copysign(1.0, v) < 0 else v


def _range(fail: _Fail, v: Any) -> Union[Range, Const]:
    if not isinstance(v, list) or len(v) != 2:
        raise fail(f"a range is [lo, hi], not {v!r}")
    lo, hi = (_number(fail, x) for x in v)
    for x in (lo, hi):
        if isinstance(x, str) and x != "-0":
            raise fail(f"a range's ends are finite numbers, not {x}")
    lo, hi = (0.0 if x == "-0" else x for x in (lo, hi))
    try:
        span = float(hi) - float(lo)
    except OverflowError:
        raise fail(f"[{lo}, {hi}] is past float64's range") from None
    if lo > hi:
        raise fail(f"lo {lo} is greater than hi {hi}")
    if not math.isfinite(span):
        raise fail(f"[{lo}, {hi}] is wider than float64 can hold")
    return Const(lo) if lo == hi else Range(lo, hi)


def _item(fail: _Fail, v: Any) -> Any:
    if isinstance(v, str) and v.strip() == "full":
        return Full()
    if isinstance(v, list):
        return _range(fail, v)
    if isinstance(v, dict):
        if set(v) - {"range", "specials", "share"} or "range" not in v or "specials" not in v:
            raise fail("a mixed spec is {range: [lo, hi] or full, specials: [...], share: s} "
                       f"(share optional), not keys {', '.join(map(str, v))}")
        r = v["range"]
        base = Full() if isinstance(r, str) and r.strip() == "full" else _range(fail, r)
        if isinstance(base, Const):
            raise fail(f"a mixed spec's range has lo < hi, not {r!r}")
        specials = v["specials"]
        if not isinstance(specials, list) or not specials:
            raise fail(f"specials is a non-empty list of numbers or {', '.join(WORDS)}")
        share = v.get("share", SHARE)
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise fail(f"share is a number in (0, 1], not {share!r}")
        return Mixed(base, tuple(_number(fail, x) for x in specials), float(share))
    return Const(_number(fail, v))


# -- against a combination's dtypes, and drawn ------------------------------------------------
def check(ctx: Any, spec: ValueSpec, ins: Mapping[str, Optional[str]]) -> None:
    """Refuse, at the input's line, a spec its dtype cannot take: an exact (integer or BOOL) input
    given a float, a word or a value outside the dtype's range. A float input takes any number (a
    value past its range rounds to inf, as IEEE rounds it)."""
    lines = dict(spec.lines)
    for name, item in spec.inputs:
        dt = ins.get(name)
        if dt not in dtypes.EXACT:
            continue
        fail = _Fail(ctx.path, lines.get(name, 0), f"values.{name}")
        lo, hi = dtypes.exact_range(dt)
        for x in _numbers(item):
            if isinstance(x, bool) or not isinstance(x, int):
                raise fail(f"input {name} is {dt}, an exact dtype: it takes integers, not {x}")
            if not lo <= x <= hi:
                raise fail(f"input {name} is {dt}: {x} is outside its {lo}..{hi}")


def _numbers(item: Any) -> Tuple[Number, ...]:
    """Every number an input's spec names."""
    if isinstance(item, Range):
        return item.lo, item.hi
    if isinstance(item, Const):
        return (item.value,)
    if isinstance(item, Mixed):
        return (*_numbers(item.base), *item.specials)
    return ()


def _float(x: Number) -> float:
    return WORDS[x] if isinstance(x, str) else float(x)


def dist(item: Any, dtype_name: str) -> Dist:
    """The distribution of one input's spec in its dtype (checked by `check` first)."""
    if dtype_name in dtypes.EXACT:
        if isinstance(item, Mixed):
            return IntSprinkle(dist(item.base, dtype_name), tuple(int(x) for x in item.specials), item.share)
        if isinstance(item, Full):
            return Integers(*dtypes.exact_range(dtype_name))
        if isinstance(item, Const):
            return Integers(int(item.value), int(item.value))
        return Integers(int(item.lo), int(item.hi))
    if isinstance(item, Mixed):
        return Sprinkle(dist(item.base, dtype_name), tuple(_float(x) for x in item.specials), item.share)
    if isinstance(item, Full):
        info = dtypes.finfo(dtypes.dtype_of(dtype_name))
        return Binades(float(info.tiny), float(info.max))
    if isinstance(item, Const):
        return Constant(_float(item.value))
    return Uniform(float(item.lo), float(item.hi))


def dists(spec: ValueSpec, in_dtypes: Mapping[str, str]) -> Dict[str, Dist]:
    """The named inputs' distributions, for the inputs the call passes (not NULL)."""
    return {n: dist(item, in_dtypes[n]) for n, item in spec.inputs if in_dtypes.get(n) is not None}
