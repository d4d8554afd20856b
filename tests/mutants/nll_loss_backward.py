"""aclnnNLLLossBackward's test kit: its planted defects and correct variants (tests/mutants/kit.py),
each kernel the operator with one method overridden, and where each defect shows: each `where`
reads the case's drawn inputs (suite/cases/inputs.py) and says where the defect moves a written
element by far more than rounding, or writes one that must stay +0."""
from __future__ import annotations

import functools
from typing import Tuple

import numpy as np

from suite.cases.inputs import draw_inputs
from suite.common import dtypes
from suite.ops.base import ftz, present, to_out
from suite.ops.nll_loss_backward import NAME, NLLLossBackward
from tests.mutants.family import Member
from tests.mutants.kit import Mutant, Variant


# -- the planted defects (each overrides one method) ------------------------------------------
class _MeanDividesByN(NLLLossBackward):
    """mean divides by N, the number of samples (an unweighted mean), not by the totalWeight input."""

    def reference_terms(self, x, attrs, shapes):
        if attrs["reduction"] != 1:
            return super().reference_terms(x, attrs, shapes)
        s = shapes["self"]
        n = np.float32(s[0] if len(s) == 2 else 1)
        return super().reference_terms({**x, "totalWeight": n}, attrs, shapes)


class _IgnoreNotMasked(NLLLossBackward):
    """ignoreIndex never compared: a sample of that class is written like any other."""

    def _hit(self, x, attrs):
        return x["cls"] == x["target"]


class _WrongClass(NLLLossBackward):
    """The value scattered into the next class, (t + 1) mod C, instead of t."""

    def reference_terms(self, x, attrs, shapes):
        c = max(1, shapes["self"][-1])
        return super().reference_terms({**x, "cls": (x["cls"] - 1) % c}, attrs, shapes)


class _ReadsSelf(NLLLossBackward):
    """self's values read: 0 * self added to every element (NaN where self is NaN or infinite)."""

    reads = None

    def operands(self, x, attrs):
        return {**super().operands(x, attrs), "self": x["self"]}

    def reference_terms(self, x, attrs, shapes):
        return super().reference_terms(x, attrs, shapes) + x["self"] * np.float32(0.0)


class _DivideLast(NLLLossBackward):
    """The page's formula, (-g * w) / W: the product first, which overflows FLOAT where g / W
    first does not."""

    def _value32(self, x, attrs):
        if attrs["reduction"] != 1:
            return super()._value32(x, attrs)
        return ftz(ftz(-(x["gradOutput"] * x["weight"])) / x["totalWeight"])


# -- correct variants ------------------------------------------------------------------------
class _ScatterRowByRow(NLLLossBackward):
    """A zero fill, then one FLOAT value written per row at its target (the kernels' own shape:
    no class coordinate, no walk over N x C terms)."""

    def _reference(self, call, block):
        x = present(call.inputs)
        s = x["self"]
        n = s.shape[0] if s.ndim == 2 else 1
        t = np.asarray(x["target"]).reshape(-1)[:n].astype(np.int64)
        g = np.asarray(x["gradOutput"], dtype=np.float32).reshape(-1)
        g = g if g.size == n and call.attrs["reduction"] == 0 else np.repeat(g.reshape(-1)[:1], n)
        w = np.asarray(x["weight"], dtype=np.float32)
        tw = np.float32(np.asarray(x["totalWeight"], dtype=np.float32).reshape(-1)[0])
        out = np.zeros((n, s.shape[-1]), dtype=np.float32)
        with np.errstate(all="ignore"):
            for i in range(n):
                if t[i] == call.attrs["ignoreIndex"]:
                    continue
                q = g[i] / tw if call.attrs["reduction"] == 1 else g[i]
                out[i, t[i]] = -(np.float32(q) * w[t[i]])
        live = {k: dtypes.name_of(a.dtype) for k, a in x.items()}
        through = dtypes.dtype_of(self.result_dtype(live, dtypes.name_of(call.out_dtype)))
        return to_out(to_out(out, through), call.out_dtype).reshape(call.out_shape)


# -- where each defect shows -----------------------------------------------------------------
# A defect shows where it changes the result: the kernel with it and the operator's reference,
# on the case's drawn inputs, differ in some element's bits (NaN to NaN counts as equal). The
# suite must fail the mutant somewhere among those cases and nowhere else.
def _numbers(c) -> bool:
    return c.expect == 0 and c.op == NAME


def _changes(kernel: NLLLossBackward):
    @functools.lru_cache(maxsize=None)
    def where(c) -> bool:
        if not _numbers(c):
            return False
        from suite.run.runner import build_call
        call = build_call(c, present(draw_inputs(c)))
        a = np.asarray(kernel.reference(call)).astype(np.float64)
        b = np.asarray(_OP.reference(call)).astype(np.float64)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        return not bool(same.all())
    return where


_OP = NLLLossBackward()


_KERNELS = {"NllbMeanDividesByN": _MeanDividesByN(), "NllbIgnoreNotMasked": _IgnoreNotMasked(),
            "NllbWrongClass": _WrongClass(), "NllbReadsSelf": _ReadsSelf(), "NllbDivideLast": _DivideLast()}

MUTANTS: Tuple[Mutant, ...] = (
    Mutant("NllbMeanDividesByN", "NLLLossBackward mean divides by N instead of the totalWeight input",
           _KERNELS["NllbMeanDividesByN"], where=_changes(_KERNELS["NllbMeanDividesByN"])),
    Mutant("NllbIgnoreNotMasked", "NLLLossBackward writes the samples whose target is ignoreIndex",
           _KERNELS["NllbIgnoreNotMasked"], where=_changes(_KERNELS["NllbIgnoreNotMasked"])),
    Mutant("NllbWrongClass", "NLLLossBackward scatters into class t + 1 instead of t",
           _KERNELS["NllbWrongClass"], where=_changes(_KERNELS["NllbWrongClass"])),
    Mutant("NllbReadsSelf", "NLLLossBackward reads self's values (0 * self added)",
           _KERNELS["NllbReadsSelf"], where=_changes(_KERNELS["NllbReadsSelf"])),
    Mutant("NllbDivideLast", "NLLLossBackward mean as (-g * w) / W, the product first (the page's formula)",
           _KERNELS["NllbDivideLast"], where=_changes(_KERNELS["NllbDivideLast"])),
)

# The loss family's mutants (tests/mutants/family.py): NllbResultInPrimaryDtype; the others do not fit
# a scatter into [N, C].
FAMILY = Member(prefix="Nllb", opt_out={
    "MeanDivisor": "mean divides by the totalWeight input, not a count (NllbMeanDividesByN is its own)",
    "SumAsMean": "sum and mean differ only by the totalWeight input's division",
    "MeanAsSum": "sum and mean differ only by the totalWeight input's division",
    "EmptyMeanZero": "out is self's shape: an empty self is an empty out",
    "AccumulateInPrecision": "nothing is summed: one value is scattered per sample",
    "BroadcastDropped": "nothing is broadcast: the target is scattered per sample"})

VARIANTS: Tuple[Variant, ...] = (
    Variant("NllbScatterRowByRow", "float32, NLLLossBackward as a zero fill and one write per row",
            _ScatterRowByRow()),
)
