"""The top of report.html, what a reader must see without scrolling: the verdict banner (PASS or
FAIL, the counts, why it failed, the backend and its options as key=value), then the failures
grouped by what they share, largest group first, each with its count, worst element and one
reproducer (suite/report/groups.py). Everything taken from the results document is escaped: a
backend's message may hold markup."""
from __future__ import annotations

import html
from typing import List, Mapping, Optional

from suite.report import groups as G
from suite.report import verdict as V
from suite.report.results import number

MAX_GROUPS = 40           # groups shown; the full list of failures follows the tables
MAX_REASON = 240          # characters of a group's example message

CSS = """
.verdict{display:flex;align-items:center;gap:18px;padding:10px 16px;margin:8px 0 14px;border-radius:6px;border:2px solid}
.verdict.pass{background:#e7f5e7;border-color:#3a9d3a}.verdict.fail{background:#fde8e8;border-color:#d33c3c}
.vword{font-size:30px;font-weight:700;letter-spacing:1px;min-width:90px}
.verdict.pass .vword{color:#2a7a2a}.verdict.fail .vword{color:#b22}
.vbody{flex:1;min-width:0}.vcounts{font-size:15px}.count{margin-right:14px;white-space:nowrap}
.count b{font-size:17px}.vwhy{font-size:14px;margin-top:3px;color:#822}
.vrun{font-size:13px;color:#444;margin-top:3px;overflow-wrap:anywhere}
#failure-groups h2{margin-top:6px}
.fgroup{border:1px solid #e0b4b4;border-left:5px solid #d33c3c;background:#fffafa;padding:6px 10px;margin:8px 0;
font-size:13px;overflow-wrap:anywhere}
.fhead{font-size:14px}.fcount{font-weight:700;margin-right:8px}.fouts,.fworst,.fwhy{margin-top:3px}
.fwhy{color:#555}.repro{display:block;margin-top:4px;white-space:pre-wrap;overflow-wrap:anywhere}
"""


def _e(x: object) -> str:
    return html.escape(str(x))


def _n(v: object, digits: int = 6) -> str:
    x = number(v)
    return "-" if x is None else f"{x:.{digits}g}"


message = G.message            # the record's reason without its leading case id


def banner(doc: Mapping) -> str:
    """The verdict: PASS or FAIL, each count, why, the backend and its options."""
    ok, why = V.verdict(doc)
    c = V.counts(doc)
    be = doc["backend"]
    titles = {"errors": "cases in which the backend's process ended or was stopped, and incidents outside any case"}
    counts = " ".join(f'<span class="count {o}" data-outcome="{o}"'
                     + (f' title="{_e(titles[o])}"' if o in titles else "")
                     + f"><b>{c[o]}</b> {o}</span>" for o in (*V.OUTCOMES, "errors"))
    name = be.get("name") or be.get("spec")
    spec = f" (<code>{_e(be.get('spec'))}</code>)" if be.get("spec") and be.get("spec") != name else ""
    run = (f"backend <code>{_e(name)}</code>{spec}, options <code>{_e(V.options_text(be.get('options')))}</code>; "
           f"products {_e(', '.join(doc.get('products') or []))}")
    word = "PASS" if ok else "FAIL"
    return (f'<section id="verdict" class="verdict {word.lower()}"><div class="vword">{word}</div>\n'
            f'<div class="vbody"><div class="vcounts">{counts}</div>\n'
            + (f'<div class="vwhy">{_e("; ".join(why))}</div>\n' if why else "")
            + f'<div class="vrun">{run}</div></div></section>')


def _element(g: G.FailureGroup) -> str:
    """The group's worst element with its numbers, or what came back when there is none."""
    w = g.worst()
    if w is not None:
        e, r, name = w
        unit = "ulp" if e.get("unit") == "ulp" else "absolute"
        why = f" ({_e(e['why'])})" if e.get("why") else ""
        of = "" if name is None else f" of <b>{_e(name)}</b>"
        return (f'<div class="fworst">worst element{of} <code>{_e(list(e.get("index") or []))}</code>: got '
                f'<b>{_n(e.get("got"))}</b>, golden {_n(e.get("golden"))}, window [{_n(e.get("lo"))}, '
                f'{_n(e.get("hi"))}], error <b>{_n(e.get("error"), 4)} {unit}</b>{why}, in case '
                f'<code>{_e(r["case"])}</code></div>')
    return (f'<div class="fworst">no element judged: {_e(g.came_back())}, in case '
            f'<code>{_e(g.example()["case"])}</code></div>')


def _group(g: G.FailureGroup) -> str:
    lab = g.labels
    parts = [f"<b>{_e(lab['operator'])}</b>"] + [_e(lab[k]) for k in G.LABELS[1:] if lab[k] != "-"]
    r = g.example()
    reason = message(r)
    if len(reason) > MAX_REASON:
        reason = reason[:MAX_REASON - 1] + "…"
    outs = g.failing_outputs()
    failing = ("" if not outs else '<div class="fouts">failing output' + ("s" if len(outs) > 1 else "") + ": "
               + ", ".join(f"<b>{_e(n)}</b> (worst {_n(u, 4)} ulp)" for n, u in outs.items()) + "</div>\n")
    return (f'<div class="fgroup" data-count="{g.count}"><div class="fhead"><span class="fcount">{g.count} '
            f'failure{"s" if g.count != 1 else ""}</span> <span class="flabels">{" · ".join(parts)}</span></div>\n'
            + failing + _element(g) + "\n"
            + (f'<div class="fwhy">{_e(reason)}</div>\n' if reason else "")
            + (f'<code class="repro">{_e(r["reproduce"])}</code>' if r.get("reproduce") else "")
            + "</div>\n")


def failure_groups(doc: Mapping) -> Optional[str]:
    """The groups' section, or None for a run without failures."""
    gs: List[G.FailureGroup] = G.group_failures(doc["records"])
    if not gs:
        return None
    n = sum(g.count for g in gs)
    rest = gs[MAX_GROUPS:]
    more = (f"<p>... and {len(rest)} more groups ({sum(g.count for g in rest)} failures): every failure is "
            f"listed at the end</p>" if rest else "")
    return (f'<section id="failure-groups"><h2>Failures by what they share: {n} in {len(gs)} '
            f'group{"s" if len(gs) != 1 else ""}</h2>\n' + "".join(_group(g) for g in gs[:MAX_GROUPS])
            + more + "</section>")
