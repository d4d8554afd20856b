"""`aclnn-conform doctor`: the first command on a new machine. Can the suite run here, against what?

Why a command of its own: a wrong environment shows up in pytest as thousands of skipped cases with
one reason repeated, or as a session that dies in a native library. The doctor says it once, in
order: the Python packages, the CANN toolkit (path, version, each library, each operator's two
symbols), the devices and the product family each one is held to, the dtypes the suite will run
there; then it runs one small case per operator through every backend that loads, exactly as pytest
runs it (the backend in a process of its own, the result judged against the committed golden).
Every problem comes with what is missing, where it was looked for, and the command that fixes it.

Why the CANN probing runs in a child process (a `python -c` with a timeout): a native library that
crashes or hangs in aclInit or aclrtSetDevice would otherwise take the doctor with it, and the one
report that should explain the machine would never print. In a child, a crash or a hang costs one
line naming the call it happened in.

Exit codes: 0, the selected backend can run here (its smoke cases passed; with --no-smoke, it
starts and nothing found stops it); 1, it cannot (what is missing is named) or a smoke case failed or was skipped;
2, the command line is wrong (a --backend-opt that is not KEY=VALUE).

Nothing here names an operator: the operators are the registry's (`suite.ops.OPERATORS`), and each
smoke case is chosen from the case files by the same rule for all of them.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any, Iterator

from suite.run.backend import BackendError, parse_opts
from suite.cli.doctor_render import render
from suite.cli.doctor_diagnose import diagnose


# -- the command ---------------------------------------------------------------------------------
@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[Any]:
    """For --json: everything anything writes on file descriptor 1 (a native library in a backend's
    process included) goes to stderr; the document goes to the real stdout, alone."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    real = os.fdopen(saved, "w")
    try:
        yield real
    finally:
        sys.stdout.flush()
        real.flush()
        os.dup2(saved, 1)
        real.close()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="aclnn", metavar="NAME",
                   help="the backend to check (reference, torch, aclnn, or package.module:attribute; default aclnn)")
    p.add_argument("--backend-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword option for that backend, as in pytest (repeatable), e.g. device=1, lib_dir=DIR")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document, nothing else on stdout")
    p.add_argument("--no-smoke", action="store_true", help="only look; run no smoke case")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="the CANN probe's limit, and each smoke call's (default %(default)g)")


def main(args: argparse.Namespace) -> int:
    """`aclnn-conform doctor`: 0 the selected backend can run here, 1 it cannot, 2 bad arguments."""
    try:
        opts = parse_opts(args.backend_opt)
    except BackendError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        with _stdout_to_stderr() as real:
            report = diagnose(args.backend, opts, not args.no_smoke, args.timeout)
            real.write(json.dumps(report.as_dict(), indent=2) + "\n")
        return report.exit_code
    report = diagnose(args.backend, opts, not args.no_smoke, args.timeout)
    print(render(report))
    return report.exit_code
