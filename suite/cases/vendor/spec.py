"""What the vendor's files say about values and attributes, in the case format's terms: a value
spec per input (`values:`), an attribute given as a list or a range, the tolerance standard. Both
formats' readers (atk.py, ttk.py) share these; a vendor form with no counterpart raises Refused
with the reason (docs/vendor-cases.md, "What is refused")."""
from __future__ import annotations

import ast
import math
from typing import Any, Dict, List, Optional, Sequence

SPECIAL_WORDS = ("nan", "inf", "-inf", "-0")
# An integer range of at most this many values becomes the list of them; a wider one its two ends
# and its middle ({range: [lo, hi], count: RANGE_COUNT}): the vendor file asks for one value drawn
# from the range per run, which a case file cannot say.
LIST_UP_TO = 8
RANGE_COUNT = 3
# ATK `standard.acc` words the tolerance table knows (cases/tolerances.yaml: `single_bm` a standard,
# the others aliases), written into the case as they are; a single_bm's `type` (high_precision,
# high_performance) is the word kept. "default" is the test kit's default standard, `mixed`. Any
# other form (md5, ...) leaves the case to the table's choice.
ATK_STANDARDS = {"single_bm": "single_bm", "high_precision": "high_precision",
                 "high_performance": "high_performance", "double_benchmark": "double_benchmark",
                 "default": "mixed"}


class Refused(Exception):
    """Why one vendor case is not imported: one line."""


# -- numbers and the special words --------------------------------------------------------------------
def word_or_number(v: Any, what: str) -> Any:
    """A constant as the case format writes it: a finite number, or nan, inf, -inf, -0."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise Refused(f"{what}: {v!r} is not a number")
    if isinstance(v, str):
        w = v.strip().lower()
        if w in ("nan", "inf", "-inf", "+inf"):
            return w.lstrip("+")
        try:
            v = float(w)
        except ValueError:
            raise Refused(f"{what}: {v!r} is not a number or one of nan, inf, -inf") from None
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0 and math.copysign(1.0, v) < 0:
            return "-0"
        return int(v) if v.is_integer() and abs(v) < 2 ** 53 else v
    return v


def _finite(v: Any) -> bool:
    return not isinstance(v, str) or v == "-0"


def _num(v: Any) -> Any:
    """A range end: -0 as the number it is."""
    return -0.0 if v == "-0" else v


def range_spec(lo: Any, hi: Any, specials: Sequence[Any], what: str) -> Any:
    """[lo, hi] with guaranteed values: a constant where lo == hi and nothing is mixed in; `full`
    for (-inf, inf); the specials sprinkled into the range."""
    lo, hi = word_or_number(lo, what), word_or_number(hi, what)
    extra = [word_or_number(s, what) for s in specials]
    if (lo, hi) == ("-inf", "inf"):
        base: Any = "full"
    elif not (_finite(lo) and _finite(hi)):
        if lo == hi and not extra:
            return lo
        raise Refused(f"{what}: a range with an infinite or NaN end, [{lo}, {hi}] (only [-inf, inf], "
                      f"the whole range, or a constant is expressible)")
    else:
        lo, hi = _num(lo), _num(hi)
        if lo > hi:
            raise Refused(f"{what}: an empty range, [{lo}, {hi}] (lo > hi)")
        base = word_or_number(lo, what) if lo == hi else [lo, hi]
    if not extra:
        return base
    return {"range": base if isinstance(base, (list, str)) else [base, base], "specials": extra}


# -- ATK range_values ---------------------------------------------------------------------------------
def atk_values(rv: Any, what: str) -> Any:
    """A tensor's `range_values`: [lo, hi]; a number; "nan", "inf", "-inf"; a list of one of
    those (that constant); ["-inf", "inf"] (every finite magnitude: `full`)."""
    if isinstance(rv, list):
        if len(rv) == 1:
            return word_or_number(rv[0], what)
        if len(rv) == 2:
            return range_spec(rv[0], rv[1], (), what)
        raise Refused(f"{what}: range_values {rv!r}: a list of 1 or 2 values is read")
    if isinstance(rv, dict):
        raise Refused(f"{what}: range_values {rv!r} names a distribution, not a range")
    return word_or_number(rv, what)


def attr_value(v: Any, kind: type, what: str) -> Any:
    """An attribute's value of its declared kind (bool, int, float)."""
    if kind is bool:
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.strip().lower() in ("true", "false"):
            return v.strip().lower() == "true"
        raise Refused(f"{what}: {v!r} is not true or false")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise Refused(f"{what}: {v!r} is not a number")
    if kind is int:
        if isinstance(v, float) and not v.is_integer():
            raise Refused(f"{what}: {v!r} is not an integer")
        return int(v)
    return float(v)


def attr_range(lo: Any, hi: Any, kind: type, what: str) -> Any:
    """An attribute given as [lo, hi]: the value where lo == hi; every integer of a short integer
    range; else {range: [lo, hi], count: RANGE_COUNT}."""
    if kind is bool:
        return sorted({attr_value(lo, kind, what), attr_value(hi, kind, what)})
    lo, hi = attr_value(lo, kind, what), attr_value(hi, kind, what)
    if lo > hi:
        raise Refused(f"{what}: an empty range, [{lo}, {hi}] (lo > hi)")
    if lo == hi:
        return lo
    if kind is int and hi - lo + 1 <= LIST_UP_TO:
        return list(range(lo, hi + 1))
    return {"range": [lo, hi], "count": RANGE_COUNT}


def atk_attr(rv: Any, kind: type, what: str) -> Any:
    """An ATK attribute's `range_values`: a value, [lo, hi], or a list of one value."""
    if isinstance(rv, list):
        if len(rv) == 1:
            return attr_value(rv[0], kind, what)
        if len(rv) == 2:
            return attr_range(rv[0], rv[1], kind, what)
        raise Refused(f"{what}: range_values {rv!r}: a value or [lo, hi] is read")
    return attr_value(rv, kind, what)


def atk_standard(std: Any) -> Optional[str]:
    """The table standard for an ATK case's `standard` ({"acc": "single_bm" | {"single_bm": {...}}, ...})."""
    acc = std.get("acc") if isinstance(std, dict) else None
    name = next(iter(acc), None) if isinstance(acc, dict) else acc
    if name == "single_bm" and isinstance(acc, dict) and isinstance(acc["single_bm"], dict):
        kind = acc["single_bm"].get("type")
        name = kind if kind in ("high_precision", "high_performance") else name
    return ATK_STANDARDS.get(name) if isinstance(name, str) else None


# -- TTK cells ----------------------------------------------------------------------------------------
_NAMES = {"inf": math.inf, "nan": math.nan, "None": None, "True": True, "False": False,
          "true": True, "false": False, "TRUE": True, "FALSE": False}


def literal(text: str, what: str) -> Any:
    """A TTK cell: Python literals (tuples, lists, dicts, numbers, strings, None, True, False) and
    the bare names inf and nan, as the kit's eval reads them; `-0` stays negative zero, the sign
    the file shows (docs/vendor-cases.md). Anything else (a call, an operator) is refused."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise Refused(f"{what}: cannot read {text.strip()[:60]!r}") from None
    return _value(tree, text, what)


def _value(node: ast.AST, text: str, what: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None))):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_value(e, text, what) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_value(k, text, what): _value(v, text, what) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand, text, what)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if isinstance(node.op, ast.UAdd):
                return v
            return -0.0 if v == 0 else -v
    raise Refused(f"{what}: cannot read {text.strip()[:60]!r} (literals, inf and nan only)")


def ttk_values(rng: Any, what: str) -> Any:
    """One input's entry of `input_data_ranges`: (lo, hi) and values mixed in after them; None
    ends are the kit's default, -2 and 2; (None, None) or None: not given (None is returned)."""
    if rng is None:
        return None
    if not isinstance(rng, (tuple, list)) or len(rng) < 2:
        raise Refused(f"{what}: {rng!r} is not (min, max, ...)")
    lo, hi, *extra = rng
    if lo is None and hi is None and not extra:
        return None
    return range_spec(-2 if lo is None else lo, 2 if hi is None else hi, extra, what)


def per_input(items: Any, n: int, what: str) -> List[Any]:
    """A TTK per-input tuple aligned to n inputs as the kit aligns it: one entry is every input's,
    fewer are padded with None (not given), more are cut."""
    if items in (None, "", ()):
        return [None] * n
    if not isinstance(items, (tuple, list)):
        raise Refused(f"{what}: {items!r} is not a tuple")
    items = list(items)
    if len(items) == 1:
        return items * n
    return (items + [None] * n)[:n]


def canonical_specs(specs: Dict[str, Any]) -> Dict[str, Any]:
    """The inputs that were given a spec (an input without one draws from the case's value set)."""
    return {n: s for n, s in specs.items() if s is not None}
