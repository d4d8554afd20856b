"""Value sets: for each input of a call, the distribution its values are drawn from (suite/values/draw.py
makes them, exactly representable in the input's dtype, so the float64 golden is computed from the
very values the backend receives)."""
from __future__ import annotations

from typing import Callable, Dict

import numpy as np

from suite.common import dtypes
from suite.values.draw import Dist, Sprinkle, Uniform
from suite.values.exact import Integers

SPECIALS = (np.nan, np.inf, -np.inf, -0.0, 0.0)
LN2 = 0.6931471805599453              # a literal, so no libm's last bit can move a draw


def narrowest(dtype_names) -> str:
    """The input dtype with the smallest range, which bounds what a value set may draw."""
    order = {"float16": 0, "bfloat16": 1, "float32": 2}
    return min(dtype_names, key=lambda n: order[n])


def tiny_scale(out_dtype: str, in_dtypes) -> float:
    """A magnitude whose product of two lands in `out_dtype`'s subnormal range, floored where the
    inputs themselves cannot go that small."""
    out_tiny = dtypes.finfo(dtypes.dtype_of(out_dtype)).tiny
    in_tiny = max(dtypes.finfo(dtypes.dtype_of(d)).tiny for d in in_dtypes)
    return max(float(np.sqrt(out_tiny / 8.0)), 4.0 * in_tiny)


def ln_tiny(dtype_name: str) -> float:
    """ln of the dtype's smallest normal, 2^min_exp, from a literal ln 2 (exact inputs forever)."""
    return dtypes.finfo(dtypes.dtype_of(dtype_name)).min_exp * LN2


# -- value sets an operator may share (each names its own inputs where a set singles one out) ----
def integers(dtype_name: str, lo: int = -5, hi: int = 5) -> Integers:
    """Integers uniform on [lo, hi] clipped to an exact dtype's range (UINT8: [0, hi], BOOL: [0, 1])."""
    dlo, dhi = dtypes.exact_range(dtype_name)
    return Integers(max(lo, dlo), min(hi, dhi))


def uniform_set(sig) -> Dict[str, Dist]:
    """Every input uniform on [-5, 5) (the field's standard test range); an exact (integer or BOOL)
    input uniform on the integers in [-5, 5] its dtype holds."""
    return {n: integers(sig.dtypes[n]) if sig.dtypes.get(n) in dtypes.EXACT else Uniform(-5.0, 5.0)
            for n in sig.shapes}


def nonpositive(name: str) -> Callable:
    """A value set: input `name` <= 0, a quarter of it exact zeros of either sign; the rest uniform."""
    def value_set(sig) -> Dict[str, Dist]:
        d = uniform_set(sig)
        d[name] = Sprinkle(Uniform(-5.0, 0.0), (0.0, -0.0), 0.25)
        return d
    value_set.__doc__ = f"{name} <= 0, a quarter of it exact zeros of either sign."
    return value_set


def specials_set(sig) -> Dict[str, Dist]:
    """NaN, +-inf and +-0 sprinkled into every input."""
    return {n: Sprinkle(v, SPECIALS, 0.2) for n, v in uniform_set(sig).items()}
