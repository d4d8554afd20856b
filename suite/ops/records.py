"""The records an operator's declarations are made of and what its golden returns: a call's
metadata (Signature), a float64 result with its judging scales (Golden), an attribute (Attr) and a
row of the page's phase-1 table (Example). Plain data, apart from the Operator that reads them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Tuple

import numpy as np

from suite.common import dtypes
from suite.contract import OpCall
from suite.ops.shapes import Shape



@dataclass(frozen=True)
class Signature:
    """The metadata of one call: what phase 1 of an aclnn operator validates."""

    shapes: Mapping[str, Optional[Shape]]          # None = NULL tensor
    dtypes: Mapping[str, Optional[str]]
    out_shape: Optional[Shape]
    out_dtype: Optional[str]
    attrs: Mapping[str, object]
    product: str
    # An operator with several outputs: every output in signature order, name -> (shape or None
    # for NULL, dtype name or None), the first being out_shape/out_dtype; None for one output.
    outputs: Optional[Mapping[str, Tuple[Optional[Shape], Optional[str]]]] = None

    @classmethod
    def of_call(cls, call: OpCall) -> "Signature":
        shapes = {k: (None if a is None else tuple(a.shape)) for k, a in call.inputs.items()}
        dts = {k: (None if a is None else dtypes.name_of(a.dtype)) for k, a in call.inputs.items()}
        out_dtype = None if call.out_dtype is None else dtypes.name_of(call.out_dtype)
        out_shape = None if call.out_shape is None else tuple(call.out_shape)
        outputs = getattr(call, "outputs", None)
        if outputs is not None:
            outputs = {n: (None if s is None else tuple(s), None if d is None else dtypes.name_of(d))
                       for n, (s, d) in outputs.items()}
        return cls(shapes, dts, out_shape, out_dtype, dict(call.attrs), call.product, outputs)

    def output(self, name: str) -> Tuple[Optional[Shape], Optional[str]]:
        """(shape, dtype) of the output `name`: the first output's are out_shape and out_dtype."""
        if self.outputs is None:
            return self.out_shape, self.out_dtype
        return self.outputs[name]


@dataclass
class Golden:
    """A float64 result, with what judging a sum needs, per element: the sum of the magnitudes of
    its terms (`scale`: the budget for sums of mixed-sign terms), the sum of the magnitudes of its
    running partial sums in memory order (`path`: what a sequential float32 sum's rounding errors
    scale with), and how many terms were summed. For an elementwise result both are |out|."""

    out: np.ndarray
    scale: np.ndarray
    nterms: int = 1
    path: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        if self.path is None:
            self.path = self.scale


def sum_golden(v: np.ndarray) -> Golden:
    """The golden of one exact sum of the float64 values `v` (in memory order): the sum, its
    terms' scale and path (Golden), as many terms as `v` holds (at least 1)."""
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    return Golden(out=np.array(v.sum()), scale=np.array(np.abs(v).sum()), nterms=max(v.size, 1),
                  path=np.array(np.abs(np.cumsum(v)).sum()))


Rejection = Tuple[int, str]       # (status, why); status 0 = accepted


@dataclass(frozen=True)
class Attr:
    """An attribute beyond reduction: its case-file key (the same in a matrix and a single case),
    its type, the values a matrix runs when it names none, a single case's default, and how a case
    id spells a value."""

    name: str
    kind: type                                  # bool, int or float
    values: Tuple[Any, ...]
    default: Any
    token: Callable[[Any], str]


@dataclass(frozen=True)
class Example:
    """One row of the operator page's phase-1 table: a call's metadata and the status aclnn gives
    it (0: accepted), and whether the call lies outside the documented contract (`outside_contract`
    names why; the suite makes no case of it). tests/test_ops_checks.py holds every operator
    to every row."""

    what: str
    signature: Signature
    status: int
    outside: bool = False


def table(reject: Mapping[str, Tuple[Signature, int]], accept: Mapping[str, Signature],
          outside: Mapping[str, Signature] = {}) -> Tuple[Example, ...]:
    """A page's phase-1 table as Example rows: rejected calls with their status, accepted ones, and
    calls phase 1 accepts that lie outside the contract (an accepted row named there is marked)."""
    return (*(Example(k, sig, st) for k, (sig, st) in reject.items()),
            *(Example(k, sig, 0, k in outside) for k, sig in accept.items()),
            *(Example(k, sig, 0, True) for k, sig in outside.items() if k not in accept))


@dataclass(frozen=True)
class VendorNames:
    """How the vendor's own system-test files name this operator and its parts, for
    `aclnn-conform cases import` (docs/vendor-cases.md). ATK JSON files name the aclnn call;
    TTK kernel CSVs name the kernel the call launches, with the kernel's input order and
    attribute names (its `op_graph/*_proto.h`). A name not listed is the operator's own."""

    atk: Optional[str] = None          # the ATK files' `aclnn_name` (None: the operator's name)
    # ATK input or attribute name -> the operator's
    atk_names: Mapping[str, str] = field(default_factory=dict)
    ttk: Optional[str] = None          # the TTK kernel's `op_name` (None: no kernel file is read)
    ttk_inputs: Tuple[str, ...] = ()   # the operator's input for each kernel input, in kernel order
    # kernel attribute name -> the operator's (reduction is reduction)
    ttk_attrs: Mapping[str, str] = field(default_factory=dict)
    # the kernel's attribute defaults (its proto's ATTR), by kernel name, for a row that omits one
    ttk_defaults: Mapping[str, Any] = field(default_factory=dict)
    # kernel attributes the aclnn call fixes (LpLoss's p = 1 for aclnnL1Loss): a row with that value
    # imports, another is refused
    ttk_fixed: Mapping[str, Any] = field(default_factory=dict)
