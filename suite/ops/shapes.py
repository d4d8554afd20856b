"""Shape arithmetic every operator shares: the broadcast rule, element counts, the axes a sum
removes. Its own module because the case model, the goldens and the operators all need it and
none of them should need an Operator for it."""
from __future__ import annotations

from typing import Optional, Tuple

from suite.common import blocks as B

Shape = Tuple[int, ...]
MAX_RANK = 8


def broadcast(*shapes: Shape) -> Optional[Shape]:
    """NumPy broadcast of `shapes`, or None when they do not broadcast (numpy's rules, without
    numpy's per-call overhead: this runs several times per case)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        n = 1
        for s in shapes:
            j = len(s) - rank + i
            if j < 0:
                continue
            d = s[j]
            if d != 1:
                if n != 1 and d != n:
                    return None
                n = d
        out.append(n)
    return tuple(out)


numel = B.numel
reduced_axes = B.reduced_axes
