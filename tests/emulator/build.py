"""Build the host emulator of the CANN ABI subset that the `aclnn` backend drives.

    python -m tests.emulator.build OUTDIR [--fault NAME]

writes OUTDIR/libascendcl.so, OUTDIR/libnnopbase.so and OUTDIR/libopapi.so (the last two link to
the first, as in the toolkit's lib64), so that

    pytest --backend aclnn --backend-opt lib_dir=OUTDIR

runs the suite against it. The emulator computes on the host what docs/operators/*.md say the
operators do; it proves the backend's marshalling and the harness, never the conformance of real kernels.
Choose the SoC it reports with ACLNN_EMU_SOC (default Ascend910B, i.e. atlas-a2). Extra compiler
flags (e.g. -fsanitize=address while debugging the emulator) go in ACLNN_EMU_CFLAGS.

A fault build plants one defect, so tests can prove they detect it (see FAULTS).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

SRC = Path(__file__).resolve().parent / "src"

FAULTS = {
    "ignore_strides": "EMU_FAULT_IGNORE_STRIDES",  # reads and writes every view as contiguous
    "skip_last": "EMU_FAULT_SKIP_LAST",  # leaves the last element of out unwritten
    "wrong_status": "EMU_FAULT_WRONG_STATUS",  # MSE bad reduction -> 161001 instead of 161002
    "accept_rank9": "EMU_FAULT_ACCEPT_RANK9",  # rank 9 accepted instead of rejected
    "mask_target": "EMU_FAULT_MASK_TARGET",  # KL zeroes the gradient where target <= 0 (obsolete kernel)
    "mean_n_b": "EMU_FAULT_MEAN_N_B",  # MSE mean divides by numel(B) instead of numel(self)
    "no_kl_symbol": "EMU_FAULT_NO_KL_SYMBOL",  # libopapi.so lacks the aclnnKlDivBackward symbols
}

# library -> (sources, emulator libraries it links to)
LIBRARIES = {
    "libascendcl.so": (["runtime.c"], []),
    "libnnopbase.so": (["nnopbase.c"], ["ascendcl"]),
    "libopapi.so": (["opapi.c"], ["nnopbase", "ascendcl"]),
}


class BuildError(RuntimeError):
    """The C compiler is missing or failed."""


def find_compiler() -> Optional[str]:
    """The C compiler to use: $CC, else cc, gcc or clang on PATH."""
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def build(outdir: os.PathLike, fault: Optional[str] = None, cc: Optional[str] = None) -> Path:
    """Compile the emulator into `outdir` (created if needed) and return it."""
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; known: {', '.join(sorted(FAULTS))}")
    cc = cc or find_compiler()
    if cc is None:
        raise BuildError("no C compiler found (looked for $CC, cc, gcc, clang on PATH)")
    out = Path(outdir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    defines = [f"-D{FAULTS[fault]}"] if fault else []
    defines += os.environ.get("ACLNN_EMU_CFLAGS", "").split()
    for lib, (sources, deps) in LIBRARIES.items():
        cmd = [cc, "-shared", "-fPIC", "-O2", "-std=gnu11", "-ffp-contract=off", "-fvisibility=hidden",
               "-Wall", *defines, f"-I{SRC}", *[str(SRC / s) for s in sources],
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
