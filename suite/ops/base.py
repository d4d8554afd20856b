"""What every operator module provides: the Operator base class (its contract, and the walk in
blocks that turns its elementwise terms into a golden, a reference result or single elements).

The shapes, the flushing switch and the plain records live in suite/ops/shapes.py, flush.py and
records.py, the block helpers and the walk at single elements in walk.py, the shared phase-1 checks
in checks.py (a mixin); their names are imported here too, so `from suite.ops.base import ...` keeps
working for every module that reads them. An operator family's shared scaffolding (the loss backwards':
suite/ops/loss.py) sits between this class and the operator modules."""
from __future__ import annotations

from typing import Any, Callable, Dict, FrozenSet, Mapping, Optional, Tuple

import numpy as np

from suite.common import blocks as B
from suite.common import dtypes
from suite.contract import PRODUCTS, OpCall
from suite.ops.flush import F32_TINY, flushing, ftz
from suite.ops.records import Attr, Example, Golden, Rejection, Signature, VendorNames, table
from suite.ops.shapes import MAX_RANK, Shape, broadcast, numel, reduced_axes
from suite.ops import walk
from suite.ops.checks import SharedChecks
from suite.ops.walk import _blocks, _part, present, to_out

__all__ = ["Attr", "Example", "F32_TINY", "Golden", "LOSS_DTYPES", "MAX_RANK", "Operator", "Rejection",
           "Shape", "Signature", "broadcast", "element_inputs", "flushing", "ftz", "numel", "present",
           "reduced_axes", "table", "to_out", "VendorNames"]


# The dtypes the loss-backward family takes on each product it serves (docs/aclnn-status.md, and
# each operator's page): an operator that differs declares its own `product_dtypes`. Atlas 200I/500
# A2 (atlas-200i-500-a2) is not here: every page marks these operators "not supported" there, and
# the op API code gives it the two-dtype list, whose calls then reach kernels no public source
# places on that chip, so what aclnn returns is not established (Operator.serves).
LOSS_DTYPES: Mapping[str, FrozenSet[str]] = {
    "atlas-training": frozenset({"float32", "float16"}),
    "atlas-inference": frozenset({"float32", "float16"}),
    "atlas-a2": frozenset({"float32", "float16", "bfloat16"}),
    "atlas-a3": frozenset({"float32", "float16", "bfloat16"}),
    "ascend-950": frozenset({"float32", "float16", "bfloat16"}),
}


class Operator(SharedChecks):
    """One aclnn operator's whole contract. A new operator is a subclass in one new module."""

    name: str = ""
    inputs: Tuple[str, ...] = ("gradOutput", "self", "target")
    # The dtypes each product family takes, for every tensor (inputs and out); a family left out is
    # one the operator does not serve (`serves`), an empty set one where phase 1 rejects every call.
    product_dtypes: Mapping[str, FrozenSet[str]] = LOSS_DTYPES
    # The input whose dtype is a case's default for the others and for out, and whose shape is
    # out's when no broadcast rule gives one (a case file's dtype mapping may name it for 'inputs').
    primary: str = "self"
    # Inputs a valid call may pass as NULL (an optional tensor); NULL for any other is 161001.
    optional: Tuple[str, ...] = ()
    reductions: Dict[str, int] = {}
    # Attributes beyond reduction (their case-file keys, values and id tokens).
    attributes: Tuple["Attr", ...] = ()
    # The C parameters of aclnn<name>GetWorkspaceSize before `out`, in order: (name, C type,
    # default), C type one of tensor, int64, bool, float; a tensor is the input of that name (NULL
    # when the call has None). `out`, workspaceSize and executor follow.
    c_params: Tuple[Tuple[str, str, Any], ...] = (
        ("gradOutput", "tensor", None), ("self", "tensor", None), ("target", "tensor", None),
        ("reduction", "int64", 1))
    # Value sets: name -> function(sig) -> {input: suite.draw.Dist}.
    value_sets: Dict[str, Callable] = {}
    # Names this operator's tiling gives shape generators (see `tiling`).
    tiling_names: Tuple[str, ...] = ()
    # The inputs whose values the result depends on (the others give only a shape); None: all.
    reads: Optional[Tuple[str, ...]] = None
    # The operands (`operands`) used as indices, not as numbers: a class-index target, a class
    # coordinate. They reach `terms` and `reference_terms` as int64, exactly as drawn: never cast to
    # `operand_dtype`, never widened to a float, never flushed (a target of 2^24 + 1 through float32
    # would equal its neighbour class, and the kernels compare and address with integers).
    indices: Tuple[str, ...] = ()
    # Where the operator's documented implementation is not deterministic (its page's
    # "Determinism"): product -> the attribute values it is not deterministic for, e.g.
    # {"atlas-training": {"reduction": (1, 2)}}; an empty mapping: every call on that product.
    # There the determinism test judges each run within the case's standard instead of
    # requiring identical bits. Default: deterministic on every product.
    nondeterministic: Mapping[str, Mapping[str, Tuple[Any, ...]]] = {}
    # The output tensors, in C-signature order after the inputs and attributes (aclnnNLLLoss: out,
    # totalWeightOut). The first is `out`: its shape is out_shape's and its dtype the case's out
    # dtype, as for every operator with one; the others are declared by output_shape,
    # output_dtype and writes (suite/ops/outputs.py says how the suite reads them).
    outputs: Tuple[str, ...] = ("out",)
    # How the vendor's ATK and TTK system-test files name this operator (cases import).
    vendor: VendorNames = VendorNames()

    # -- contract -----------------------------------------------------------------------------
    def serves(self, product: str) -> bool:
        """Whether the contract covers calls on `product` (its `product_dtypes` names it). Where it
        does not, the status aclnn returns is not established: matrices make no case there, a single
        case naming it is refused at its line, and the reference backend raises Unsupported (the
        case is skipped with the reason, never judged by an invented status)."""
        return product in self.product_dtypes

    def not_served(self, product: str) -> str:
        """Why `product` has no case of this operator: one line, naming the products it serves."""
        served = ", ".join(p for p in PRODUCTS if p in self.product_dtypes)
        return (f"{self.name} is not served on {product}: its page marks it not supported there and what "
                f"aclnn returns is not established (served: {served})")

    def out_shape(self, shapes: Mapping[str, Optional[Shape]],
                  attrs: Mapping[str, Any]) -> Optional[Shape]:
        """The canonical out shape the contract gives for these input shapes and attributes (None:
        no valid one). The attributes matter for a forward loss, whose out is () under mean and sum
        and the broadcast shape under none; the backwards ignore them. Where the contract accepts
        other shapes of as many elements (KlDiv's reductions take [1] or [1, 1] too; its check
        says which), goldens and reference results are made in this shape and reshaped to the
        case's (`canonical_out`)."""
        raise NotImplementedError

    def output_shape(self, name: str, shapes: Mapping[str, Optional[Shape]],
                     attrs: Mapping[str, Any]) -> Optional[Shape]:
        """The shape the caller allocates for output `name` (None: no valid one). The first output's
        is out_shape's; an operator with several outputs declares the others'."""
        if name == self.outputs[0]:
            return self.out_shape(shapes, attrs)
        raise NotImplementedError(f"{self.name}: no shape declared for output {name}")

    def output_dtype(self, name: str, dts: Mapping[str, Optional[str]], out_dtype: Optional[str],
                     attrs: Mapping[str, Any]) -> Optional[str]:
        """The dtype the caller allocates for output `name`, from the inputs' dtypes and out's (the
        case's out dtype). The first output's is out's own."""
        if name == self.outputs[0]:
            return out_dtype
        raise NotImplementedError(f"{self.name}: no dtype declared for output {name}")

    def writes(self, name: str, attrs: Mapping[str, Any]) -> bool:
        """Whether a call with these attributes writes output `name` (aclnnNLLLoss leaves
        totalWeightOut untouched under reduction none): an unwritten output is not judged, and
        whatever it holds afterwards is no failure. Every output is written by default."""
        return True

    def goldens(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object],
                block: int = B.BLOCK) -> Dict[str, Golden]:
        """float64 goldens of every written output, name -> Golden (the first is `golden`'s). An
        operator with several outputs overrides this; one output needs nothing more."""
        return {self.outputs[0]: self.golden(x, attrs, block)}

    def check(self, sig: Signature) -> Rejection:
        """Phase 1: the status aclnn returns for this call, and why."""
        raise NotImplementedError

    def deterministic_on(self, product: str, attrs: Mapping[str, Any]) -> bool:
        """Whether the contract promises identical bits for two runs of this call on `product`
        (`nondeterministic`): a reduction whose order on a product is not documented may differ
        by rounding between runs, and a test that demanded identical bits there would fail a
        correct kernel."""
        when = self.nondeterministic.get(product)
        return when is None or not all(attrs.get(k) in vs for k, vs in when.items())

    def tiling(self, hw, dts: Mapping[str, str]) -> Dict[str, int]:
        """Where the vendor kernel's tiling puts its boundaries on `hw` (a suite.hardware.Hardware)
        for these input dtypes: values for `tiling_names`, in elements."""
        return {}

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """The dtype the kernel rounds its float32 result to before the cast to out's dtype: out's
        own by default; an operator that computes in the promoted input dtype and casts that to out
        (docs/operators/*.md say which) names the promoted dtype, and where it is coarser than out
        the result is judged in it."""
        return out_dtype

    def term_dtype(self, dts: Mapping[str, str]) -> str:
        """The dtype the kernel rounds its elementwise terms to before it sums them over the axes
        `out_shape` lacks (a separate reduction kernel reading the first kernel's output): float32
        by default; an operator whose first kernel writes a 16-bit tensor names that dtype."""
        return "float32"

    def operand_dtype(self, dts: Mapping[str, str]) -> Optional[str]:
        """The float dtype the op API casts an exact (integer or BOOL) input to, after broadcasting
        it in its own dtype, before the kernel reads it (None: the operator takes no exact input as
        a number). The golden, the reference kernel and the vendor path all read an exact input
        as its value rounded once to this dtype, as the device's Cast gives it."""
        return None

    def empty_fill(self, attrs: Mapping[str, Any]) -> Optional[float]:
        """What each out element holds when it sums no terms at all (an empty broadcast shape under a
        reduction): None for the sum of nothing, 0; a forward loss whose op API fills the mean of
        nothing with NaN (0/0) returns NaN for it. The golden, the reference and vendor_at all
        apply it, so no operator re-implements the walk for its empty inputs."""
        return None

    def empty_fill_of(self, attrs: Mapping[str, Any], shapes: Mapping[str, Shape]) -> Optional[float]:
        """`empty_fill` for inputs of these shapes: where the fill depends on a shape and not only on
        the attributes (KlDiv's batchmean of nothing: NaN when self's first dimension is 0, else 0),
        the operator overrides this; by default the attributes decide (`empty_fill`)."""
        return self.empty_fill(attrs)

    def examples(self) -> Tuple[Example, ...]:
        """The page's phase-1 table as rows (rejected and accepted calls), at least one accepted."""
        return ()

    def outside_contract(self, sig: Signature) -> Optional[str]:
        """Why this combination is not covered by the documented contract (None: it is)."""
        return None

    # -- numbers ------------------------------------------------------------------------------
    # An operator's result is elementwise terms on the broadcast shape `b_shape`, summed over the
    # axes that `out_shape` lacks (none for most). The suite walks that shape in blocks, so a
    # golden or a reference result of any size costs memory for the output and one block only.
    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        """The shape the elementwise terms live on (None: the inputs do not broadcast)."""
        raise NotImplementedError

    def terms(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object],
              shapes: Mapping[str, Shape]) -> np.ndarray:
        """float64 terms on a block of `b_shape`, from exact float64 inputs broadcast to that block
        (`shapes`: the inputs' own shapes, for divisors such as numel(self))."""
        raise NotImplementedError

    def reference_terms(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object],
                        shapes: Mapping[str, Shape]) -> np.ndarray:
        """The same terms as the vendor kernel computes them, from float32 inputs, in float32."""
        raise NotImplementedError

    def operands(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object]) -> Dict[str, np.ndarray]:
        """The arrays the terms read, each broadcastable to `b_shape`, from the exact inputs the
        call passes (`x`, NULL ones left out). Default: the inputs as given, which today's
        operators broadcast together. An operator whose inputs do not broadcast to its terms'
        shape reshapes or gathers them here, once per walk, before any block is taken: a class
        index [N] beside scores [N, C] becomes a column [N, 1] (suite/ops/operands.py), a weight
        per class [C] broadcasts along the rows as it is, a class coordinate [C] is added (an
        `indices` operand), and a forward's gather (self[n, t_n], w[t_n]) is an operand [N] on
        terms [N]. The golden, the reference, `vendor_at` and `element_values` all walk these;
        `reads` still leaves out an input of these names whose values the result ignores. Keep
        them small next to N x C (columns, rows, gathers): the walk broadcasts them one block at
        a time. `attrs` may be empty where only the values behind an element are asked for."""
        return dict(x)

    def _walked(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object]) -> Dict[str, np.ndarray]:
        """The operands a walk reads: `operands` less the inputs outside `reads` (an operand that
        is not an input, such as a class coordinate, is always read)."""
        return {n: a for n, a in self.operands(x, attrs).items()
                if self.reads is None or n in self.reads or n not in self.inputs}

    def term_blocks(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object], dtype,
                    block: int = B.BLOCK, reference: bool = False):
        """(index, terms) for consecutive blocks of `b_shape` in C order: the operands the result
        reads (`operands`), widened to `dtype` one block at a time (an index operand stays int64),
        through `terms` (or `reference_terms`). The golden, the reference kernel and a lazily read
        golden all walk a shape this way."""
        x = present(x)
        shapes = {n: tuple(np.shape(a)) for n, a in x.items()}
        b = self.b_shape(shapes)
        fn = self.reference_terms if reference else self.terms
        walked = self._walked(x, attrs)
        cast = self._operand_casts(walked)
        with np.errstate(all="ignore"):
            for blk in _blocks(b, block):
                xb = {n: _part(a, b, blk, np.int64 if n in self.indices else dtype, cast.get(n))
                      for n, a in walked.items()}
                if reference:
                    xb = {n: ftz(a) for n, a in xb.items()}       # a flushing core's operands
                yield blk, np.broadcast_to(fn(xb, attrs, shapes), B.block_shape(blk, b))

    def golden(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object],
               block: int = B.BLOCK) -> Golden:
        """float64 result from exact inputs (any float dtype; widened block by block; an optional
        input left out or None is NULL)."""
        x = present(x)
        shapes = {n: tuple(np.shape(a)) for n, a in x.items()}
        b, out_shape = self.b_shape(shapes), self.out_shape(shapes, attrs)
        axes = reduced_axes(out_shape, b)
        out = np.zeros(out_shape, dtype=np.float64)
        scale = np.zeros(out_shape, dtype=np.float64) if axes else None
        path = np.zeros(out_shape, dtype=np.float64) if axes else None
        with np.errstate(all="ignore"):
            for blk, t in self.term_blocks(x, attrs, np.float64, block):
                if not axes:
                    out[blk] = t
                    continue
                at = B.target_index(blk, b, out_shape)
                # the running sums of each output's terms, in memory order, carried across blocks
                run = np.moveaxis(t, axes, range(len(axes)))
                run = run.reshape(numel(run.shape[:len(axes)]), -1)
                partial = np.cumsum(run, axis=0) + out[at].reshape(-1)
                path[at] += np.sum(np.abs(partial), axis=0).reshape(out[at].shape)
                out[at] += np.sum(t, axis=axes, keepdims=True).reshape(out[at].shape)
                scale[at] += np.sum(np.abs(t), axis=axes, keepdims=True).reshape(out[at].shape)
        nterms = numel(b) // numel(out_shape) if numel(out_shape) else 1
        fill = self.empty_fill_of(attrs, shapes) if numel(b) == 0 else None
        if fill is not None:
            out[...] = fill
        if scale is None:
            return Golden(out=out, scale=np.abs(out), nterms=max(nterms, 1))
        return Golden(out=out, scale=scale, nterms=max(nterms, 1), path=path)

    def reference(self, call: OpCall, block: int = B.BLOCK, flush: bool = False) -> np.ndarray:
        """The result as the vendor kernel computes it (float32 inside, its terms rounded to
        `term_dtype` before a sum, the result rounded to `result_dtype` and then to out's dtype),
        block by block; the call is valid. `flush`: as a core that flushes float32 subnormals."""
        with flushing(flush):
            return self._reference(call, block)

    def _reference(self, call: OpCall, block: int) -> np.ndarray:
        x = present(call.inputs)
        shapes = {n: tuple(a.shape) for n, a in x.items()}
        b = self.b_shape(shapes)
        out_shape = self.canonical_out(shapes, call.attrs, tuple(call.out_shape))
        dts = {n: dtypes.name_of(a.dtype) for n, a in x.items()}
        through = dtypes.dtype_of(self.result_dtype(dts, dtypes.name_of(call.out_dtype)))
        term_dt = dtypes.dtype_of(self.term_dtype(dts))

        def rounded(r32: np.ndarray) -> np.ndarray:
            return to_out(r32, call.out_dtype) if through == call.out_dtype else \
                to_out(to_out(r32, through), call.out_dtype)
        axes = reduced_axes(out_shape, b)
        out = np.empty(out_shape, dtype=call.out_dtype)
        acc = np.zeros(out_shape, dtype=np.float32) if axes else None
        with np.errstate(all="ignore"):
            for blk, t in self.term_blocks(x, dict(call.attrs), np.float32, block, reference=True):
                if not axes:
                    out[blk] = rounded(t)
                    continue
                at = B.target_index(blk, b, out_shape)
                if term_dt != np.float32:                  # the first kernel's output tensor
                    t = to_out(t, term_dt).astype(np.float32)
                part = ftz(np.sum(t, axis=axes, keepdims=True, dtype=np.float32))
                acc[at] = ftz(acc[at] + part.reshape(acc[at].shape))
        if acc is not None:
            out[...] = rounded(acc)
        fill = self.empty_fill_of(call.attrs, shapes) if numel(b) == 0 else None
        if fill is not None:
            out[...] = rounded(np.float32(fill))
        return out.reshape(call.out_shape)

    def canonical_out(self, shapes: Mapping[str, Shape], attrs: Mapping[str, Any], out: Shape) -> Shape:
        """The shape a result is computed in for a call whose out is `out`: the operator's own
        `out_shape` where `out` holds as many elements (a one-element out of another accepted shape,
        [1] for (), is reshaped afterwards), else `out` itself (the walk reduces the axes it lacks)."""
        want = self.out_shape(shapes, attrs)
        return tuple(want) if want is not None and numel(want) == numel(out) else tuple(out)

    def vendor_at(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object], idx: np.ndarray,
                  flush: bool = False, limit: int = B.BLOCK) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The result at out's flat indices `idx` as the vendor's arithmetic computes it, with the
        float64 (out, scale, path) `golden` gives, for judging (suite/ops/walk.py says how)."""
        return walk.vendor_at(self, x, attrs, idx, flush, limit)

    def element_values(self, x: Mapping[str, np.ndarray], out_shape: Shape, index: Tuple[int, ...],
                       attrs: Mapping[str, object] = {}) -> Optional[Dict[str, Optional[float]]]:
        """The values behind one element of an elementwise result (None where an element is a sum
        of several terms): name -> value, None for a NULL input, each operand (`operands`: the
        inputs themselves by default) at that element. For failure records."""
        live = present(x)
        shapes = {n: tuple(np.shape(a)) for n, a in live.items()}
        if reduced_axes(tuple(out_shape), self.b_shape(shapes)):
            return None
        walked = self.operands(live, attrs)
        vals: Dict[str, Optional[float]] = {n: None for n, a in x.items() if a is None}
        vals.update({n: float(np.broadcast_to(a, out_shape)[index]) for n, a in walked.items()})
        return {**{n: vals[n] for n in x if n in vals}, **vals}

    def describe(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, object],
                 out_shape: Shape, index: Tuple[int, ...]) -> str:
        """The inputs behind one output element, for failure messages."""
        raise NotImplementedError

    def torch(self, torch: Any, t: Mapping[str, Any], attrs: Mapping[str, Any], device: Any) -> Any:
        """How PyTorch computes this operator, for the torch backend: `t` holds the inputs as
        tensors in the compute dtype, on `device`; the result is a tensor of out's shape."""
        raise NotImplementedError(f"{self.name}: no torch mapping")

    def _operand_casts(self, x: Mapping[str, np.ndarray]) -> Dict[str, np.dtype]:
        """operand -> the dtype its exact values are cast to (operand_dtype), for the exact operands
        that are numbers (an index operand, `indices`, is never cast)."""
        exact = [n for n, a in x.items() if dtypes.name_of(a.dtype) in dtypes.EXACT and n not in self.indices]
        if not exact:
            return {}
        to = self.operand_dtype({n: dtypes.name_of(a.dtype) for n, a in x.items()})
        if to is None:
            raise ValueError(f"{self.name}: exact input {', '.join(exact)} but no operand_dtype to cast it to")
        return {n: dtypes.dtype_of(to) for n in exact}

    # -- names --------------------------------------------------------------------------------
    def reduction_name(self, value: int) -> str:
        for k, v in self.reductions.items():
            if v == value:
                return k
        return f"reduction{value}"


def element_inputs(x: Mapping[str, np.ndarray], shape: Shape, index: Tuple[int, ...]) -> str:
    """`name=value` of each input broadcast to `shape`, at `index`."""
    parts = []
    for k, v in x.items():
        parts.append(f"{k}=NULL" if v is None else f"{k}={float(np.broadcast_to(v, shape)[index])!r}")
    return ", ".join(parts)
