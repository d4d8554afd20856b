"""The mutation score of the code that says "pass": how many planted one-line defects the project's
own tests notice. Not a test (minutes, and the machine's speed decides how long): a figure.

    python benchmarks/mutation_score.py            # run mutmut (resumes), then print the score
    python benchmarks/mutation_score.py --report   # only print the score of the last run
    python benchmarks/mutation_score.py --survivors suite/report/shard.py   # each survivor's diff

mutmut (configured in pyproject.toml, [tool.mutmut]) rewrites every function of the modules in
`only_mutate` into many mutants and runs, for each, the selected tests that reach that function.
A mutant no test fails "survived". Some survivors cannot be killed because they change nothing a
caller can observe (an equivalent mutant); each is listed in tests/mutation/equivalent.yaml by the
line it changes, with a one-line reason, and is left out of the score:

    score = killed / (mutants - equivalent)

A listed mutant whose line no longer matches (the code changed) is reported as stale, never
silently counted. Run from the repository root; mutmut works in ./mutants (git-ignored).
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import yaml

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT = ROOT / "tests" / "mutation" / "equivalent.yaml"
_RESULT = re.compile(r"^\s*(?P<name>[\w.]+__mutmut_\d+): (?P<status>[\w ]+)$")
KILLED = {"killed", "timeout", "segfault"}  # a mutant that hangs or crashes the tests is caught too


def module_of(name: str) -> str:
    """suite.report.shard.x_parse__mutmut_3 -> suite/report/shard.py (methods: suite.m.xǁClassǁmethod__mutmut_1);
    a package's own module (suite.plugin.x_f__mutmut_1) -> suite/plugin/__init__.py."""
    dotted = name.split("__mutmut_")[0].rsplit(".", 1)[0]
    path = dotted.replace(".", "/")
    return f"{path}/__init__.py" if (ROOT / path / "__init__.py").is_file() else f"{path}.py"


def results() -> Dict[str, str]:
    """Every mutant of the last run and its status (mutmut results --all true)."""
    out = subprocess.run(["mutmut", "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"mutmut results failed:\n{out.stderr}")
    found = {}
    for line in out.stdout.splitlines():
        m = _RESULT.match(line)
        if m:
            found[m["name"]] = m["status"].strip()
    return found


def changed_lines(name: str) -> Tuple[str, str]:
    """The line a mutant removes and the one it adds (mutmut show), stripped."""
    out = subprocess.run(["mutmut", "show", name], cwd=ROOT, capture_output=True, text=True).stdout
    minus = [ln[1:].strip() for ln in out.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:].strip() for ln in out.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return " / ".join(minus), " / ".join(plus)


def load_equivalents(path: Path = EQUIVALENT) -> Dict[str, dict]:
    """name -> {was, now, why}: the mutants judged equivalent, each with its reason."""
    if not path.exists():
        return {}
    doc = yaml.safe_load(path.read_text()) or {}
    bad = [n for n, e in doc.items() if not isinstance(e, dict) or not str(e.get("why", "")).strip()]
    if bad:
        sys.exit(f"{path}: every equivalent mutant needs was/now/why; missing for {bad}")
    return doc


def score(statuses: Dict[str, str], equivalents: Dict[str, dict], check_lines: bool = True) -> List[dict]:
    """One row per module: mutants, killed, survived, equivalent, stale listings, score."""
    rows: Dict[str, Counter] = defaultdict(Counter)
    stale: Dict[str, List[str]] = defaultdict(list)
    for name, status in statuses.items():
        mod = module_of(name)
        rows[mod]["mutants"] += 1
        if status in KILLED:
            rows[mod]["killed"] += 1
        elif name in equivalents and status == "survived":     # listed, and it ran: judged equivalent
            eq = equivalents[name]
            if check_lines and changed_lines(name) != (eq.get("was", ""), eq.get("now", "")):
                stale[mod].append(name)
                rows[mod]["survived"] += 1
            else:
                rows[mod]["equivalent"] += 1
        else:
            rows[mod]["survived" if status == "survived" else "other"] += 1
    out = []
    for mod in sorted(rows):
        c = rows[mod]
        live = c["mutants"] - c["equivalent"]
        out.append({"module": mod, **{k: c[k] for k in ("mutants", "killed", "survived", "equivalent", "other")},
                    "stale": stale[mod], "score": c["killed"] / live if live else 1.0})
    return out


def render(rows: List[dict]) -> str:
    lines = ["| module | mutants | killed | survived | equivalent | not run | score |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    tot = Counter()
    for r in rows:
        lines.append(f"| {r['module']} | {r['mutants']} | {r['killed']} | {r['survived']} | {r['equivalent']} | "
                     f"{r['other']} | {100 * r['score']:.1f}% |")
        tot.update({k: r[k] for k in ("mutants", "killed", "survived", "equivalent", "other")})
    live = tot["mutants"] - tot["equivalent"]
    lines.append(f"| all | {tot['mutants']} | {tot['killed']} | {tot['survived']} | {tot['equivalent']} | "
                 f"{tot['other']} | {100 * tot['killed'] / max(live, 1):.1f}% |")
    for r in rows:
        if r["stale"]:
            lines.append(f"stale equivalents in {r['module']} (their line changed; re-judge them): {r['stale']}")
    return "\n".join(lines)


def survivors(statuses: Dict[str, str], equivalents: Dict[str, dict], module: str) -> List[str]:
    """The mutants of `module` that ran and survived and are not listed as equivalent (one that was
    never run, "not checked", is not a survivor: it is not run)."""
    return [n for n, st in sorted(statuses.items())
            if module_of(n) == module and st == "survived" and n not in equivalents]


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--report", action="store_true", help="only print the score of the last run")
    p.add_argument("--survivors", metavar="MODULE", help="print each unlisted survivor of MODULE with its diff")
    args = p.parse_args(argv)
    if shutil.which("mutmut") is None:
        sys.exit("mutation_score: mutmut is not installed here (pip install mutmut; docs/mutation-score.md)")
    if not args.report and not args.survivors:
        run = subprocess.run(["mutmut", "run"], cwd=ROOT)
        if run.returncode not in (0, 1):
            return run.returncode
    statuses, equivalents = results(), load_equivalents()
    if args.survivors:
        try:
            for name in survivors(statuses, equivalents, args.survivors):
                print(subprocess.run(["mutmut", "show", name], cwd=ROOT, capture_output=True, text=True).stdout)
        except BrokenPipeError:              # `| head`: the reader has what it wanted
            sys.stderr.close()
        return 0
    print(render(score(statuses, equivalents)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
