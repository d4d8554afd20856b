"""A correct float32 kernel for every registered operator, cut into the steps real kernels get wrong.

`Float32Kernel` is the control: it validates with the operator's `check` and computes with the
operator's `reference` (float32 inside, in the vendor's order), then rounds once to out's dtype
through the operator's `result_dtype`. It must pass every case the mutants are judged on, so a
mutant's failures are its defect's and nothing else's.

A mutant overrides exactly one step:
- `signature` / `validate`: phase 1 (contract defects);
- `load`: reading a tensor from memory (strides);
- `values`: an input's values before the kernel sees them, in the input's own dtype (precision);
- `compute`: the float32 result (`SumKernel` cuts out the sum over the axes `out_shape` lacks);
- `round_out`: the float32 result to out's dtype;
- `finish`: the result in out's dtype, as written back.

An operator's own mutant (its kit's `MUTANTS`) is this same control with the mutant's `kernel`
(an Operator with one defect) in place of the registered operator: `operator_kernel` makes one.
None of this names an operator, an input or an attribute: everything is read off the declarations.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, FrozenSet, Mapping, Optional, Type

import numpy as np

from suite.common import dtypes
from suite import ops
from suite.cases.model import Case
from suite.contract import PRODUCTS, AclnnError, OpCall
from suite.ops.base import Operator, Signature, numel, present, reduced_axes, to_out

FLOAT32 = np.dtype(np.float32)


class Float32Kernel:
    """Validates as aclnn does, computes in float32 in the vendor's order, rounds once."""

    name = "float32-kernel"
    description = "correct: float32 inside, one round to the out dtype"
    capabilities = {"status"}
    products = PRODUCTS
    # Operators this kernel computes otherwise than the registry's (operator name -> Operator).
    kernels: Mapping[str, Operator] = {}
    # A mutant's: the kinds of check that must fail ("numbers", "rejection", "determinism").
    fails: FrozenSet[str] = frozenset()
    # The operators whose cases judge it (None: every operator's).
    operators: Optional[FrozenSet[str]] = None

    @staticmethod
    def where(case: Case) -> bool:
        """A mutant's: the cases where its defect shows (its failures must lie there)."""
        return False

    def op(self, call: OpCall) -> Operator:
        return self.kernels.get(call.op) or ops.get(call.op)

    def run(self, call: OpCall) -> Any:
        self.validate(call)
        inputs = {n: None if a is None else self.values(n, self.load(a), call)
                  for n, a in call.inputs.items()}
        call = dataclasses.replace(call, inputs=inputs)
        r = self.compute(call)
        if getattr(call, "outputs", None) is None:
            return self.finish(self.round_out(r, call), call)
        return self.several(r, call)

    def several(self, r: Any, call: OpCall) -> Dict[str, np.ndarray]:
        """A call with several outputs (OpCall.outputs): the steps above make the first output,
        out, as for an operator with one (a mutant of compute, round_out or finish changes out
        alone); every other written output is the operator's reference's, in its own dtype
        (`compute` may give them with out, as a mapping, or give out alone: then they are
        computed here), so an operator's own defect in one of them shows there."""
        op = self.op(call)
        rest = dict(r) if isinstance(r, Mapping) else dict(op.reference(call))
        first = rest.pop(op.outputs[0], None) if isinstance(r, Mapping) else r
        rest.pop(op.outputs[0], None)
        return {op.outputs[0]: self.finish(self.round_out(first, call), call), **rest}

    # -- phase 1 -------------------------------------------------------------------------------
    def signature(self, call: OpCall) -> Signature:
        return Signature.of_call(call)

    def validate(self, call: OpCall) -> None:
        status, why = self.op(call).check(self.signature(call))
        if status:
            raise AclnnError(status, why)

    # -- memory and precision ------------------------------------------------------------------
    def load(self, a: np.ndarray) -> np.ndarray:
        """The tensor's logical values (numpy honours its strides)."""
        return np.asarray(a)

    def values(self, name: str, a: np.ndarray, call: OpCall) -> np.ndarray:
        """Input `name`'s values as the kernel sees them, in the input's own dtype (`call` is the
        original call; a shape the input broadcasts to may replace its own)."""
        return a

    # -- the result ----------------------------------------------------------------------------
    def compute(self, call: OpCall) -> Any:
        """The float32 result of out's shape, before the final rounding: the operator's reference
        with a float32 out (rounded through `result_dtype` where the operator names one); for an
        operator with several outputs its reference's mapping (the others in their own dtypes)."""
        return self.op(call).reference(dataclasses.replace(call, out_dtype=FLOAT32))

    def round_out(self, r32: np.ndarray, call: OpCall) -> np.ndarray:
        """One round to out's dtype, through the dtype the operator rounds its result to."""
        return to_out(to_out(r32, through(self.op(call), call)), call.out_dtype)

    def finish(self, out: np.ndarray, call: OpCall) -> np.ndarray:
        """What happens after the result is in the out dtype (writing it back to memory)."""
        return out


def through(op: Operator, call: OpCall) -> np.dtype:
    """The dtype the operator rounds its result to before the cast to out (out's own by default);
    to_out of it then casts exactly to out, as Operator.reference does."""
    live = {n: dtypes.name_of(a.dtype) for n, a in present(call.inputs).items()}
    return dtypes.dtype_of(op.result_dtype(live, dtypes.name_of(call.out_dtype)))


class SumKernel(Float32Kernel):
    """The control with its sum over the axes `out_shape` lacks cut out (`sum_back`): the float32
    terms on `b_shape` come from the operator's `reference_terms`, all at once."""

    def terms(self, call: OpCall) -> np.ndarray:
        op = self.op(call)
        x = present(call.inputs)
        b = op.b_shape({n: tuple(a.shape) for n, a in x.items()})
        blocks = list(op.term_blocks(x, dict(call.attrs), np.float32, block=max(numel(b), 1),
                                     reference=True))
        if not blocks:                                    # an empty broadcast shape
            return np.zeros(b, dtype=np.float32)
        (_, t), = blocks
        return np.asarray(t, dtype=np.float32)

    def compute(self, call: OpCall) -> np.ndarray:
        out_shape = tuple(call.out_shape)
        terms = self.terms(call)
        with np.errstate(all="ignore"):
            if reduced_axes(out_shape, terms.shape):
                r = self.sum_back(terms, out_shape)
            else:
                r = np.broadcast_to(terms, out_shape)
        fill = self.op(call).empty_fill_of(call.attrs, {n: tuple(a.shape) for n, a in present(call.inputs).items()}) \
            if terms.size == 0 else None
        if fill is not None:                              # the op API's fill of a sum of nothing
            r = np.full(out_shape, fill, dtype=np.float32)
        # rounded through the operator's result dtype, as its reference does for a float32 out
        dt = through(self.op(call), dataclasses.replace(call, out_dtype=FLOAT32))
        return to_out(to_out(r, dt), FLOAT32)

    def sum_back(self, terms: np.ndarray, out_shape) -> np.ndarray:
        """The sum of the terms over the axes out lacks, in float32 (numpy's pairwise sums)."""
        axes = reduced_axes(out_shape, terms.shape)
        return np.sum(terms, axis=axes, dtype=np.float32).reshape(out_shape)


def terms_first(terms: np.ndarray, out_shape) -> np.ndarray:
    """The terms as (number of terms per output, outputs...): each output's terms in memory order."""
    axes = reduced_axes(tuple(out_shape), terms.shape)
    kept = [i for i in range(terms.ndim) if i not in axes]
    n = numel(tuple(terms.shape[i] for i in axes))
    return np.transpose(terms, list(axes) + kept).reshape((n,) + tuple(terms.shape[i] for i in kept))


def operator_kernel(name: str, description: str, kernel: Operator,
                    where: Optional[Callable[[Case], bool]] = None,
                    fails: FrozenSet[str] = frozenset()) -> Type[Float32Kernel]:
    """The control with `kernel` in place of the registered operator of its name: judged only on
    that operator's cases (the others would run the control, which passes them)."""
    op_name = kernel.name

    def _where(case: Case) -> bool:
        return case.op == op_name and bool(where(case)) if where else False

    attrs: Dict[str, Any] = {"description": description, "kernels": {op_name: kernel},
                             "fails": frozenset(fails), "operators": frozenset({op_name}),
                             "where": staticmethod(_where), "__module__": __name__,
                             "__qualname__": name, "__doc__": description}
    return type(name, (Float32Kernel,), attrs)
