"""The case model: a Case (one operator call with its expected outcome), its kinds of test, the
tiers and the size limits a case file may not pass."""
from __future__ import annotations

import functools
import hashlib
import math

import enum
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Tuple

from suite.cases import hardware
from suite import ops
from suite.ops import outputs
from suite.ops.base import Operator, Shape, Signature
from suite.cases.ids import _dtype_token


MAX_PARSED_RANK = 16
TOLERANCE_FILE = "tolerances.yaml"
NOT_CASE_FILES = (TOLERANCE_FILE, hardware.HARDWARE_FILE)
NUMBERS = 0                      # expect value meaning "the call succeeds with numbers"


class Kind(str, enum.Enum):
    """The three kinds of test a case runs under, one test module each. A str, so that it is
    also the plain word in records and node ids."""

    NUMBERS = "numbers"              # the result against its golden
    REJECTION = "rejection"          # the documented status
    DETERMINISM = "determinism"      # two runs, bit-identical

    def __str__(self) -> str:
        return self.value


def kinds_of(case: "Case") -> List[Kind]:
    """The kinds of test that run this case."""
    kinds = [Kind.NUMBERS if case.expect == NUMBERS else Kind.REJECTION]
    if case.determinism and case.expect == NUMBERS:
        kinds.append(Kind.DETERMINISM)
    return kinds


TIERS = ("default", "huge")      # huge: sizes only a device machine's host can hold (--scale=huge)
STORED_LIMIT = 1 << 15           # elements (inputs + broadcast shape) up to which data is committed
# The most elements one array of a case may have (each input, the broadcast shape, out), per tier:
# a typo such as 100000x100000 is refused when the file is read, before anything is drawn. The
# default tier's 2^28 is 1 GiB of float32 (2 GiB as a float64 golden), 64x the largest scale set
# (~2^22); the huge tier's 2^33 is 32 GiB of float32, 4x its largest case (2^31 + 2^16 elements of
# broadcast shape; inputs of 2^31 + 1). A case file may set its own: `limits: {huge: 17179869184}`.
# (The small scale is no tier: it is the default tier's cases up to STORED_LIMIT, whose data is
# committed; a larger case is simply not committed.)
ARRAY_LIMITS = {"default": 1 << 28, "huge": 1 << 33}


class Frozen(Mapping):
    """A read-only mapping that keeps its order (inputs in signature order) and can be hashed,
    so that a frozen Case can hold it."""

    __slots__ = ("_d", "_hash")

    def __init__(self, items: Any = ()) -> None:
        self._d = dict(items)
        self._hash = hash(tuple(self._d.items()))

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Mapping) and list(self.items()) == list(other.items())

    def __repr__(self) -> str:
        return f"Frozen({self._d!r})"


@dataclass(frozen=True)
class Case:
    id: str
    op: str
    product: str
    dtypes: Frozen                                    # input name -> dtype name (None: NULL)
    out_dtype: Optional[str]
    shapes: Frozen                                    # input name -> shape (None: NULL)
    out_shape: Optional[Shape]
    attrs: Frozen                                     # attribute name -> value
    layout: str
    values: str
    expect: int                                       # 0: numbers; else the aclnn status
    why: str                                          # the contract's reason for a rejection
    determinism: bool
    source: str                                       # "file:line" of the matrix or case
    datakey: str                                      # what the inputs and golden depend on
    tier: str = "default"                             # "huge": run only with --scale=huge
    generated: bool = False                           # made by a shape generator (a scale set)
    # The outputs beyond out as the case file gave them or the operator declares them: each in
    # signature order, name -> (shape, dtype name), the first being out_shape/out_dtype
    # (suite/ops/outputs.py); None for one output. Read `all_outputs`, which every call has.
    outputs: Optional[Frozen] = None
    # In the timing set: `pytest --timing` times it after its numbers pass (a matrix's `timing: true`).
    timing: bool = False
    # The case's own values (suite/cases/valuespec.ValueSpec; `values` is then its token), else None.
    value_spec: Optional[Any] = None
    # The tolerance standard that judges it (`standard:`), else the table's choice; not in the id.
    standard: Optional[str] = None

    def __post_init__(self) -> None:
        for name in ("dtypes", "shapes", "attrs"):
            value = getattr(self, name)
            if not isinstance(value, Frozen):
                object.__setattr__(self, name, Frozen(value))

    @property
    def signature(self) -> Signature:
        return Signature(dict(self.shapes), dict(self.dtypes), self.out_shape, self.out_dtype,
                         dict(self.attrs), self.product, None if self.outputs is None else dict(self.outputs))

    @property
    def all_outputs(self) -> Mapping[str, Tuple[Optional[Shape], Optional[str]]]:
        """Every output of the call in signature order, name -> (shape, dtype name): a one-output
        operator's one, named by its declaration (`out`), of out_shape and out_dtype."""
        if self.outputs is not None:
            return self.outputs
        return {ops.get(self.op).outputs[0]: (self.out_shape, self.out_dtype)}

    @property
    def written(self) -> Tuple[str, ...]:
        """The outputs this call writes, in signature order (the ones judged): out alone for an
        operator with one."""
        return outputs.written(ops.get(self.op), dict(self.attrs))

    @functools.cached_property
    def seed(self) -> int:
        return int.from_bytes(hashlib.sha256(self.datakey.encode()).digest()[:8], "little")

    @property
    def reduction(self) -> Optional[int]:
        """The reduction attribute (None for an operator without one)."""
        return dict(self.attrs).get("reduction")

    @functools.cached_property
    def elements(self) -> int:
        """What the case's data costs: the elements of its inputs and of its broadcast shape."""
        return _elements(ops.get(self.op), dict(self.shapes))

    @property
    def dtype_token(self) -> str:
        return _dtype_token(dict(self.dtypes), self.out_dtype)


def _elements(op: Operator, shapes: Mapping[str, Optional[Shape]]) -> int:
    live = {n: s for n, s in shapes.items() if s is not None}
    b = op.b_shape(live) if all(n in live or n in op.optional for n in shapes) else None
    total = sum(math.prod(s) for s in live.values())
    return total + (math.prod(b) if b is not None else 0)
