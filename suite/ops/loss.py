"""The loss family's bases: what aclnn's loss backwards share (`LossBackward`) and what the forward
losses add to it (`LossForward`), written once, so that each operator module holds only what
differs (as PyTorch's OpInfo family subclasses do).

The five operators take their tensors, then `int64 reduction`, then their own attributes, in that
order (their pages' C signatures); reject a NULL tensor with 161001 before anything else, a rank
past 8 and a reduction they do not know with 161002 (KlDivBackward leaves the reduction outside
the contract instead); promote mixed floating input dtypes by opbase's PromoteType; and map to
aten calls that take the reduction as an int. Each operator's page-table rows are built by `sig`,
which fills in what a row does not name, and the rows every page has in common by `null_rows`,
`rank_rows` and `reduction_rows`."""
from __future__ import annotations

import math
from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple

import numpy as np

from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID
from suite.ops.base import (Attr, Operator, Rejection, Shape, Signature, broadcast, element_inputs, ftz, numel,
                            reduced_axes)
from suite.ops.promotion import promote_pair

# The floating dtypes the family's kernels take (opbase's promotion is modelled for these only).
FLOATS = ("float32", "float16", "bfloat16")
# Page-table shapes: a 9-d one (one past MAX_RANK, broadcasting with (2, 2)) and an 8-d one.
R9, R8 = (1, 1, 1, 1, 1, 1, 1, 2, 2), (1, 2, 1, 2, 1, 1, 2, 1)
# A page-table row's shape for every tensor it does not name.
ROW_SHAPE: Shape = (2, 3)
# A page-table row: a call and the status aclnn gives it (suite.ops.base.table's input).
Row = Tuple[Signature, int]
# The C type of an attribute's Python kind (Attr.kind), as Operator.c_params spells it.
C_KINDS = {bool: "bool", int: "int64", float: "float"}


def promote(names: Iterable[Optional[str]]) -> Optional[str]:
    """opbase's PromoteType folded over the dtypes given, left to right (None, a NULL optional
    input, takes no part; suite/ops/promotion.py): equal dtypes stay, FLOAT16 with BFLOAT16 and
    either with FLOAT give FLOAT, an integer or BOOL operand takes the float one's dtype, two
    integers the wider signed one. None when a pair has no promotion (UINT16/32/64) or none is
    given."""
    live = [n for n in names if n is not None]
    if not live:
        return None
    p: Optional[str] = live[0]
    for n in live[1:]:
        p = promote_pair(p, n) if p is not None else None
    return p


def c_signature(inputs: Sequence[str], attributes: Sequence[Attr]) -> Tuple[Tuple[str, str, Any], ...]:
    """The family's aclnn<name>GetWorkspaceSize parameters before `out`: every input as a tensor,
    `reduction` as int64 (default 1, mean), then each attribute with its C type and default."""
    return (*((n, "tensor", None) for n in inputs), ("reduction", "int64", 1),
            *((a.name, C_KINDS[a.kind], a.default) for a in attributes))


def _or(names: Sequence[int]) -> str:
    """0, 1 or 2: the reductions as the rejection message lists them."""
    words = [str(n) for n in names]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


class LossBackward(Operator):
    """A loss backward: none, mean and sum (an operator with more says so), the C signature
    derived from `inputs` and `attributes` (unless a subclass declares its own `c_params`), and
    the helpers its check, its torch mapping and its page-table rows share."""

    reductions = {"none": 0, "mean": 1, "sum": 2}
    # What out's shape is in a page-table row that does not name it: "broadcast" (the broadcast
    # shape of the inputs) or "self" (self's shape); and the row's reduction by default.
    row_out: str = "broadcast"
    row_reduction: int = 0

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "c_params" not in cls.__dict__:
            cls.c_params = c_signature(cls.inputs, cls.attributes)

    # -- checks -----------------------------------------------------------------------------------
    def _reduction(self, sig: Signature) -> Optional[Rejection]:
        """161002 for a reduction outside the operator's (its page's reduction row)."""
        red = sig.attrs.get("reduction")
        if red not in self.reductions.values():
            return INVALID, f"reduction {red} is not {_or(sorted(self.reductions.values()))}"
        return None

    def torch_reduction(self, attrs: Mapping[str, Any]) -> int:
        """The reduction as aten takes it; the torch backend refuses one outside the contract
        (aten would read an unknown value as some reduction of its own)."""
        reduction = int(attrs["reduction"])
        if reduction not in self.reductions.values():
            raise ValueError(f"torch backend: {self.name} reduction {reduction} not in "
                             f"{tuple(self.reductions.values())}")
        return reduction

    # -- page-table rows ----------------------------------------------------------------------------
    def sig(self, out: Any = "default", dt: str = "float32", odt: Optional[str] = None,
            product: str = "atlas-a2", **given: Any) -> Signature:
        """A page-table row's call: each input named by its initial (g=, s=, t=, w=: its shape,
        None for NULL) and its dtype by the initial and "dt" (gdt=, ...), else ROW_SHAPE in `dt`
        (a NULL optional input has no dtype); out's shape the one the contract wants (`row_out`;
        ROW_SHAPE when a tensor it depends on is NULL) unless given, out's dtype `odt`, else
        self's; each attribute by its name (reduction=, beta=, ...), else its default."""
        keys = {n[0].lower(): n for n in self.inputs}
        shapes = {n: given.pop(k, ROW_SHAPE) for k, n in keys.items()}
        dts = {n: given.pop(k + "dt", None) or dt for k, n in keys.items()}
        dts = {n: None if n in self.optional and shapes[n] is None else d for n, d in dts.items()}
        attrs = {"reduction": given.pop("reduction", self.row_reduction),
                 **{a.name: given.pop(a.name, a.default) for a in self.attributes}}
        if given:
            raise TypeError(f"{self.name}.sig: unknown {', '.join(sorted(given))}")
        if out == "default":
            out = self._row_out(shapes)
        return Signature(shapes, dts, out, odt or dts["self"], attrs, product)

    def null_rows(self) -> Dict[str, Row]:
        """'<input> NULL' for each input that may not be NULL, then 'out NULL': `null_status`,
        161001 but where the op API says otherwise (every operator of the family checks NULL first)."""
        rows = {f"{n} NULL": (self.sig(**{n[0].lower(): None}), self.null_status)
                for n in self.inputs if n not in self.optional}
        return {**rows, "out NULL": (self.sig(out=None), self.null_status)}

    def rank_rows(self, names: Sequence[str] = ()) -> Dict[str, Row]:
        """'<tensor> 9-d' for each of `names` (default: the inputs), in that order: that tensor
        R9, every input else (2, 2), which broadcasts with it; 161002."""
        rows = {}
        for n in names or self.inputs:
            shapes = {k[0].lower(): R9 if k == n else (2, 2) for k in self.inputs}
            rows[f"{n} 9-d"] = (self.sig(**shapes, **({"out": R9} if n == "out" else {})), INVALID)
        return rows

    def reduction_rows(self) -> Dict[str, Row]:
        """'reduction <one past the largest>' and 'reduction -1': 161002 (`_reduction`)."""
        past = max(self.reductions.values()) + 1
        return {f"reduction {past}": (self.sig(reduction=past), INVALID),
                "reduction -1": (self.sig(reduction=-1), INVALID)}

    def _row_out(self, shapes: Mapping[str, Optional[Shape]]) -> Optional[Shape]:
        if self.row_out == "self":
            return ROW_SHAPE if shapes["self"] is None else shapes["self"]
        if any(s is None for s in shapes.values()):
            return ROW_SHAPE
        return broadcast(*shapes.values())



class LossForward(LossBackward):
    """A forward loss: elementwise terms on B = broadcast(self, target) (`b_shape`), returned as
    they are (none), summed (sum) or summed and divided by numel(B) (mean, `divisor`); out is B
    under none and 0-d under the others (`reduces`); the kernel writes P = promote(inputs), which
    the op API casts to out's dtype; an empty mean is NaN. A subclass declares `term_text` and
    `loss` / `reference_loss` (its unreduced term in float64 and in the kernel's FLOAT order), and
    overrides a hook where its op API differs."""

    inputs = ("self", "target")
    term_text: str = ""                         # the term, as a failure message names it
    # What a reduced call's out of another shape is told (`_shape_checks`).
    reduced_why: str = "mean and sum want a 0-d out"
    # describe's divisor per reduction.
    divisor_text: Mapping[int, str] = {1: " / numel(B)"}
    aten: str = ""                              # the aten loss `torch` calls, if the default fits

    # -- contract -------------------------------------------------------------------------------
    def reduces(self, reduction: Any) -> bool:
        """Whether out is 0-d: every reduction the operator knows but none."""
        return reduction != 0 and reduction in self.reductions.values()

    def none_shape(self, shapes: Mapping[str, Optional[Shape]]) -> Optional[Shape]:
        """out's shape under none: B (None where an input is NULL)."""
        return None if any(shapes.get(n) is None for n in self.inputs) else self.b_shape(shapes)

    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        """`none_shape` for none (and for a reduction outside the operator's, rejected or outside the
        contract); () for the others."""
        b = self.none_shape(shapes)
        return () if b is not None and self.reduces(attrs.get("reduction")) else b

    def _promoted(self, sig: Signature, allowed: Optional[Mapping[str, Any]] = None) -> Optional[Rejection]:
        """161002 where P = promote(self, target) is not in the product's list (`allowed`, default
        `product_dtypes`)."""
        p = promote(sig.dtypes[n] for n in self.inputs)
        if p is None or p not in (allowed or self.product_dtypes)[sig.product]:
            return INVALID, (f"self {sig.dtypes['self']} and target {sig.dtypes['target']} promote to "
                             f"{p or 'no dtype'}, not supported on {sig.product}")
        return None

    def _shape_checks(self, sig: Signature, rank: bool = True) -> Rejection:
        """The shape rows in CheckShape's order: the rank of each input (unless `rank` is False),
        the broadcast, out: B under none, `_reduced_out` under the others."""
        bad = self._rank(sig, with_out=False) if rank else None
        if bad:
            return bad
        b = broadcast(sig.shapes["self"], sig.shapes["target"])
        if b is None:
            return INVALID, "self and target do not broadcast"
        out = tuple(sig.out_shape)
        if sig.attrs["reduction"] == 0 and out != b:
            return INVALID, f"out shape {out} is not the broadcast shape {b}"
        wrong = self._reduced_out(out) if sig.attrs["reduction"] != 0 else None
        return (INVALID, f"out shape {out} {wrong}") if wrong else (0, "")

    def _reduced_out(self, out: Shape) -> Optional[str]:
        """What is wrong with a reduced call's out (None: nothing): it must be 0-d."""
        return None if out == () else f"is not 0-d ({self.reduced_why})"

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """The kernel writes P = promote(inputs); the op API casts that to out's dtype (two roundings
        where they differ, the pages' "How the vendor kernel computes")."""
        return promote(dts.get(n) for n in self.inputs) or out_dtype

    # -- numbers ----------------------------------------------------------------------------------
    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        return broadcast(shapes["self"], shapes["target"])

    def empty_fill(self, attrs: Mapping[str, Any]) -> Optional[float]:
        """mean of nothing: the op API fills out with NaN (0/0); sum: 0."""
        return math.nan if attrs["reduction"] == 1 else None

    def divisor(self, attrs: Mapping[str, Any], shapes: Mapping[str, Shape]) -> Optional[int]:
        """mean: numel(B); the other reductions, and an empty B (the fill decides): no division."""
        n = numel(self.b_shape(shapes))
        return n if attrs["reduction"] == 1 and n else None

    def loss(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
        """The unreduced term in float64."""
        raise NotImplementedError

    def reference_loss(self, x: Mapping[str, np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
        """The unreduced term as the vendor kernel computes it, in FLOAT."""
        raise NotImplementedError

    def terms(self, x, attrs, shapes) -> np.ndarray:
        loss, d = self.loss(x, attrs), self.divisor(attrs, shapes)
        return loss if d is None else loss / d                    # float64: the exact division

    def reference_terms(self, x, attrs, shapes) -> np.ndarray:
        """`reference_loss`, for mean each term times float(1.0 / N) (the scale computed in double
        and rounded once; a kernel that scales the sum once differs by rounding only)."""
        loss, d = self.reference_loss(x, attrs), self.divisor(attrs, shapes)
        return loss if d is None else ftz(loss * np.float32(1.0 / d))

    def term(self, attrs: Mapping[str, Any]) -> str:
        """The term as describe names it: `term_text` unless an attribute changes it."""
        return self.term_text

    def describe(self, x, attrs, out_shape, index) -> str:
        b = self.b_shape({n: tuple(np.shape(a)) for n, a in x.items()})
        if reduced_axes(tuple(out_shape), b) or numel(out_shape) != numel(b):
            how = self.divisor_text.get(attrs["reduction"], "")
            return f"the sum of {numel(b)} terms {self.term(attrs)} over B = {b}{how}"
        return element_inputs(x, out_shape, index)

    def torch(self, torch, t, attrs, device):
        """aten's `aten` loss on the inputs broadcast to B (the functional forms warn on differing
        shapes), the reduction as an int, then the attributes in order."""
        x, y = torch.broadcast_tensors(t["self"], t["target"])
        extra = (attrs[a.name] for a in self.attributes)
        return getattr(torch.ops.aten, self.aten)(x, y, self.torch_reduction(attrs), *extra)
