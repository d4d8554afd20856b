"""Operator registry: one module per operator, each exporting OP (an Operator)."""
from __future__ import annotations

from typing import Dict

from suite.ops.base import Operator
from suite.ops.kl_div_backward import OP as _KL
from suite.ops.mse_loss_backward import OP as _MSE

OPERATORS: Dict[str, Operator] = {op.name: op for op in (_MSE, _KL)}


def get(name: str) -> Operator:
    return OPERATORS[name]
