"""A case's rounding path: the dtypes its operator's kernel rounds through on the way to out, and
where the vendor's own arithmetic must be consulted (a product that may flush, 16-bit terms). The
runner judges by it; the mutants' kernels round by it."""
from __future__ import annotations

from functools import lru_cache
from typing import Tuple

import numpy as np

from suite import ops
from suite.cases import hardware
from suite.cases.model import Case
from suite.common import dtypes
from suite.golden.source import CaseData
from suite.judge.judging import Path


def _live(case: Case) -> Tuple[Tuple[str, str], ...]:
    """The dtypes of the inputs a case passes (a NULL optional input has none)."""
    return tuple((n, d) for n, d in case.dtypes.items() if case.shapes.get(n) is not None)


@lru_cache(maxsize=4096)
def _path_dtypes(op: str, live: Tuple[Tuple[str, str], ...], out: str) -> Tuple[np.dtype, np.dtype, np.dtype]:
    """(result dtype, terms' dtype, judged dtype) of an operator's rounding path, per dtype set."""
    o = ops.get(op)
    through = dtypes.dtype_of(o.result_dtype(dict(live), out))
    out_dt = dtypes.dtype_of(out)
    judged = through if dtypes.finfo(through).mant_bits < dtypes.finfo(out_dt).mant_bits else out_dt
    return through, dtypes.dtype_of(o.term_dtype(dict(live))), judged


def result_dtype(case: Case, out_dtype: np.dtype) -> np.dtype:
    """The dtype the operator rounds its result to before casting it to out (Operator.result_dtype)."""
    return _path_dtypes(case.op, _live(case), dtypes.name_of(out_dtype))[0]


@lru_cache(maxsize=None)
def may_flush(product: str) -> bool:
    """Whether a correct kernel on `product` may flush float32 subnormals (cases/hardware.yaml)."""
    return hardware.load_hardware()[product].may_flush


def rounding_path(case: Case, data: CaseData, out_dtype: np.dtype) -> Path:
    """How the operator's kernel rounds on the way to out (suite.tolerance.Path): its result
    dtype, the dtype of a sum's terms, and what the path can give that the golden's window does
    not, the vendor's computation: with float32 subnormals flushed on a product that may flush,
    and with them kept (gradual underflow: an intermediate such as exp(-100) holds few significant
    bits, which the golden's window, made for normal intermediates, does not allow)."""
    through, terms, _ = _path_dtypes(case.op, _live(case), dtypes.name_of(out_dtype))
    flush = may_flush(case.product)
    op, attrs = ops.get(case.op), dict(case.attrs)

    def computed(flushes: bool):
        return lambda idx: op.vendor_at(data.inputs, attrs, idx, flush=flushes)
    return Path(through=through, terms=terms, vendor=computed(flush), flush=flush,
                kept=computed(False) if flush else None)


def judged_dtype(case: Case, out_dtype: np.dtype) -> np.dtype:
    """The dtype a result is judged in: out's, or the coarser one the operator rounds its result to
    before casting it to out (Operator.result_dtype)."""
    return _path_dtypes(case.op, _live(case), dtypes.name_of(out_dtype))[2]
