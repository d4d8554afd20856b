"""What a golden is and where it comes from: a case's stored data (CaseData), the float64 source a
large case computes block by block (GoldenSource), and the hashes that name a case's data."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, Mapping, Tuple

import numpy as np

from suite.common import blocks
from suite import ops
from suite.cases.model import NUMBERS, STORED_LIMIT, Case
from suite.ops.base import Golden, present

# The default of the `blocks` methods: inside their classes the name `blocks` is the method once it is
# defined (mutmut defines copies of each method after it), not the module.
_BLOCK = blocks.BLOCK


GENERATOR_VERSION = "2"
FORMAT = 3
SAMPLES = 16                     # golden elements a large case's fingerprint keeps
MANIFEST = "manifest.json"
BUCKETS = 16
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class GoldenError(Exception):
    """The goldens cannot be used as they are; the message says what to run."""


@dataclass
class CaseData:
    """What a numeric case needs at run time: exact inputs in their dtypes, and the golden."""

    inputs: Dict[str, np.ndarray]
    golden: "GoldenSource"
    # The goldens of the written outputs beyond the first (an operator with several outputs,
    # suite/ops/outputs.py): name -> GoldenSource. Empty for one output.
    others: Dict[str, "GoldenSource"] = field(default_factory=dict)


class GoldenSource:
    """A float64 golden that judging reads block by block: materialized (`Golden`) or, for an
    elementwise result too large to hold, computed from the inputs as each block is read."""

    shape: Tuple[int, ...]
    nterms: int

    def blocks(self, limit: int = _BLOCK) -> Iterator[Tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """(flat start, golden, sum of the terms' magnitudes, sum of the partial sums' magnitudes)
        of consecutive runs of the flattened output (see ops.base.Golden)."""
        raise NotImplementedError


class Materialized(GoldenSource):
    def __init__(self, golden: Golden) -> None:
        self.golden = golden
        self.shape = tuple(golden.out.shape)
        self.nterms = golden.nterms

    def blocks(self, limit: int = _BLOCK):
        out = self.golden.out.reshape(-1)
        scale = np.broadcast_to(self.golden.scale, self.shape).reshape(-1)
        path = np.broadcast_to(self.golden.path, self.shape).reshape(-1)
        for i in range(0, out.size, limit):
            yield i, out[i:i + limit], scale[i:i + limit], path[i:i + limit]

    # what tests and messages read
    @property
    def out(self) -> np.ndarray:
        return self.golden.out

    @property
    def scale(self) -> np.ndarray:
        return self.golden.scale


class Elementwise(GoldenSource):
    """An elementwise golden (one term per element) computed as it is read: never held whole."""

    def __init__(self, op_name: str, inputs: Mapping[str, np.ndarray], attrs: Mapping) -> None:
        self.op = ops.get(op_name)
        self.inputs, self.attrs = present(inputs), dict(attrs)
        self.shape = tuple(self.op.out_shape({n: tuple(a.shape) for n, a in self.inputs.items()}, self.attrs))
        self.nterms = 1

    def blocks(self, limit: int = _BLOCK):
        start = 0
        for _, t in self.op.term_blocks(self.inputs, self.attrs, np.float64, limit):
            t = t.reshape(-1)
            a = np.abs(t)
            yield start, t, a, a
            start += t.size


def compute(case: Case, inputs: Mapping[str, np.ndarray]) -> Golden:
    return ops.get(case.op).golden(inputs, dict(case.attrs))


def compute_all(case: Case, inputs: Mapping[str, np.ndarray]) -> Tuple[Golden, Dict[str, Golden]]:
    """The first output's golden and those of the other outputs the case writes, in one walk
    (Operator.goldens; for an operator with one output, exactly `compute`'s golden and no others)."""
    op = ops.get(case.op)
    if len(op.outputs) == 1:
        return compute(case, inputs), {}
    every = op.goldens(inputs, dict(case.attrs))
    written = case.written
    return every[op.outputs[0]], {n: g for n, g in every.items() if n != op.outputs[0] and n in written}


def is_stored(case: Case) -> bool:
    """Committed to golden/ (small), or drawn and computed on demand (large, and every case of a
    generated scale set, whatever its size)."""
    return case.elements <= STORED_LIMIT and not case.generated


def spec_hash(case: Case) -> str:
    """Everything a case's data depends on; a change makes the stored golden stale."""
    key = (case.op, case.dtypes, case.out_dtype, case.shapes, case.attrs, case.values, case.datakey)
    if key not in _SPECS:
        _SPECS[key] = _spec_hash(case)
    return _SPECS[key]


_SPECS: Dict[tuple, str] = {}


def _spec_hash(case: Case) -> str:
    sig = case.signature
    doc = {"v": GENERATOR_VERSION, "op": case.op, "dtypes": sig.dtypes, "out": sig.out_dtype,
           "shapes": {k: None if v is None else list(v) for k, v in sig.shapes.items()}, "attrs": sig.attrs,
           "values": case.values, "seed": case.seed}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def bucket_of(datakey: str) -> int:
    return int.from_bytes(hashlib.sha256(datakey.encode()).digest()[:4], "little") % BUCKETS


def numeric_cases(cases: Iterable[Case]) -> Dict[str, Case]:
    """One representative case per datakey (products and layouts share data)."""
    out: Dict[str, Case] = {}
    for c in cases:
        if c.expect == NUMBERS and c.datakey not in out:
            out[c.datakey] = c
    return out
