"""aclnnNLLLoss2dBackward's test kit: NLLLossBackward's defects on the 2d operator (each NLLLossBackward
kit kernel's one override mixed into NLLLoss2dBackward), the 2d op API's own (the transpose back to
[N, C, H, W]), and where each shows: some bit of out differs from the operator's reference."""
from __future__ import annotations

import dataclasses
import functools
from typing import Tuple

import numpy as np

from suite.cases.inputs import draw_inputs
from suite.ops.base import present
from suite.ops.nll_loss_backward import NLLLossBackward
from suite.ops.nll_loss2d_backward import OP, NLLLoss2dBackward
from tests.mutants import nll_loss_backward as nllb
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


class _NoBackTranspose(NLLLoss2dBackward):
    """The kernel's [N*H*W, C] gradient reshaped to [N, C, H, W] as it lies, without the transpose
    by {0, 3, 1, 2}: the [N, H, W, C] data read in self's layout."""

    def reference(self, call, *args, **kw):
        r = np.asarray(super().reference(call, *args, **kw))
        return np.moveaxis(r, 1, -1).reshape(r.shape) if r.ndim == 4 else r


class _IgnoreNotMasked(nllb._IgnoreNotMasked, NLLLoss2dBackward):
    pass


class _ReadsSelf(nllb._ReadsSelf, NLLLoss2dBackward):
    pass


# -- correct variants ------------------------------------------------------------------------
class _ThroughTheFlatKernel(NLLLoss2dBackward):
    """The op API's own path: NLLLossBackward's reference on self moved to [N*H*W, C] with target
    (and gradOutput under none) flattened, the result transposed back to [N, C, H, W]."""

    def reference(self, call, *args, **kw):
        x = dict(call.inputs)
        n, c, h, w = x["self"].shape
        flat = {**x, "self": np.moveaxis(x["self"], 1, -1).reshape(-1, c), "target": x["target"].reshape(-1)}
        if call.attrs["reduction"] == 0:
            flat["gradOutput"] = x["gradOutput"].reshape(-1)
        r = _FLAT.reference(dataclasses.replace(call, inputs=flat, out_shape=(n * h * w, c)), *args, **kw)
        return np.moveaxis(np.asarray(r).reshape(n, h, w, c), -1, 1)


_FLAT = NLLLossBackward()


def _changes(kernel: NLLLoss2dBackward):
    @functools.lru_cache(maxsize=None)
    def where(c) -> bool:
        if not (c.expect == 0 and c.op == OP.name):
            return False
        from suite.run.runner import build_call
        call = build_call(c, present(draw_inputs(c)))
        a = np.asarray(kernel.reference(call)).astype(np.float64)
        b = np.asarray(OP.reference(call)).astype(np.float64)
        return not bool(((a == b) | (np.isnan(a) & np.isnan(b))).all())
    return where


_KERNELS = {"Nll2dbNoBackTranspose": _NoBackTranspose(), "Nll2dbIgnoreNotMasked": _IgnoreNotMasked(),
            "Nll2dbReadsSelf": _ReadsSelf()}
_SAYS = {"Nll2dbNoBackTranspose": "NLLLoss2dBackward reshapes the [N*H*W, C] gradient to self's shape without "
                                  "transposing it back",
         "Nll2dbIgnoreNotMasked": "NLLLoss2dBackward writes the pixels whose target is ignoreIndex",
         "Nll2dbReadsSelf": "NLLLoss2dBackward reads self's values (0 * self added)"}

MUTANTS: Tuple[Mutant, ...] = tuple(Mutant(n, _SAYS[n], k, where=_changes(k)) for n, k in _KERNELS.items())

# The loss family's mutants as NLLLossBackward takes them (the same opt-outs: the same scatter), and
# none of them here: out has self's dtype (row 5), so rounding through self's dtype is out's own.
FAMILY = Member(prefix="Nll2db", opt_out={**nllb.FAMILY.opt_out, "ResultInPrimaryDtype": "out must have "
                                          "self's dtype (row 5): rounding through it is out's own rounding"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("Nll2dbThroughTheFlatKernel", "float32, NLLLossBackward's reference on the op API's [N*H*W, C] form",
            _ThroughTheFlatKernel()),
)
