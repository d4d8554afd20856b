"""Building blocks for value sets: float64 draws that are exactly representable in the input's
dtype, so the float64 golden is computed from the very values the backend receives."""
from __future__ import annotations

from typing import Mapping, Tuple

import numpy as np

from suite import dtypes


def exact(a: np.ndarray, dtype_name: str) -> np.ndarray:
    """Round a float64 draw to the input dtype and back: the values the backend will see."""
    return dtypes.round_to(a, dtypes.dtype_of(dtype_name)).astype(np.float64)


def uniform(rng: np.random.Generator, shape: Tuple[int, ...], lo: float, hi: float) -> np.ndarray:
    return rng.uniform(lo, hi, size=shape)


def magnitudes(rng: np.random.Generator, shape: Tuple[int, ...], lo: float, hi: float,
               signed: bool = True) -> np.ndarray:
    """Log-uniform magnitudes in [lo, hi], random signs: every decade gets its share."""
    m = np.exp(rng.uniform(np.log(lo), np.log(hi), size=shape))
    if signed:
        m = m * rng.choice([-1.0, 1.0], size=shape)
    return m


def sprinkle(rng: np.random.Generator, a: np.ndarray, values: Tuple[float, ...],
             share: float) -> np.ndarray:
    """Replace about `share` of the elements (at least one, if any) with picks from `values`."""
    a = np.array(a, dtype=np.float64)
    if a.size == 0:
        return a
    flat = a.reshape(-1)
    hit = rng.random(flat.size) < share
    if not hit.any():
        hit[rng.integers(flat.size)] = True
    flat[hit] = rng.choice(np.array(values, dtype=np.float64), size=int(hit.sum()))
    return flat.reshape(a.shape)


SPECIALS = (np.nan, np.inf, -np.inf, -0.0, 0.0)


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



# -- value sets shared by operators whose inputs are gradOutput, self and target ----------------
def uniform_set(sig, rng: np.random.Generator) -> dict:
    """Every input uniform on [-5, 5] (the field's standard test range)."""
    return {n: uniform(rng, sig.shapes[n], -5.0, 5.0) for n in sig.shapes}


def nonpos_targets_set(sig, rng: np.random.Generator) -> dict:
    """Targets <= 0, a quarter of them exact zeros of either sign."""
    d = uniform_set(sig, rng)
    d["target"] = sprinkle(rng, uniform(rng, sig.shapes["target"], -5.0, 0.0), (0.0, -0.0), 0.25)
    return d


def specials_set(sig, rng: np.random.Generator) -> dict:
    """NaN, +-inf and +-0 sprinkled into every input."""
    return {n: sprinkle(rng, v, SPECIALS, 0.2) for n, v in uniform_set(sig, rng).items()}
