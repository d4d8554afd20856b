"""The name a user probably meant, for an error line's "did you mean": the known name equal to the
given one but for case and an `aclnn` prefix (`xloss`, `aclnnXLoss` -> XLoss), else the one
closest to it in spelling, when it is close (difflib, case ignored). Knows nothing of the flow."""
from __future__ import annotations

import difflib
from typing import Optional, Sequence

PREFIX = "aclnn"
CUTOFF = 0.8          # difflib's ratio a spelling must reach to be suggested


def meant(name: str, known: Sequence[str]) -> Optional[str]:
    bare = name[len(PREFIX):] if name.lower().startswith(PREFIX) and len(name) > len(PREFIX) else name
    by_lower = {k.lower(): k for k in known}
    if bare.lower() in by_lower:
        return by_lower[bare.lower()]
    close = difflib.get_close_matches(bare.lower(), list(by_lower), n=1, cutoff=CUTOFF)
    return by_lower[close[0]] if close else None


def unknown_words(names: Sequence[str], known: Sequence[str]) -> str:
    """`a (did you mean A?), zz`: the unknown names, each with its suggestion where there is one."""
    out = []
    for n in names:
        m = meant(n, known)
        out.append(f"{n} (did you mean {m}?)" if m else n)
    return ", ".join(out)
