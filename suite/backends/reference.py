"""The built-in reference backend: validates as the rejection tables of docs/operators/*.md say and
computes in float32 as their "How the vendor kernel computes" sections describe, with one round to
nearest even into out's dtype (each page lists where that differs from the vendor's kernel)."""
from __future__ import annotations

import numpy as np

from suite import ops
from suite.contract import PRODUCTS, AclnnError, OpCall
from suite.ops.base import Signature


class ReferenceBackend:
    name = "reference"
    capabilities = {"status"}
    products = PRODUCTS
    working_memory = 0.0        # computes block by block: nothing the size of a tensor beyond out

    def run(self, call: OpCall) -> np.ndarray:
        op = ops.get(call.op)
        status, why = op.check(Signature.of_call(call))
        if status:
            raise AclnnError(status, why)
        return op.reference(call)
