"""A record's `accuracy` field (pytest --accuracy-baseline, the double benchmark; docs/results-schema.md
"accuracy"): its schema check, and the section summary.md, report.html and the terminal show of it.
The field is made by suite/run/double.py from suite/judge/benchmark.py's verdict."""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable, List, Mapping, Optional

SIDE = {"mare": ("num", True), "mere": ("num", True), "rmse": ("num", True), "small_errors": ("int", False)}
RATIOS = {"mare": ("num", True), "mere": ("num", True), "rmse": ("num", True), "small": ("num", False)}
LIMITS = {k: ("num", False) for k in RATIOS}
# name -> (kind, may be null); the measured form (the first output's, or each output's under `outputs`)
MEASURED = {"level": ("str", False), "candidate": (SIDE, False), "baseline_metrics": (SIDE, False),
            "ratios": (RATIOS, False), "limits": (LIMITS, False), "n_large": ("int", False),
            "n_small": ("int", False), "special_mismatches": ("int", False), "passed": ("bool", False)}
OPTIONAL = {"why": "str"}
MAX_ROWS = 200           # rows of the per-case table; the rest are counted (results.json has them all)


def _is(v: Any, kind: str) -> bool:
    if kind == "num":
        return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in ("inf", "-inf", "nan")
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, {"str": str, "bool": bool, "dict": dict}[kind])


def _fields(obj: Any, spec: Mapping[str, Any], where: str, optional: Mapping[str, str] = {}) -> List[str]:
    if not isinstance(obj, Mapping):
        return [f"{where} is {type(obj).__name__}, not an object"]
    out = [f"{where}: missing field '{k}'" for k in spec if k not in obj]
    out += [f"{where}: unknown field {k!r:.40}" for k in obj if k not in spec and k not in optional]
    for k, (kind, nullable) in spec.items():
        if k not in obj or (obj[k] is None and nullable):
            continue
        if isinstance(kind, dict):
            out += _fields(obj[k], kind, f"{where}.{k}")
        elif not _is(obj[k], kind):
            out.append(f"{where}: field '{k}' is {obj[k]!r:.40}, expected {kind}")
    out += [f"{where}: field '{k}' is {obj[k]!r:.40}, expected {kind}" for k, kind in optional.items()
            if k in obj and not _is(obj[k], kind)]
    return out


def problems(obj: Any) -> List[str]:
    """Every way an `accuracy` field departs from the schema; empty if none."""
    if not isinstance(obj, Mapping):
        return [f"accuracy is {type(obj).__name__}, not an object"]
    if not isinstance(obj.get("baseline"), str):
        return ["accuracy: field 'baseline' missing or not a str"]
    if "error" in obj:
        return _fields(obj, {"baseline": ("str", False), "error": ("str", False)}, "accuracy")
    if "skipped" in obj:
        return _fields(obj, {"baseline": ("str", False), "level": ("str", False), "skipped": ("str", False)},
                       "accuracy")
    out = _fields(obj, {"baseline": ("str", False), **MEASURED}, "accuracy", {**OPTIONAL, "outputs": "dict"})
    for name, m in (obj.get("outputs") or {}).items() if isinstance(obj.get("outputs"), Mapping) else ():
        out += _fields(m, MEASURED, f"accuracy.outputs.{name!s:.40}", OPTIONAL)
    return out


# -- what the reports show ------------------------------------------------------------------------
HEADER = ["case", "verdict", "MARE x", "MERE x", "RMSE x", "small x", "candidate MERE", "baseline MERE", "why"]
ORDER = ("FAIL", "BASELINE ERROR", "PASS", "SKIPPED")


def _verdict(a: Mapping[str, Any]) -> str:
    if "error" in a:
        return "BASELINE ERROR"
    if "skipped" in a:
        return "SKIPPED"
    return "PASS" if a.get("passed") else "FAIL"


def _x(v: Any) -> str:
    return "-" if v is None else (f"{v:.3g}" if isinstance(v, (int, float)) else str(v))


def rows(records: Iterable[Mapping[str, Any]]) -> List[List[str]]:
    """HEADER's cells per record that carries `accuracy`, failures first, then the baseline's errors."""
    out = []
    for r in records:
        a = r.get("accuracy")
        if not isinstance(a, Mapping):
            continue
        ratios = a.get("ratios") or {}
        out.append([r["case"], _verdict(a), *(_x(ratios.get(k)) for k in ("mare", "mere", "rmse", "small")),
                    _x((a.get("candidate") or {}).get("mere")), _x((a.get("baseline_metrics") or {}).get("mere")),
                    str(a.get("why") or a.get("error") or a.get("skipped") or "")])
    rank = {k: i for i, k in enumerate(ORDER)}
    return sorted(out, key=lambda c: rank.get(c[1], len(ORDER)))


def _title(doc: Mapping[str, Any], found: List[List[str]], code: Callable[[str], str]) -> str:
    counts = Counter(c[1] for c in found)
    # the run's field; else (the terminal, which has the records only) what the records name
    run = doc.get("accuracy_baseline") or next(({"spec": a["baseline"], "level": a["level"]} for r in doc["records"]
                                                for a in [r.get("accuracy")] if isinstance(a, Mapping)
                                                and "level" in a), {})
    return (f"Double benchmark against the accuracy baseline {code(str(run.get('spec', '?')))} at "
            f"{run.get('level', '?')} ({len(found)} cases: " + ", ".join(f"{counts[k]} {k}" for k in ORDER if counts[k])
            + ")")


def note(doc: Mapping[str, Any]) -> Optional[str]:
    """What the run must say of a baseline that failed (None when none did): those cases were judged
    by their standard alone."""
    n = sum(1 for c in rows(doc["records"]) if c[1] == "BASELINE ERROR")
    return None if not n else (f"the accuracy baseline failed on {n} case{'s' if n != 1 else ''} (its error is in "
                               f"each record's accuracy.error): {'they were' if n != 1 else 'it was'} judged by "
                               f"the standard alone, with no double benchmark")


def lines(doc: Mapping[str, Any], row: Callable[[List[Any]], str]) -> List[str]:
    """The Markdown section (empty when no record carries `accuracy`)."""
    found = rows(doc["records"])
    if not found:
        return []
    said = note(doc)
    out = ["", f"## {_title(doc, found, lambda s: f'`{s}`')}", ""] + ([f"**Note**: {said}.", ""] if said else [])
    out += ["Ratios are the candidate's error over the baseline's, both against the float64 golden.", "",
            row(HEADER), row(["---", "---"] + ["---:"] * 6 + ["---"])]
    out += [row([f"`{c[0]}`", *c[1:]]) for c in found[:MAX_ROWS]]
    if len(found) > MAX_ROWS:
        out.append(f"\n... and {len(found) - MAX_ROWS} more cases (results.json has every record's `accuracy`)")
    return out


def section_html(doc: Mapping[str, Any], escape: Callable[[Any], str]) -> str:
    """report.html's section (empty when no record carries `accuracy`)."""
    found = rows(doc["records"])
    if not found:
        return ""
    left = (0, 1, 8)
    head = "".join(f"<th{' class=l' if i in left else ''}>{escape(h)}</th>" for i, h in enumerate(HEADER))
    body = "".join(f"<tr{' class=bad' if c[1] == 'FAIL' else ''}>"
                   + "".join(f"<td{' class=l' if i in left else ''}>{escape(x)}</td>" for i, x in enumerate(c))
                   + "</tr>" for c in found[:MAX_ROWS])
    more = f"<p>... and {len(found) - MAX_ROWS} more cases (see results.json)</p>" if len(found) > MAX_ROWS else ""
    said = note(doc)
    return (f"<h2>{_title(doc, found, lambda s: f'<code>{escape(s)}</code>')}</h2>\n"
            + (f"<p><b>Note</b>: {escape(said)}.</p>\n" if said else "")
            + f"<table><tr>{head}</tr>\n{body}</table>{more}\n")


def terminal_lines(doc: Mapping[str, Any]) -> List[str]:
    """The terminal's section: the title's counts and the note (empty when no record carries `accuracy`)."""
    found = rows(doc["records"])
    if not found:
        return []
    said = note(doc)
    return [_title(doc, found, str)] + ([said] if said else []) + \
        [f"{c[1]:<14} {c[0]}: {c[-1]}" for c in found if c[1] == "FAIL"][:20]
