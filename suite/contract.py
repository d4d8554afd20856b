"""The public backend contract: the one call a backend receives and the one error it may raise.

Kept exactly as docs/backend-contract.md describes it; backends outside this repository
are written against it, so fields and their order never change.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

import numpy as np

# aclnnStatus values (docs/aclnn-status.md).
ACLNN_SUCCESS = 0
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002
ACLNN_ERR_RUNTIME_ERROR = 361001
ACLNN_ERR_INNER = 561000

STATUS_NAMES = {
    0: "ACLNN_SUCCESS",
    161001: "ACLNN_ERR_PARAM_NULLPTR",
    161002: "ACLNN_ERR_PARAM_INVALID",
    361001: "ACLNN_ERR_RUNTIME_ERROR",
    561000: "ACLNN_ERR_INNER",
    561002: "ACLNN_ERR_INNER_TILING_ERROR",
    561003: "ACLNN_ERR_INNER_FIND_KERNEL_ERROR",
    561101: "ACLNN_ERR_INNER_CREATE_EXECUTOR",
    561103: "ACLNN_ERR_INNER_NULLPTR",
    561112: "ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND",
}

# Product families (docs/aclnn-status.md); the dtypes each takes are the operator's (suite/ops), and
# an operator serves only the families its `product_dtypes` names (Operator.serves).
PRODUCTS = ("atlas-training", "atlas-inference", "atlas-a2", "atlas-a3", "ascend-950", "atlas-200i-500-a2")
# The name prefix each family's SoC names share, for display only: which family a SoC name belongs
# to is decided by suite/backends/soc.py's table (the bare "Ascend910B", for one, is atlas-training).
PRODUCT_SOCS = {
    "atlas-training": "Ascend910",
    "atlas-inference": "Ascend310P",
    "atlas-a2": "Ascend910B",
    "atlas-a3": "Ascend910_93",
    "ascend-950": "Ascend950",
    "atlas-200i-500-a2": "Ascend310B",
}

# The vendor's SoC names (its test files' and pages' spelling, matched in any case) and the family
# each stands for: a case file may name a product by either (suite/cases/parse.py); ids use the
# family. A name whose family is not in PRODUCTS is an unknown product.
SOC_ALIASES = {
    "ascend910": "atlas-training",
    "ascend310p": "atlas-inference",
    "ascend910b": "atlas-a2",
    "ascend910_93": "atlas-a3",
    "ascend950": "ascend-950",
    "ascend950pr": "ascend-950",
    "ascend950dt": "ascend-950",
    "ascend310b": "atlas-200i-500-a2",
}


def status_name(status: int) -> str:
    return STATUS_NAMES.get(status, "unknown status")


class AclnnError(Exception):
    """Raised by a backend for a call that aclnn rejects; `status` is the aclnnStatus integer."""

    def __init__(self, status: int, message: str = "") -> None:
        self.status = int(status)
        self.message = message
        text = f"aclnn status {self.status} ({status_name(self.status)})"
        super().__init__(f"{text}: {message}" if message else text)


@dataclass(frozen=True)
class OpCall:
    """One operator call as the suite hands it to a backend (field order is public)."""

    op: str
    inputs: Mapping[str, Optional[np.ndarray]]
    attrs: Mapping[str, Any]
    out_shape: Optional[tuple]
    out_dtype: Optional[np.dtype]
    product: str
    # A compatible extension (docs/backend-contract.md): None for a call with one output (every
    # call of a single-output operator, exactly as before); for an operator with several outputs,
    # every output in C-signature order, name -> (shape or None for NULL, dtype or None), the first
    # being out_shape and out_dtype. `run` then returns a mapping name -> array.
    outputs: Optional[Mapping[str, Tuple[Optional[tuple], Optional[np.dtype]]]] = None


class Unsupported(Exception):
    """Raised by a backend for a call its API cannot express as given (for example a negative-stride
    view that CANN's aclCreateTensor cannot take). The suite reports the case as skipped with this
    reason rather than passed, so a gap in what a backend can reach is visible, never hidden.

    An extension of the contract: backends that never raise it behave exactly as before.
    """


class DeviceFault(Exception):
    """Raised by a backend when the device faulted during a call: a launch or a synchronize failed (an
    AI-core exception, a poisoned stream), so no result exists. `status` is the runtime's error code,
    `message` its own words (aclGetRecentErrMsg where it has them). The suite fails that one case as a
    device fault.

    `recovered`: True, the backend has reset what it must (stream, context, device) and the next
    call runs on a healthy device. False: recovery itself failed; the suite stops the run with the
    message, rather than failing every remaining case one by one. Anything but a bool counts as False.

    An extension of the contract: backends that never raise it behave exactly as before.
    """

    def __init__(self, message: str, status: Optional[int] = None, recovered: bool = True) -> None:
        self.message = str(message)        # a backend's own words, whatever type it gave them in
        self.status = None if status is None else int(status)
        # Kept as given: only a real bool is the promise (suite/run/host.py takes anything else, "no"
        # included, which bool() would make True, as not recovered).
        self.recovered = recovered
        super().__init__(message)
