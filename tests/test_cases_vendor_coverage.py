"""What the vendor's system tests run and the suite's own case files must run too (issue 44, item 4):
rank 6 for MseLoss and KlDiv; dimensions 15, 255 and 257 for every operator whose vendor files
use them, and 131073 for MseLoss and KlDiv; an MseLoss tensor of 3.5e9 elements in the huge tier;
NLLLoss's and NLLLossBackward's ignoreIndex classes; SmoothL1LossBackward's beta 0.7 to 0.9. The
facts are the vendor's (ops-nn @e5c3fa93, ops-math @c4193324; each case file cites the file and
cases of its additions); this test reads `cases/` as the suite loads it, and shows that the
ignoreIndex cases have teeth: a kernel that narrows ignoreIndex to a UINT8 target's width, or wraps
a negative one into [0, C), changes a committed case's result."""
from __future__ import annotations

import dataclasses
import math
from functools import lru_cache
from typing import Callable, Dict, List

import numpy as np
import pytest

from suite import ops
from suite.cases.inputs import draw_inputs
from suite.cases.load import load_cases
from suite.cases.model import ARRAY_LIMITS, NUMBERS, Case
from suite.common.home import data_root
from suite.golden.source import is_stored
from suite.ops.base import present
from suite.run.runner import build_call

# Operators whose vendor ATK files (`aclnn*/atk_aclnn*.json`) hold each dimension; NLLLoss's own
# files (a TTK CSV only) hold none of them.
DIMS = {
    15: ("MseLoss", "KlDiv", "KlDivBackward", "L1LossBackward", "MseLossBackward",
         "BinaryCrossEntropyBackward", "SmoothL1LossBackward", "NLLLossBackward", "BinaryCrossEntropy"),
    255: ("MseLoss", "KlDiv", "KlDivBackward", "L1LossBackward", "MseLossBackward",
          "BinaryCrossEntropyBackward", "SmoothL1LossBackward", "NLLLossBackward", "BinaryCrossEntropy"),
    257: ("MseLoss", "KlDiv", "KlDivBackward", "L1LossBackward", "MseLossBackward",
          "BinaryCrossEntropyBackward", "SmoothL1LossBackward", "NLLLossBackward", "BinaryCrossEntropy"),
    131073: ("MseLoss", "KlDiv"),
}
INT32_MAX = 2 ** 31 - 1


@lru_cache(maxsize=1)
def cases() -> List[Case]:
    return load_cases([data_root() / "cases"])[0]


def numbers(op: str, tier: str = "default") -> List[Case]:
    return [c for c in cases() if c.op == op and c.expect == NUMBERS and c.tier == tier]


def ranks(c: Case) -> List[int]:
    return [len(s) for s in dict(c.shapes).values() if s is not None]


def dims(c: Case) -> set:
    return {d for s in dict(c.shapes).values() if s is not None for d in s}


def classes(c: Case) -> int:
    """C, the class count of a class-index loss: self's last dimension."""
    return dict(c.shapes)["self"][-1]


@pytest.mark.parametrize("op", ["MseLoss", "KlDiv"])
def test_rank_six_on_every_product_with_committed_data(op: str) -> None:
    six = [c for c in numbers(op) if 6 in ranks(c) and is_stored(c)]
    assert {c.product for c in six} >= {"atlas-training", "atlas-inference", "atlas-a2", "atlas-a3"}, \
        f"{op}: no committed 6-d case on some product"
    assert {c.dtypes["self"] for c in six} == {"float32", "float16", "bfloat16"}


@pytest.mark.parametrize("dim,op", [(d, op) for d, names in sorted(DIMS.items()) for op in names])
def test_the_vendors_dimensions(dim: int, op: str) -> None:
    """Each dimension in each float dtype, in the default run."""
    found = [c for c in numbers(op) if dim in dims(c)]
    assert {c.dtypes["self"] for c in found} >= {"float32", "float16", "bfloat16"}, \
        f"{op}: dimension {dim} is not run in every float dtype ({len(found)} cases)"


def test_mse_loss_huge_tier_holds_the_vendors_3_5e9_elements() -> None:
    """ATK case 224 of aclnnMseLoss: 256 x 15 x 1 x 131073 x 7 BFLOAT16, under the huge tier's
    2^33 elements per array."""
    big = [c for c in numbers("MseLoss", "huge") if math.prod(dict(c.shapes)["self"]) >= 3_500_000_000]
    assert big, "no MseLoss case of 3.5e9 elements in the huge tier"
    for c in big:
        assert max(math.prod(s) for s in dict(c.shapes).values()) <= ARRAY_LIMITS["huge"]
        assert c.dtypes["self"] == "bfloat16" and c.attrs["reduction"] == 0


@pytest.mark.parametrize("op", ["NLLLoss", "NLLLossBackward"])
def test_ignore_index_classes(op: str) -> None:
    """Each class of ignoreIndex the vendor runs, with each target dtype: inside [0, C), -100 and
    another negative (-1), C itself, past C (10000), and near INT32's two limits (+-2e9)."""
    kinds: Dict[str, Callable[[int, int], bool]] = {
        "inside [0, C)": lambda v, n: 0 <= v < n,
        "-100": lambda v, n: v == -100,
        "-1": lambda v, n: v == -1,
        "C": lambda v, n: v == n,
        "past C": lambda v, n: n < v < 2 ** 30,
        "near INT32's maximum": lambda v, n: 2 ** 30 < v <= INT32_MAX,
        "near INT32's minimum": lambda v, n: -INT32_MAX - 1 <= v < -2 ** 30,
    }
    for target in ("int64", "int32", "uint8"):
        got = [c for c in numbers(op) if c.dtypes["target"] == target]
        for kind, holds in kinds.items():
            assert any(holds(c.attrs["ignoreIndex"], classes(c)) for c in got), \
                f"{op}: no {target} case with ignoreIndex {kind}"


def test_smooth_l1_betas_between_a_half_and_one() -> None:
    betas = {c.attrs["beta"] for c in numbers("SmoothL1LossBackward") if is_stored(c)}
    assert {0.7, 0.8, 0.9} <= betas


def _results(c: Case, attrs) -> Dict[str, np.ndarray]:
    call = build_call(dataclasses.replace(c, attrs=attrs), present(draw_inputs(c)))
    found = ops.get(c.op).reference(call)
    return found if isinstance(found, dict) else {"out": found}


def _differs(c: Case, attrs) -> bool:
    want, got = _results(c, c.attrs), _results(c, attrs)
    for name, w in want.items():
        a, b = np.asarray(got[name], dtype=np.float64), np.asarray(w, dtype=np.float64)
        if not ((a == b) | (np.isnan(a) & np.isnan(b))).all():
            return True
    return False


def _narrowed(c: Case):
    """ignoreIndex as a kernel that compares it in the UINT8 target's own width would see it."""
    v = c.attrs["ignoreIndex"]
    return dict(c.attrs, ignoreIndex=v & 0xFF) if c.dtypes["target"] == "uint8" and v != v & 0xFF else None


def _wrapped(c: Case):
    """ignoreIndex as a kernel that wraps a negative index into [0, C) (Python's a[-1]) would see it."""
    v, n = c.attrs["ignoreIndex"], classes(c)
    return dict(c.attrs, ignoreIndex=v + n) if -n <= v < 0 else None


@pytest.mark.parametrize("op", ["NLLLoss", "NLLLossBackward"])
@pytest.mark.parametrize("kernel,value", [(_narrowed, 10000), (_narrowed, 2000000000), (_narrowed, -2000000000),
                                          (_wrapped, -1)])
def test_ignore_index_cases_catch_a_kernel_that_misreads_it(op: str, kernel, value: int) -> None:
    """A committed case with this ignoreIndex where the misread one changes a written output
    (10000 narrows to class 16, +-2e9 to class 0, -1 wraps to class C - 1)."""
    tried = [(c, a) for c in numbers(op) if is_stored(c) and c.attrs["ignoreIndex"] == value
             for a in [kernel(c)] if a is not None]
    assert tried, f"{op}: no committed case with ignoreIndex {value} that {kernel.__name__} changes"
    assert any(_differs(c, a) for c, a in tried), \
        f"{op}: no committed case's result changes under {kernel.__name__} ({len(tried)} cases tried)"
