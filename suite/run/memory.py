"""Will a case fit? Its arrays are known from its shapes and dtypes, so a case too large for this
machine is skipped with the numbers, instead of dying of a MemoryError halfway (or taking the
machine down with it)."""
from __future__ import annotations

import os
import re
from typing import Optional, Tuple

from suite.common import dtypes, layout
from suite import ops
from suite.golden import store as golden
from suite.common.blocks import BLOCK, numel
from suite.cases.model import Case, Kind

# Fixed costs on top of the case's arrays: the block temporaries of drawing, computing and judging
# (a few dozen float64 blocks).
BLOCK_BYTES = 48 * 8 * BLOCK
# What a backend allocates beyond its output, in units of the bytes of the case's inputs and output,
# when it does not say (its optional `working_memory` attribute): float32 copies of 16-bit data.
WORKING_MEMORY = 2.0


def parse_size(text: str) -> int:
    """'24G', '512M', '1.5GiB', '1000000' -> bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)(i?[bB])?\s*", text)
    if not m:
        raise ValueError(f"{text!r} is not a size (write e.g. 24G, 512M)")
    return int(float(m[1]) * 1024 ** " KMGT".index(m[2].upper() or " "))


def available() -> Optional[int]:
    """Memory this process could still take (Linux: MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def need(case: Case, kind: str, working: float = WORKING_MEMORY, copies: int = 0,
         baseline: Optional[Tuple[float, int]] = None) -> int:
    """Bytes a case takes at its peak, for `kind` numbers or determinism: its inputs (with the
    layout's buffer), the output (twice for determinism: both runs are kept), the golden when it
    is held, the backend's working memory (`working` times the inputs' and output's bytes) and the
    block temporaries; and `copies` more of the inputs and outputs where the backend runs in a
    process of its own (its copy of the inputs, the suite's of its results; for determinism also
    the result its second process sends). (Measured on the huge tier's float16 MSE case: 4.1 GiB peak RSS against
    4.4 GiB estimated.) `baseline`: the (working memory, copies) of a timing baseline's backend
    (pytest --timing-baseline) that runs and times the same call: its output, its working memory
    and its copies of the inputs and output too, for a numbers test (baseline_share says how much)."""
    shapes = dict(case.shapes)
    total = arrays = 0
    for name, dt in case.dtypes.items():
        s = shapes.get(name)
        if s is None or dt is None:
            continue
        size = numel(s) * dtypes.dtype_of(dt).itemsize
        total += size * (1 + layout.buffer_factor(case.layout, s))
        arrays += size
    out = sum(numel(s) * dtypes.dtype_of(d).itemsize for s, d in case.all_outputs.values()   # every one
              if s is not None and d is not None)                                           # allocated
    outs = out * (2 if kind == Kind.DETERMINISM else 1)
    total += _backend(arrays, out, outs, working, copies)
    if baseline is not None and kind == Kind.NUMBERS:
        total += _backend(arrays, out, out, *baseline)
    if kind == Kind.DETERMINISM and copies:
        total += out                # the result of the call in the backend's second process
    if kind == Kind.NUMBERS and not golden.lazy(case):
        b = ops.get(case.op).b_shape({n: s for n, s in shapes.items() if s is not None})
        total += out * 8 * (1 if tuple(b) == tuple(case.out_shape) else 2)
    return int(total * 1.1) + BLOCK_BYTES          # 10%: what numpy and the allocator add


def _backend(arrays: int, out: int, outs: int, working: float, copies: int) -> float:
    """One backend's share of a call: the outputs it fills (`outs`), its working memory over the
    inputs and one output, and its process's copies of the inputs and outputs. The candidate's
    and, with --timing-baseline, the baseline's alike."""
    return outs + working * (arrays + out) + copies * (arrays + outs)


def baseline_share(case: Case, working: float, copies: int) -> int:
    """Bytes of need()'s estimate that are the timing baseline's (for the skip message)."""
    return need(case, Kind.NUMBERS, 0.0, 0, (working, copies)) - need(case, Kind.NUMBERS, 0.0, 0)


def fmt(n: float) -> str:
    return f"{n / 2 ** 30:.1f} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:.0f} MiB"
