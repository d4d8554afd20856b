"""The built-in reference backend: validates as the spec's rejection tables say and computes as the
spec's "how the vendor kernel computes" sections say (float32 inside, one round to nearest even)."""
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
