"""Which standard passes which kernel: each standard of cases/tolerances.yaml against the same
kernels (issue 45, item 3; the table on docs/precision.md, "Each standard against the same kernels").

    python benchmarks/standards_table.py                  # every kernel: a few minutes a kernel
    python benchmarks/standards_table.py --quick          # the reference, torch and the generic mutants
    python benchmarks/standards_table.py --out table.md   # also write the markdown table

The kernels: the reference backend; torch on the CPU computing in the inputs' dtype
(compute=native) and widened to float32 (compute=widen); every mutant of the gallery that fails
numbers (tests/mutants: the generic defects and each operator's kit's), and the kits' correct
variants. Each kernel runs every numbers case of the mutants' pairwise subset once (tests/mutants/
harness.py: every pair of facet values of the small cases); its outputs are then judged under
each standard, as `pytest --standard NAME` judges them (the Runner's standard override). A cell
says `pass` or how many of the cases the standard failed. Not a test: a figure, minutes long.
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from suite.backends.reference import ReferenceBackend  # noqa: E402
from tests.mutants import harness, registry  # noqa: E402
from tests.mutants.gallery import GENERIC  # noqa: E402


class Once:
    """A backend whose every distinct call is made once: the same inputs give a copy of the first
    result, so ten standards judge one run of the kernel."""

    def __init__(self, backend: Any, name: str) -> None:
        self.backend, self.name = backend, name
        for attr in ("products", "capabilities", "deterministic", "working_memory"):
            if hasattr(backend, attr):
                setattr(self, attr, getattr(backend, attr))
        self.memo: Dict[str, Any] = {}

    def run(self, call: Any) -> Any:
        h = hashlib.sha256(repr((call.op, sorted(call.attrs.items()), call.out_dtype, call.out_shape,
                                 getattr(call, "outputs", None))).encode())
        for name in sorted(call.inputs):
            a = call.inputs[name]
            h.update(name.encode())
            if a is not None:
                h.update(repr((a.dtype.str, a.shape, a.strides)).encode())
                h.update(a.tobytes())
        key = h.hexdigest()
        if key not in self.memo:
            self.memo[key] = self.backend.run(call)
        return copy.deepcopy(self.memo[key])


def kernels(quick: bool) -> List[Tuple[str, Any]]:
    from suite.backends.torch_backend import TorchBackend
    out: List[Tuple[str, Any]] = [("reference", ReferenceBackend()),
                                  ("torch native", TorchBackend(compute="native")),
                                  ("torch widen", TorchBackend(compute="widen"))]
    mutants = [m for m in registry.gallery_mutants() if "numbers" in m.fails]
    if quick:
        mutants = [m for m in mutants if m in GENERIC]
    out += [(f"mutant {m.__name__}", m()) for m in mutants]
    if not quick:
        out += [(f"correct {v.__name__}", v()) for v in registry.variants()]
    return out


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the reference, torch and the generic mutants only")
    ap.add_argument("--out", type=Path, help="also write the markdown table here")
    args = ap.parse_args(argv)
    table = harness.table()
    standards = list(table.standards)
    cases = [c for c in harness.subset() if "numbers" in harness.checks_of(c)]
    print(f"{len(cases)} numbers cases (the pairwise subset), {len(standards)} standards", file=sys.stderr)
    rows = []
    for label, backend in kernels(args.quick):
        t0 = time.monotonic()
        once = Once(backend, label)
        cells = []
        for std in standards:
            o = harness.run_backend(once, cases, kinds=["numbers"], standard=std)
            cells.append("pass" if not o.failures else f"{len(o.failures)}/{o.ran}")
        rows.append((label, cells))
        print(f"{label}: {' '.join(cells)} ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    lines = ["| kernel | " + " | ".join(f"`{s}`" for s in standards) + " |",
             "| --- |" + " ---: |" * len(standards)]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
