"""Will a case fit? Its arrays are known from its shapes and dtypes, so a case too large for this
machine is skipped with the numbers, instead of dying of a MemoryError halfway (or taking the
machine down with it)."""
from __future__ import annotations

import os
import re
from typing import Optional

from suite import dtypes, golden, layout, ops
from suite.blocks import BLOCK, numel
from suite.cases import Case

# Fixed costs on top of the case's arrays: the block temporaries of drawing, computing and judging
# (a few dozen float64 blocks), and what a backend allocates beyond its output, which the suite
# cannot know: an allowance of one float32 copy of every input and of the output.
BLOCK_BYTES = 48 * 8 * BLOCK


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


def need(case: Case, kind: str) -> int:
    """Bytes a case takes at its peak, for `kind` numbers or determinism: its inputs (with the
    layout's buffer), the output twice (the backend's and the judged or compared copy), the golden
    when it is held, the backend's allowance and the block temporaries."""
    shapes = dict(case.shapes)
    total = 0
    for name, dt in case.dtypes:
        s = shapes.get(name)
        if s is None or dt is None:
            continue
        size = dtypes.dtype_of(dt).itemsize
        total += numel(s) * size * (1 + layout.buffer_factor(case.layout, s))
        total += numel(s) * 4                                    # backend allowance: float32 copy
    out = numel(case.out_shape or ())
    total += out * (dtypes.dtype_of(case.out_dtype).itemsize * 2 + 4)
    if kind == "numbers" and not golden.lazy(case):
        b = ops.get(case.op).b_shape(shapes)
        total += out * 8 * (1 if tuple(b) == tuple(case.out_shape) else 2)
    return total + BLOCK_BYTES


def fmt(n: float) -> str:
    return f"{n / 2 ** 30:.1f} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:.0f} MiB"
