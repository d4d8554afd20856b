"""Build the host emulator of the CANN ABI subset that the `aclnn` backend drives.

    python -m tests.emulator.build OUTDIR [--fault NAME]

writes OUTDIR/libascendcl.so, OUTDIR/libnnopbase.so and OUTDIR/libopapi.so (the last two link to
the first, as in the toolkit's lib64), so that

    pytest --backend aclnn --backend-opt lib_dir=OUTDIR

runs the suite against it. The emulator computes on the host what docs/operators/*.md say the
operators do; it proves the backend's marshalling and the harness, never the conformance of real kernels.
Choose the SoC it reports with ACLNN_EMU_SOC (default Ascend910B3, i.e. atlas-a2); the build writes
suite/backends/soc.py's table as OUTDIR/include/emu_soc_table.h, so the emulator's bfloat16 rule is the suite's. Extra compiler
flags (e.g. -fsanitize=address while debugging the emulator) go in ACLNN_EMU_CFLAGS.

libopapi.so is the core (src/opapi.c, and src/entry.c: the generic entry) and every file in
src/ops/, one per operator: adding an operator to the emulator is adding its file there, nothing
else. An elementwise loss's file is a descriptor of its phase 1 (emu.h's struct emu_entry), its
term function and its setup, with EMU_ENTRY defining its two exported functions; an operator the
descriptor cannot state (a gather, several outputs) writes its entry by hand on the core's
helpers, as every file did before the generic entry.

A fault build plants one defect, so tests can prove they detect it (see FAULTS). The faults are
declared where they are planted: each source says, in a comment line,
`@fault <name> <MACRO> <what it does>`; the build reads those lines, and defines -D<MACRO> for the
fault asked for. A fault an operator's file declares belongs to that operator (Fault.module).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from suite.backends import soc

SRC = Path(__file__).resolve().parent / "src"
OPS = SRC / "ops"  # the operator table: <module>.c for the operator whose suite module is <module>.py

_FAULT_LINE = re.compile(r"^[ \t/*]*@fault[ \t]+([a-z0-9_]+)[ \t]+(EMU_FAULT_[A-Z0-9_]+)[ \t]+(\S.*?)[ \t]*(?:\*/)?[ \t]*$",
                         re.MULTILINE)


@dataclass(frozen=True)
class Fault:
    """A planted defect a source declares: its -D macro, what it does, the file that plants it, and
    the operator module it belongs to (None: the core's, every operator has it)."""
    name: str
    macro: str
    what: str
    source: str
    module: Optional[str]


def op_sources() -> List[Path]:
    """The operator table: every C file in src/ops/, in name order."""
    return sorted(OPS.glob("*.c"))


# library -> (sources, emulator libraries it links to); libopapi.so also takes every src/ops/*.c
LIBRARIES = {
    "libascendcl.so": (["runtime.c", "events.c"], []),
    "libnnopbase.so": (["nnopbase.c"], ["ascendcl"]),
    "libopapi.so": (["opapi.c", "entry.c"], ["nnopbase", "ascendcl"]),
}


def _declared_faults() -> Dict[str, Fault]:
    faults: Dict[str, Fault] = {}
    for path in [*(SRC / f for sources, _ in LIBRARIES.values() for f in sources), *op_sources()]:
        module = path.stem if path.parent == OPS else None
        for m in _FAULT_LINE.finditer(path.read_text()):
            name, macro, what = m.groups()
            rel = str(path.relative_to(SRC))
            if name in faults:
                raise ValueError(f"fault {name!r} is declared twice: {faults[name].source} and {rel}")
            faults[name] = Fault(name, macro, what, rel, module)
    return faults


FAULTS: Dict[str, Fault] = _declared_faults()


class BuildError(RuntimeError):
    """The C compiler is missing or failed."""


def find_compiler() -> Optional[str]:
    """The C compiler to use: $CC, else cc, gcc or clang on PATH."""
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def build(outdir: os.PathLike, fault: Optional[str] = None, cc: Optional[str] = None,
          extra_ops: Sequence[os.PathLike] = ()) -> Path:
    """Compile the emulator into `outdir` (created if needed) and return it. `extra_ops`: more
    operator files for libopapi.so beyond src/ops/ (tests' made-up operators)."""
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; known: {', '.join(sorted(FAULTS))}")
    cc = cc or find_compiler()
    if cc is None:
        raise BuildError("no C compiler found (looked for $CC, cc, gcc, clang on PATH)")
    out = Path(outdir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    include = out / "include"
    include.mkdir(exist_ok=True)
    (include / "emu_soc_table.h").write_text(soc.c_header())
    defines = [f"-D{FAULTS[fault].macro}"] if fault else []
    defines += os.environ.get("ACLNN_EMU_CFLAGS", "").split()
    for lib, (sources, deps) in LIBRARIES.items():
        paths = [str(SRC / s) for s in sources]
        if lib == "libopapi.so":
            paths += [str(p) for p in op_sources()] + [str(Path(p).resolve()) for p in extra_ops]
        cmd = [cc, "-shared", "-fPIC", "-O2", "-std=gnu11", "-ffp-contract=off", "-fvisibility=hidden",
               "-Wall", *defines, f"-I{SRC}", f"-I{include}", *paths,
               f"-Wl,-soname,{lib}", "-Wl,-rpath,$ORIGIN", f"-L{out}",
               *[f"-l{d}" for d in deps], "-lm", "-o", str(out / lib)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"building {lib} failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return out


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.emulator.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--fault", choices=sorted(FAULTS), default=None)
    args = parser.parse_args(argv)
    try:
        print(build(args.outdir, args.fault))
    except BuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
