"""aclnn-conform: the environment check (doctor), golden regeneration and checks, case-file
validation and listing, and the report gate (diff two runs' results.json, merge shards)."""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

from suite.cases import model as cases_model
from suite.cases import load as cases_load
from suite.perf import gate
from suite.report import compare, formats, journal, rundiff, trust
from suite.golden import build as golden_build
from suite.golden import source as golden_source
from suite.golden import where
from suite.judge.table import standard_names
from suite.report import results
from suite.common import numbers
from suite.common.home import data_root, no_data_folder
from suite.common.yamlfile import FileError
from suite.cli.progress import Progress
from suite.cli import cases_import


def _cases(paths: List[str]) -> List[cases_model.Case]:
    if not paths and not (data_root() / "cases").is_dir():
        raise FileError(data_root() / "cases", None, None, no_data_folder("--cases and --golden-dir"))
    return cases_load.load_cases([Path(p) for p in paths] or [data_root() / "cases"])[0]


def _cannot_write(e: OSError, default: Path) -> FileError:
    """A write the OS refused (read-only folder, a file where a folder goes, a full disk)."""
    return FileError(e.filename or default, None, None, f"cannot write: {e.strerror or e}")


def _golden_dir(args: argparse.Namespace) -> Path:
    """--golden-dir, else the suite's golden/ for its own cases, else the folder beside the user's
    case file (suite/golden/where.py)."""
    return where.golden_dir([Path(p) for p in args.cases], Path(args.golden_dir) if args.golden_dir else None)


def cmd_golden_generate(args: argparse.Namespace) -> int:
    folder = _golden_dir(args)
    where.may_write([Path(p) for p in args.cases], folder)      # never the suite's from a user's cases
    cases = _cases(args.cases)
    progress = Progress()
    try:
        stats = golden_build.generate(cases, folder, progress=progress, fresh=args.fresh)
    except OSError as e:
        raise _cannot_write(e, folder) from None
    finally:
        progress.end()
    print(f"goldens: {stats['cases']} cases ({stats['large']} large, fingerprinted), "
          f"{stats['bundles']} bundles, {stats['bytes'] / 1e6:.2f} MB; {stats['written']} bundles written, "
          f"{stats['removed']} removed")
    if not where.is_own_goldens(folder):
        print(f"in {folder} (pytest reads them with --golden-dir {folder}; without it, the goldens of your "
              f"own case files are computed as the run needs them)")
    return 0


def cmd_golden_check(args: argparse.Namespace) -> int:
    tiers = ("default", "huge") if args.scale == "huge" else ("default",)
    skipped: List[str] = []
    folder = _golden_dir(args)
    problems = golden_build.check(_cases(args.cases), folder, tiers, skipped)
    for p in problems:
        print(p)
    if problems:
        print(f"golden check: {len(problems)} problems; run `{where.command([Path(p) for p in args.cases], folder)}`",
              file=sys.stderr)
        return 1
    note = f" ({len(skipped)} huge-tier cases not recomputed: add --scale huge)" if skipped else ""
    print(f"golden check: complete, intact and up to date{note}")
    return 0


def table_standards(tolerances: Optional[str]) -> Optional[Tuple[str, Tuple[str, ...]]]:
    """What a case's `standard:` is checked against: the table named (--tolerances), else the data
    folder's, as pytest's default (None where there is none: nothing to check against)."""
    path = Path(tolerances) if tolerances else data_root() / "cases" / cases_model.TOLERANCE_FILE
    return standard_names(path) if tolerances or path.exists() else None


def cmd_cases_validate(args: argparse.Namespace) -> int:
    total = dropped = 0
    standards = table_standards(args.tolerances)
    for p in args.paths:
        cs, d = cases_load.load_cases([Path(p)], standards=standards)
        total, dropped = total + len(cs), dropped + d
    print(f"ok: {total} cases ({dropped} combinations outside the contract or layouts that do not apply, dropped)")
    return 0


def cmd_cases_list(args: argparse.Namespace) -> int:
    cs = _cases(args.cases)
    if args.count:
        by = Counter((c.op, "numbers" if c.expect == 0 else f"status {c.expect}") for c in cs)
        for (op, kind), n in sorted(by.items()):
            print(f"{n:7d}  {op}  {kind}")
        print(f"{len(cs):7d}  total")
        return 0
    for c in cs:
        print(c.id if not args.verbose else f"{c.id}  expect={c.expect}  {c.source}")
    return 0


def cmd_ops(args: argparse.Namespace) -> int:
    """The backend author's reference (suite/cli/opsref.py), for the named operators or all."""
    import json

    from suite import ops
    from suite.cli import opsref
    unknown = [n for n in args.names if n not in ops.OPERATORS]
    if unknown:
        from suite.common.names import unknown_words
        print(f"error: unknown operator {unknown_words(unknown, list(ops.OPERATORS))} "
              f"(known: {', '.join(ops.OPERATORS)})", file=sys.stderr)
        return 2
    if args.write_docs:
        print(f"wrote {opsref.write_docs(data_root())}")
        return 0
    chosen = {n: ops.OPERATORS[n] for n in (args.names or ops.OPERATORS)}
    if args.json:
        print(json.dumps([opsref.describe(op) for _, op in sorted(chosen.items())], indent=1))
    else:
        print(opsref.markdown(chosen))
    return 0


def cmd_report_diff(args: argparse.Namespace) -> int:
    if args.new is None:              # one run timed against a baseline in itself (suite/report/rundiff.py)
        run = results.read(Path(args.base))
        if not args.allow_incomplete:
            compare.refuse_incomplete([(args.base, run)], "--allow-incomplete")
        compare.refuse_empty([(args.base, run)])
        worse, text = rundiff.render(args.base, run, args.perf_threshold, args.perf_alpha, args.limit)
        print(text)
        return 1 if worse else 0
    base, new = results.read(Path(args.base)), results.read(Path(args.new))
    if not args.allow_incomplete:
        compare.refuse_incomplete([(args.base, base), (args.new, new)], "--allow-incomplete")
    compare.refuse_empty([(args.base, base), (args.new, new)])
    if not args.trust_baseline:
        _refuse_a_baseline_the_run_could_write(Path(args.base), Path(args.new), new)
    d = compare.diff(base, new, args.ulp_growth, args.ulp_ratio, args.allow_vanished, args.accept_golden_change,
                     perf_threshold=args.perf_threshold, perf_alpha=args.perf_alpha)
    print(compare.render_diff(d, args.limit))
    return 1 if d.worse else 0


def _refuse_a_baseline_the_run_could_write(base: Path, new_path: Path, new: dict) -> None:
    """BASE on NEW's machine where NEW's backend could have written it is no baseline
    (suite/report/trust.py): one line and exit 2, unless --trust-baseline."""
    refusal, warning = trust.judge(base, new)
    if refusal:
        raise results.ResultsError(f"{base}: {refusal} (NEW: {new_path}); {trust.FLAG} compares it anyway "
                                   f"(docs/ci-gate.md, \"Where the baseline lives\")")
    if warning:
        print(f"warning: {new_path}: {warning}", file=sys.stderr)


def _output_file(path: Path) -> Path:
    """-o names a file to write in a folder that exists: checked before anything is read."""
    if path.is_dir():
        raise FileError(path, None, None, "is a folder; -o names the file to write")
    if not path.parent.is_dir():
        what = "is not a folder" if path.parent.exists() else "does not exist"
        raise FileError(path, None, None, f"{path.parent} {what}")
    return path


def cmd_report_merge(args: argparse.Namespace) -> int:
    out = _output_file(Path(args.output))
    docs = [(p, results.read(Path(p))) for p in args.paths]
    merged = compare.merge(docs, allow_partial=args.allow_partial, allow_incomplete=args.allow_incomplete)
    try:
        results.write(out, merged)
    except OSError as e:
        raise _cannot_write(e, out) from None
    c = merged["counts"]
    print(f"merged {len(docs)} files into {args.output}: {len(merged['records'])} records "
          f"({', '.join(f'{n} {o}' for o, n in c.items() if n)})")
    for problem in compare.shard_set(docs):
        print(f"partial: {problem}")
    if not results.is_complete(merged):
        print(f"incomplete: {merged['incomplete']}")
    return 0


def cmd_report_recover(args: argparse.Namespace) -> int:
    """The reports of a run that was killed, from the journal it wrote as cases finished."""
    folder = Path(args.dir)
    doc = journal.recover(folder / formats.JOURNAL)
    formats.write_reports(folder, doc)
    c = doc["counts"]
    print(f"recovered {len(doc['records'])} records into {folder}/{formats.file_list()} "
          f"({', '.join(f'{n} {o}' for o, n in c.items() if n) or 'none'}); marked incomplete: {doc['incomplete']}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Can the suite run here, against the selected backend? (suite/cli/doctor.py; imported only here.)"""
    from suite.cli import doctor
    return doctor.main(args)


DOCTOR_HELP = """The first command on a new machine. Reports Python and its packages, the CANN toolkit (path,
version, each library the aclnn backend needs, each operator's two symbols), the devices with each
one's SoC and product family, and the dtypes the suite runs there; then runs one small case per
operator through every backend that loads (reference; torch when installed; aclnn when CANN is found,
else the host emulator when this is a checkout with a C compiler), as pytest runs them. Every problem
comes with the command that fixes it. Exit 0: the selected backend can run here (its smoke cases
passed); 1: it cannot, or a smoke case did not pass; 2: bad arguments."""


DIFF_HELP = f"""Compare two results.json files (BASE: the last accepted run; NEW: this run). Exit 1 when NEW
is worse: a case failing in NEW that did not fail in BASE (or is new and failing), a precision
regression, an incident, a case of BASE missing from NEW, or run in BASE and skipped in NEW
(unless --allow-vanished), or NEW judged by other goldens or another tolerance table than BASE
(manifest_hash, tolerances_hash; unless --accept-golden-change). A precision regression is
a case passing in both whose worst ulp error grew by more than --ulp-growth ulps AND to more than
--ulp-ratio times its BASE value (defaults {compare.ULP_GROWTH:g} and {compare.ULP_RATIO:g}): a correctly
rounded kernel sits at <= 0.5 ulp of the output dtype plus a few float32 ulps of accumulation slack,
so run-to-run noise between correct kernels stays well under 1 ulp, while a kernel that loses a bit
(e.g. computes in the output dtype) doubles its error and grows by >= 1 ulp. Where the runs hold
timing records (issue 24), a case whose median time per launch is at least 1 + --perf-threshold
times BASE's AND slower by a one-sided Mann-Whitney U test on the round medians with p <=
--perf-alpha is a performance regression and makes NEW worse; too few rounds, too wide a spread,
other clocks or caches, or a side not timed are UNKNOWN, listed, never worse (docs/perf-gate.md).
BASE must be a file NEW's run could not have written: on NEW's machine (its recorded hostname),
one whose inode changed (st_ctime) inside the run's window, or that lies outside every folder the
run protected (results.json `windows`), is refused with exit 2 unless --trust-baseline: fetch it
before the run and name it with pytest's --baseline (the run protects it), fetch it after the run
into the report folder, or diff on another machine (docs/ci-gate.md). A NEW without `windows`
(an earlier suite's) is compared with a warning.
With BASE alone, it is one run timed against a baseline backend in itself (pytest --timing
--timing-baseline): each case is judged again from both sides' rounds in the file, with these
options; a REGRESSION or any other failure of the run makes it worse."""


def _bounded(parse: Callable[[str], Any], kind: str, accepts: numbers.Range) -> Callable[[str], Any]:
    """An argparse type: "'x' is not <kind>", or "'x': give <the range>"."""
    def convert(text: str) -> Any:
        try:
            return numbers.checked(text, parse, kind, accepts)
        except numbers.NumberError as e:
            raise argparse.ArgumentTypeError(f"{text!r}: {e}" if e.parsed else f"{text!r} is {e}") from None
    return convert


_threshold = _bounded(float, "a number", numbers.FINITE_NONNEGATIVE)
_probability = _bounded(float, "a number", numbers.PROBABILITY)
_count = _bounded(int, "a whole number", numbers.COUNT)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="aclnn-conform", description=__doc__)
    sub = p.add_subparsers(dest="group")

    d = sub.add_parser("doctor", help="can the suite run here? (environment, CANN, devices, smoke cases)",
                       description=DOCTOR_HELP)
    from suite.cli.doctor import add_arguments
    add_arguments(d)
    d.set_defaults(fn=cmd_doctor)

    g = sub.add_parser("golden", help="generate or check golden data").add_subparsers(dest="cmd")
    for name, fn, hlp in (("generate", cmd_golden_generate, "write goldens for every numeric case"),
                          ("check", cmd_golden_check, "fail on missing, stale, orphaned, corrupted or drifted goldens")):
        s = g.add_parser(name, help=hlp)
        s.add_argument("--cases", action="append", default=[], metavar="PATH", help="case file or folder (default: cases/ of $ACLNN_CONFORMANCE_HOME, else of this checkout)")
        s.add_argument("--golden-dir", default=None, metavar="DIR",
                       help="default: golden/ of $ACLNN_CONFORMANCE_HOME, else of this checkout; for a case "
                            "file of your own (outside its cases/), <name>.golden beside it")
        if name == "generate":
            s.add_argument("--fresh", action="store_true",
                           help="recompute large cases' fingerprints even where the manifest has them")
        else:
            s.add_argument("--scale", choices=("default", "huge"), default="default",
                           help="also recompute the huge tier's cases (minutes each)")
        s.set_defaults(fn=fn)

    c = sub.add_parser("cases", help="validate, list or import case files").add_subparsers(dest="cmd")
    s = c.add_parser("validate", help="check case files against the schema")
    s.add_argument("paths", nargs="+", metavar="PATH")
    s.add_argument("--tolerances", metavar="PATH", help="the tolerance table a case's `standard:` must "
                   "name (default: the suite's cases/tolerances.yaml, as pytest's --tolerances)")
    s.set_defaults(fn=cmd_cases_validate)
    s = c.add_parser("list", help="list case ids")
    s.add_argument("--cases", action="append", default=[], metavar="PATH")
    s.add_argument("--count", action="store_true", help="counts per operator and expected outcome")
    s.add_argument("-v", "--verbose", action="store_true")
    s.set_defaults(fn=cmd_cases_list)
    s = c.add_parser("import", help="import the vendor's ATK JSON and TTK CSV system-test cases",
                     description=cases_import.HELP)
    cases_import.add_arguments(s)
    s.set_defaults(fn=cases_import.cmd)

    s = sub.add_parser("ops", help="what each operator's call carries: C signature, inputs, attributes, "
                                   "dtypes per product, out shape (a backend author's reference)")
    s.add_argument("names", nargs="*", metavar="NAME", help="operators (default: all)")
    s.add_argument("--json", action="store_true", help="as JSON")
    s.add_argument("--write-docs", action="store_true", help="rewrite docs/operators/reference.md")
    s.set_defaults(fn=cmd_ops)

    r = sub.add_parser("report", help="compare or merge results.json files (the CI gate)").add_subparsers(
        dest="cmd")
    s = r.add_parser("diff", help="what got worse from BASE to NEW; exit 1 if anything did",
                     description=DIFF_HELP)
    s.add_argument("base", metavar="BASE")
    s.add_argument("new", metavar="NEW", nargs="?",
                   help="omitted: BASE is one run timed with --timing-baseline, gated on its own interleaved "
                        "timing and failures (docs/perf-gate.md)")
    s.add_argument("--ulp-growth", type=_threshold, default=compare.ULP_GROWTH, metavar="ULPS",
                   help="a regression grows the worst error by more than this many ulps (default %(default)s)")
    s.add_argument("--ulp-ratio", type=_threshold, default=compare.ULP_RATIO, metavar="X",
                   help="... and to more than X times its old value (default %(default)s)")
    s.add_argument("--perf-threshold", type=_threshold, default=gate.THRESHOLD, metavar="X",
                   help="a performance regression is a median at least 1+X times BASE's (default %(default)s) ...")
    s.add_argument("--perf-alpha", type=_probability, default=gate.ALPHA, metavar="P",
                   help="... AND a one-sided Mann-Whitney U test on the round medians with p <= P "
                        "(default %(default)s); docs/perf-gate.md")
    s.add_argument("--allow-vanished", action="store_true",
                   help="cases of BASE missing from NEW do not make NEW worse")
    s.add_argument("--allow-incomplete", action="store_true",
                   help="compare runs that did not finish (killed, interrupted, stopped early): their "
                        "missing cases count as vanished")
    s.add_argument("--accept-golden-change", action="store_true",
                   help="NEW's goldens (manifest_hash) or tolerance table (tolerances_hash) differing from "
                        "BASE's do not make NEW worse (the output names the change)")
    s.add_argument("--trust-baseline", action="store_true",
                   help="compare a BASE that NEW's run could have written: one on NEW's host that changed "
                        "while the run went, or lies outside every folder the run protected (refused "
                        "without it, exit 2; docs/ci-gate.md)")
    s.add_argument("--limit", type=_count, default=10, metavar="N", help="lines per list (default %(default)s)")
    s.set_defaults(fn=cmd_report_diff)
    s = r.add_parser("merge", help="join shards' results.json into one")
    s.add_argument("paths", nargs="+", metavar="RESULTS")
    s.add_argument("-o", "--output", required=True, metavar="OUT")
    s.add_argument("--allow-partial", action="store_true",
                   help="merge shards that are not one complete K/N set, saying what is missing")
    s.add_argument("--allow-incomplete", action="store_true",
                   help="merge shards whose runs did not finish; the result is marked incomplete")
    s.set_defaults(fn=cmd_report_merge)
    s = r.add_parser("recover", help="write the reports of a killed run from its journal")
    s.add_argument("dir", metavar="DIR", help="the run's --report-dir")
    s.set_defaults(fn=cmd_report_recover)
    return p


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> List[Tuple[str, str]]:
    """(command, its help) for every command the parser runs, groups walked in order: the listing
    bare `aclnn-conform` prints, read from the parser so it cannot fall behind it."""
    out: List[Tuple[str, str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                inner = commands(sub, full)
                out += inner or [(full, helps.get(name, ""))]
    return out


def _listing(parser: argparse.ArgumentParser, group: Optional[str]) -> str:
    """What a bare `aclnn-conform` (or `aclnn-conform GROUP`) prints: its commands, one a line."""
    rows = [(n, h) for n, h in commands(parser) if group is None or n.startswith(group + " ")]
    width = max(len(n) for n, _ in rows) + 2
    head = f"usage: aclnn-conform {group + ' ' if group else ''}COMMAND [options]\n\ncommands:"
    body = "\n".join(f"  {n:<{width}}{h}" for n, h in rows)
    return f"{head}\n{body}\n\nRun `aclnn-conform COMMAND --help` for a command's options."


def main(argv: Optional[List[str]] = None) -> int:
    # A record's text is the backend's: a lone surrogate in it must not crash the printing.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "fn"):                 # no command, or a group without one: say what there is
        print(_listing(parser, args.group))
        return 2
    try:
        return args.fn(args)
    except FileError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (golden_source.GoldenError, results.ResultsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
