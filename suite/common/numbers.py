"""The ranges a number option may take, each with its words for a person, and the one check of a
text against one. `aclnn-conform report diff` and pytest's --perf-threshold and --perf-alpha check
the same ones, so a value one accepts the other accepts too."""
from __future__ import annotations

import math
from typing import Any, Callable, Tuple

Range = Tuple[Callable[[Any], bool], str]          # (accepts, what to give instead)

# NaN would make every comparison false (no regression, ever); inf or a negative number is no threshold.
FINITE_NONNEGATIVE: Range = (lambda v: 0 <= v < math.inf, "a finite number >= 0")
# A significance level: 0 would never flag, NaN never compare.
PROBABILITY: Range = (lambda v: 0 < v <= 1, "a probability, 0 < alpha <= 1")
# A negative count would cut the lists from their end.
COUNT: Range = (lambda v: v >= 0, "a whole number >= 0")


class NumberError(ValueError):
    """Why a text is no number of its range: 'not a number' (`parsed` False) or 'give ...'."""

    def __init__(self, why: str, parsed: bool) -> None:
        super().__init__(why)
        self.parsed = parsed


def checked(text: str, parse: Callable[[str], Any], kind: str, accepts: Range) -> Any:
    """`text` read by `parse` (`kind` names what it reads: "a number") and inside `accepts`."""
    ok, give = accepts
    try:
        v = parse(text)
    except ValueError:
        raise NumberError(f"not {kind}", parsed=False) from None
    if not ok(v):
        raise NumberError(f"give {give}", parsed=True)
    return v
