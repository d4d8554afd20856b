"""aclnnNLLLoss2d's test kit: NLLLoss's defects on the 2d operator (each NLLLoss kit kernel's one
override mixed into NLLLoss2d), the 2d op API's own (the transpose to [N*H*W, C]), and where each
shows: some bit of a written output differs from the operator's reference, or one goes unwritten."""
from __future__ import annotations

import functools
from typing import Tuple

import numpy as np

from suite.cases.inputs import draw_inputs
from suite.ops.base import present
from suite.ops.nll_loss import NLLLoss
from suite.ops.nll_loss2d import OP, NLLLoss2d
from tests.mutants import nll_loss as nll
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


class _NoTranspose(NLLLoss2d):
    """self [N, C, H, W] reshaped to [N*H*W, C] as it lies, without moving the class axis last (the
    op API's Transpose by {0, 2, 3, 1} dropped): each sample reads a wrong score."""

    def operands(self, x, attrs):
        s = np.asarray(x["self"])
        flat = s.reshape(np.size(x["target"]), s.shape[1])
        found = NLLLoss.operands(self, {**x, "self": flat, "target": np.asarray(x["target"]).reshape(-1)}, attrs)
        return {k: (v if k == "totalWeight" else v.reshape(np.shape(x["target"]))) for k, v in found.items()}


class _MeanDividesByN(nll._MeanDividesByN, NLLLoss2d):
    pass


class _IgnoreNotHonoured(nll._IgnoreNotHonoured, NLLLoss2d):
    pass


class _TotalNotWritten(nll._TotalNotWritten, NLLLoss2d):
    pass


class _OnePassRowByRow(nll._OnePassRowByRow, NLLLoss2d):
    pass


def _changes(kernel: NLLLoss2d):
    @functools.lru_cache(maxsize=None)
    def where(c) -> bool:
        if not (c.expect == 0 and c.op == OP.name):
            return False
        from suite.run.runner import build_call
        call = build_call(c, present(draw_inputs(c)))
        got, want = kernel.reference(call), OP.reference(call)
        if set(got) != set(want):
            return True
        for n in want:
            a, b = np.asarray(got[n]).astype(np.float64), np.asarray(want[n]).astype(np.float64)
            if a.shape != b.shape or not ((a == b) | (np.isnan(a) & np.isnan(b))).all():
                return True
        return False
    return where


_KERNELS = {"Nll2dNoTranspose": _NoTranspose(), "Nll2dMeanDividesByN": _MeanDividesByN(),
            "Nll2dIgnoreNotHonoured": _IgnoreNotHonoured(), "Nll2dTotalNotWritten": _TotalNotWritten()}
_SAYS = {"Nll2dNoTranspose": "NLLLoss2d flattens self to [N*H*W, C] without moving the class axis last",
         "Nll2dMeanDividesByN": "NLLLoss2d mean divides by N*H*W instead of the weight sum of the pixels that take part",
         "Nll2dIgnoreNotHonoured": "NLLLoss2d counts the pixels whose target is ignoreIndex",
         "Nll2dTotalNotWritten": "NLLLoss2d leaves totalWeightOut unwritten under mean and sum"}

MUTANTS: Tuple[Mutant, ...] = tuple(Mutant(n, _SAYS[n], k, where=_changes(k)) for n, k in _KERNELS.items())

# The loss family's mutants as NLLLoss takes them (the same opt-outs: the same gather and sums).
FAMILY = Member(prefix="Nll2d", opt_out=nll.FAMILY.opt_out)

VARIANTS: Tuple[Variant, ...] = (
    Variant("Nll2dOnePassRowByRow", "float32, NLLLoss2d's sums of terms and weights one pixel at a time",
            _OnePassRowByRow()),
)
