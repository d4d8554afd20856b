"""What the class-index losses share (aclnnNLLLoss and aclnnNLLLossBackward): the target dtypes
every product takes, the ignoreIndex attribute's id token, the target's value set (class indices
in [0, C), some of them ignoreIndex where the target's dtype can hold it) and the fitting of a
value set to a rejection case's dtypes; the gather along the class axis; the five check rows both
pages share; the page-table rows of a `sig` that names each tensor by a key. Kept in one module so
the forward and the backward cannot drift apart on what a target is (docs/operators/NLLLoss.md,
NLLLossBackward.md)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from suite.common import dtypes
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.ops.records import Rejection, Signature
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
    # The class axis: 1 of a 4-D self (NLLLoss2d's [N, C, H, W]; NLLLoss rejects that rank), else the last.
    axis = 1 if s and len(s) == 4 else -1
    base = ClassIndex("self", axis) if s and s[axis] > 0 else Integers(0, 0)
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


def gather(scores: Any, target: Any, ignore: int,
           per_class: Sequence[Any] = ()) -> Tuple[np.ndarray, np.ndarray, List[np.ndarray], Tuple[int, ...]]:
    """The gather along the class axis, once per walk: (the target as int64, each sample's score at
    its target class scores[n, t_n], each per-class array at t_n, their shape [N], () for a 1-D
    `scores`: one sample). A sample left out (target `ignore` or outside [0, C)) gathers class 0,
    whose values it never reaches a term with; the target is returned as given, flattened."""
    s = np.asarray(scores)
    c = s.shape[-1] if s.ndim else 0
    t = np.asarray(target).astype(np.int64).reshape(-1)
    rows = s.reshape(s.shape[0] if s.ndim == 2 else 1, c) if s.ndim else s.reshape(1, 1)
    n = rows.shape[0] if s.ndim == 2 else min(1, t.size)
    t = t[:n]
    keep = (t != ignore) & (t >= 0) & (t < max(c, 1))
    safe = np.where(keep, t, 0)
    xg = rows[np.arange(n), safe] if c else np.zeros(n, dtype=s.dtype)
    more = [np.asarray(a)[safe] if c else np.zeros(n, dtype=s.dtype) for a in per_class]
    return t, xg, more, ((n,) if s.ndim == 2 else ())


def keyed_null_rows(op: Any, keys: Mapping[str, str]) -> Dict[str, Tuple[Signature, int]]:
    """'<input> NULL' for each input, then 'out NULL' (161001), for an operator whose page-table
    `sig` names each tensor by its key in `keys` (target and totalWeight cannot share an initial)."""
    rows = {f"{n} NULL": (op.sig(**{keys[n]: None}), NULLPTR) for n in op.inputs}
    return {**rows, "out NULL": (op.sig(out=None), NULLPTR)}


def keyed_rank_rows(op: Any, keys: Mapping[str, str], names: Sequence[str] = ()) -> Dict[str, Tuple[Signature, int]]:
    """'<tensor> 9-d' (R9 = 1 x ... x 2 x 2, four elements) for each of `names` (default: the
    inputs): 161002 by the tensor's own shape row, each tensor named by its key in `keys`."""
    from suite.ops.loss import R9
    rows = {}
    for n in names or op.inputs:
        given = {"out": R9} if n == "out" else {keys[n]: R9}
        rows[f"{n} 9-d"] = (op.sig(**given), INVALID)
    return rows


def target_rows(op: Any, sig: Signature, first: int) -> Optional[Rejection]:
    """The five rows both pages share, in the code's order from row `first`: self's dtype on the
    product, the target's dtype, the reduction, a self of rank 1 or 2, a target of rank at most 1."""
    bad = op._unsupported_dtype(sig, ["self"])
    if bad:
        return bad
    if sig.dtypes["target"] not in TARGET_DTYPES:
        return INVALID, f"target's dtype {sig.dtypes['target']} is not INT64, UINT8 or INT32 (row {first + 1})"
    bad = op._reduction(sig)
    if bad:
        return bad
    s, t = sig.shapes["self"], sig.shapes["target"]
    if not 1 <= len(s) <= 2:
        return INVALID, f"self has rank {len(s)} (1 or 2)"
    if len(t) > 1:
        return INVALID, f"target has rank {len(t)} (at most 1)"
    return None
