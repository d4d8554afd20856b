"""What the class-index losses share (aclnnNLLLoss and aclnnNLLLossBackward): the target dtypes
every product takes, the ignoreIndex attribute's id token, the target's value set (class indices
in [0, C), some of them ignoreIndex where the target's dtype can hold it) and the fitting of a
value set to a rejection case's dtypes. Kept in one module so the forward and the backward cannot
drift apart on what a target is (docs/operators/NLLLoss.md, NLLLossBackward.md)."""
from __future__ import annotations

from typing import Callable, Dict

from suite.common import dtypes
from suite.ops.records import Signature
from suite.values import sets as V
from suite.values.draw import Dist, Uniform
from suite.values.exact import ClassIndex, Ignored, Integers

# The target dtypes every product takes (the op API's one list for all chips).
TARGET_DTYPES = ("int64", "int32", "uint8")
# The op API casts a UINT8 or INT32 target to INT32 before the kernel: an ignoreIndex outside this
# range is not established.
INT32 = (-(1 << 31), (1 << 31) - 1)

ValueSet = Callable[[Signature], Dict[str, Dist]]


def ignore_token(v: int) -> str:
    """ignoreIndex's token in a case id: `ignore-100`, `ignore0`."""
    return f"ignore{v}"


def classes(sig: Signature, share: float = 0.1) -> Dist:
    """Class indices in [0, C), about `share` of them ignoreIndex where the target's dtype holds it
    (with UINT8 targets only an ignoreIndex in [0, 255] can match; the pages' "Result")."""
    if sig.dtypes.get("target") not in TARGET_DTYPES:
        return Integers(0, 0)                  # (a rejection case's: replaced by fit)
    lo, hi = dtypes.exact_range(sig.dtypes["target"])
    ignore = sig.attrs["ignoreIndex"]
    s = sig.shapes.get("self")
    # (a rejection case's NULL or class-less self: its target is drawn all the same, as class 0)
    base = ClassIndex("self", -1) if s and s[-1] > 0 else Integers(0, 0)
    return Ignored(base, "ignoreIndex", share) if share and lo <= ignore <= hi else base


def fit(sig: Signature, d: Dict[str, Dist]) -> Dict[str, Dist]:
    """The value set for the dtypes a rejection case passes (an integer self, a FLOAT or BOOL
    target): an input of another kind than its distribution gets the plain uniform one (its
    values are never read: the call is rejected in phase 1)."""
    out = {}
    for n, dist in d.items():
        dt = sig.dtypes.get(n)
        exact = dt is not None and dtypes.is_exact(dt)
        if n == "target" and dt not in TARGET_DTYPES:
            dist = V.integers(dt, 0, 1) if exact else Uniform(-5.0, 5.0)
        elif exact != bool(getattr(dist, "exact", False)):
            dist = V.integers(dt) if exact else Uniform(-5.0, 5.0)
        out[n] = dist
    return out


def fitted(value_set: ValueSet) -> ValueSet:
    """`value_set` fitted to each case's dtypes (`fit`), with its docstring (the ops reference
    prints it)."""
    def fitted(sig: Signature) -> Dict[str, Dist]:
        return fit(sig, value_set(sig))
    fitted.__doc__ = value_set.__doc__
    return fitted
