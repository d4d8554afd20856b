"""aclnnSmoothL1LossBackward: out = gradOut * r [/ numel(self) for mean] on B, the broadcast shape
of all three inputs, where with d = self - target and beta the float32 value received

    r = (-1 if d <= -beta) + (+1 if d >= beta) + (d / (beta + 1e-6) if |d| < beta)

(docs/operators/SmoothL1LossBackward.md: the TBE kernel's arithmetic, which the suite follows where
the vendor's pages say otherwise).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from suite.common import dtypes
from suite.values import sets as V
from suite.contract import ACLNN_ERR_PARAM_INVALID as INVALID, ACLNN_ERR_PARAM_NULLPTR as NULLPTR
from suite.values.draw import Binades, Choice, Dist, Sprinkle, Uniform
from suite.ops.records import VendorNames
from suite.ops.base import Attr, Example, Rejection, Shape, Signature, broadcast, element_inputs, ftz, numel, table
from suite.ops.loss import R8, LossBackward, promote

# The band's epsilon: the TBE kernel divides by beta + tvm.const(1e-6, "float32"), added in float32.
EPS = float(np.float32(1e-6))
# The band value set's lattice when beta gives none (beta = 0): as for beta = 0.5, multiples of 1/8.
LATTICE_ZERO_BETA = 0.5


def beta32(attrs: Mapping[str, object]) -> float:
    """beta as the operator receives it: a C float (the case file's 0.1 is 0.100000001490116...)."""
    with np.errstate(over="ignore"):
        return float(np.float32(attrs["beta"]))


def _token(v: float) -> str:
    return f"beta{float(v)!r}"


def smooth_r(d: np.ndarray, beta: float, eps) -> np.ndarray:
    """The TBE kernel's r in the dtype of `d` (float64 for the golden, float32 for the reference):
    a NaN d is replaced by 0 before the comparisons, the band term is computed from d itself, and
    the three terms are summed ((s1 + s2) + s3)."""
    one, zero = d.dtype.type(1.0), d.dtype.type(0.0)
    b = d.dtype.type(beta)
    t = d / (b + d.dtype.type(eps))
    x0 = np.where(d == d, d, zero)
    s1 = np.where(x0 <= -b, -one, zero)
    s2 = np.where(x0 >= b, one, zero)
    s3 = np.where(np.abs(x0) < b, t, zero)
    return (s1 + s2) + s3


# -- value sets ---------------------------------------------------------------------------------
def _uniform(sig: Signature) -> Dict[str, Dist]:
    return V.uniform_set(sig)


def _large(sig: Signature) -> Dict[str, Dist]:
    """|out| is |gradOut| (|r| <= 1): gradOut past float16's range when the inputs are wider (an out
    of float16 overflows to inf), and |d| far outside any band."""
    if V.narrowest(sig.dtypes.values()) == "float16":
        g, x = Binades(2e3, 6e4), Binades(2e3, 3e4)
    else:
        g, x = Binades(1e5, 1e12), Binades(1e5, 1e12)
    return {"gradOut": g, "self": x, "target": x}


def _tiny(sig: Signature) -> Dict[str, Dist]:
    """gradOut and d both of a magnitude whose product lands in out's subnormal range (inside the
    band r is d / (beta + 1e-6), outside it gradOut alone is tiny only for the smallest dtypes)."""
    a = V.tiny_scale(sig.out_dtype, sig.dtypes.values())
    return {"gradOut": Binades(a / 4, a), "self": Uniform(-a, a), "target": Uniform(-a, a)}


def _specials(sig: Signature) -> Dict[str, Dist]:
    """NaN, +-inf and +-0 in every input. With beta = 0 a NaN d gives 0 (the kernel replaces NaN by 0
    before its comparisons, and the band term never fires), a quirk the suite does not pin
    (docs/operators/SmoothL1LossBackward.md): self and target then draw no value that makes d NaN."""
    d = V.specials_set(sig)
    if beta32(sig.attrs) == 0.0:
        d["self"] = Sprinkle(Uniform(-5.0, 5.0), (np.inf, -np.inf, -0.0, 0.0), 0.2)
        d["target"] = Sprinkle(Uniform(-5.0, 5.0), (-0.0, 0.0), 0.2)
    return d


def _neighbour(v: float, dt: np.dtype, step: int) -> float:
    """The value `step` representable numbers of `dt` away from positive finite `v` (exact in dt)."""
    bits = dtypes.to_bits(np.asarray(v, dtype=dt))
    moved = (bits.astype(np.int64) + step).astype(bits.dtype)
    return float(dtypes.from_bits(moved, dtypes.name_of(dt)).astype(np.float64))


def band_lattice(beta: float, dt_name: str) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
    """(self's values, target's values) for the `band` set in dtype `dt_name`, all exact in it.

    Both draw from a lattice on which beta lies: the multiples of beta/4 in [-2 beta, 2 beta] when
    all are exact in the dtype (a dyadic beta), else beta's power-of-two multiples (0, beta/4,
    beta/2, beta, 2 beta and their negatives: exact in float32 for any float32 beta, and what the
    16-bit dtypes round them to). beta = 0 takes multiples of 1/8 in [-1, 1]. self adds, twice
    weighted, the dtype's values nearest beta on each side (one ulp inside and outside the band;
    beta itself where the dtype holds it; the smallest subnormals and both zeros for beta = 0), and
    target is 0 half of the time, so that self - target hits |d| == beta exactly and one ulp on
    each side of it in every dtype where they exist. (A non-dyadic beta such as float32(0.1) is
    not a float16 or bfloat16 value: there the two nearest values are inside and outside.)"""
    dt = dtypes.dtype_of(dt_name)
    fi = dtypes.finfo(dt)
    exact = lambda v: float(dtypes.round_to(np.float64(v), dt))           # noqa: E731
    finite = math.isfinite(beta) and math.isfinite(exact(beta)) and beta <= fi.max / 4
    unit = beta if finite and beta > 0 else LATTICE_ZERO_BETA
    grid = [k * unit / 4 for k in range(-8, 9)]
    if any(exact(v) != v for v in grid):
        grid = [0.0] + [s * unit * m for s in (1.0, -1.0) for m in (0.25, 0.5, 1.0, 2.0)]
    grid = sorted({exact(v) for v in grid})
    edges = []
    if finite and beta > 0:
        lo = exact(beta)
        if lo > beta:
            lo = _neighbour(lo, dt, -1) if lo > fi.smallest_subnormal else 0.0
        hi = lo if lo == beta else _neighbour(lo, dt, 1) if lo > 0 else fi.smallest_subnormal
        near = {hi, _neighbour(hi, dt, 1), lo} | ({_neighbour(lo, dt, -1)} if lo > 0 else set())
        edges = sorted(v for m in near for v in (m, -m))
    elif finite:
        s = fi.smallest_subnormal
        edges = [-s, -0.0, 0.0, s]
    return tuple(grid + edges + edges), tuple(grid + [0.0] * len(grid))


def _band(sig: Signature) -> Dict[str, Dist]:
    """|self - target| == beta exactly, one ulp inside and outside, and the lattice around them."""
    beta = beta32(sig.attrs)
    s, _ = band_lattice(beta, sig.dtypes["self"])
    _, t = band_lattice(beta, sig.dtypes["target"])
    return {"gradOut": Uniform(-5.0, 5.0), "self": Choice(s), "target": Choice(t)}


class SmoothL1LossBackward(LossBackward):
    name = "SmoothL1LossBackward"
    # The vendor's system tests [cases import]: the kernel SmoothL1LossGradV2 takes (predict, label,
    # dout) and calls beta sigma (ops-nn @e5c3fa93 loss/smooth_l1_loss_grad_v2/op_graph/
    # smooth_l1_loss_grad_v2_proto.h).
    vendor = VendorNames(ttk="smooth_l1_loss_grad_v2", ttk_inputs=("self", "target", "gradOut"),
                         ttk_attrs={"sigma": "beta"}, ttk_defaults={"reduction": "mean", "sigma": 1.0})
    inputs = ("gradOut", "self", "target")
    attributes = (Attr("beta", float, (1.0, 0.1, 0.0), 1.0, _token),)
    value_sets = {"uniform": _uniform, "large": _large, "tiny": _tiny, "specials": _specials,
                  "band": _band}

    tiling_names = ("tile", "single_core")

    def tiling(self, hw, dts) -> Dict[str, int]:
        """The only public per-operator tiling for these chips: ops-nn's Ascend C port for Atlas A2
        (experimental/loss/smooth_l1_loss_grad_v2 @e5c3fa93; op_host/smooth_l1_loss_grad_v2_tiling.cpp
        and op_kernel/smooth_l1_loss_grad_v2.h). The kernel gets the inputs cast to the promoted dtype
        P; the host splits the UB's 32-byte blocks into 10 (float32) or 12 (16-bit) double-buffered
        tiles, caps the tile at ub / (2 * 4 * size + 13) elements, runs one core while N fits one tile
        (`single_core`, the tiling's tileDataNum) and otherwise spreads whole blocks over the cores,
        the first (blocks mod cores) one block more; the kernel caps the tile again at
        (196608 - 512) / (2 * 4 * size + 25) and walks each core's share in tiles of a multiple of 64
        elements (`tile`). The shipped TBE kernel's tiling is the generic broadcast auto-schedule
        (canndev op_tiling/smooth_l1_loss_grad_v2.cc adds only the mean coefficient), not public per
        operator: these boundaries are the best public estimate of it."""
        p = promote(dts.values()) or "float32"
        size = dtypes.dtype_of(p).itemsize
        per = 10 if p == "float32" else 12
        blocks = (hw.ub_bytes // hw.block_bytes) // per // 2
        single = min(blocks * hw.block_bytes // size, hw.ub_bytes // (2 * 4 * size + 13))
        tile = min(single, (196608 - 512) // (2 * 4 * size + 25)) // 64 * 64
        return {"tile": tile, "single_core": single}

    # -- contract -------------------------------------------------------------------------------
    def out_shape(self, shapes: Mapping[str, Optional[Shape]], attrs: Mapping[str, Any]) -> Optional[Shape]:
        if any(s is None for s in shapes.values()):
            return None
        return broadcast(*shapes.values())

    def b_shape(self, shapes: Mapping[str, Shape]) -> Optional[Shape]:
        return broadcast(*shapes.values())

    def beta_accepted(self, beta: float) -> bool:
        """Row 6 of the page: `beta >= 0`, which a NaN fails too."""
        return beta >= 0

    def check(self, sig: Signature) -> Rejection:
        """ops-nn op_api/aclnn_smooth_l1_loss_backward.cpp: CheckParams (NULL, each dtype in the
        product's list, largest input rank, reduction, beta), CheckPromoteType (unreachable once each
        dtype is listed), CheckShapeBroadcast (gradOut with self, that with target, out == B)."""
        bad = self._nulls(sig) or self._unsupported_dtype(sig, [*self.inputs, "out"]) \
            or self._rank(sig, with_out=False) or self._reduction(sig)
        if bad:
            return bad
        beta = beta32(sig.attrs)
        if not self.beta_accepted(beta):
            return INVALID, f"beta {beta!r} is not >= 0"
        mid = broadcast(sig.shapes["gradOut"], sig.shapes["self"])
        if mid is None:
            return INVALID, (f"gradOut {sig.shapes['gradOut']} and self {sig.shapes['self']} "
                                             f"do not broadcast")
        b = broadcast(mid, sig.shapes["target"])
        if b is None:
            return INVALID, (f"broadcast(gradOut, self) {mid} and target "
                                             f"{sig.shapes['target']} do not broadcast")
        if tuple(sig.out_shape) != b:
            return INVALID, f"out shape {tuple(sig.out_shape)} is not the broadcast shape {b}"
        return 0, ""

    def result_dtype(self, dts: Mapping[str, str], out_dtype: str) -> str:
        """The kernel computes on the inputs cast to the promoted dtype P and returns P; the op API
        casts that to out's dtype."""
        return promote(dts.values()) or out_dtype

    # -- numbers --------------------------------------------------------------------------------
    def terms(self, x, attrs, shapes) -> np.ndarray:
        """float64: gradOut * r, divided exactly by numel(self) (self as passed) for mean."""
        r = smooth_r(x["self"] - x["target"], beta32(attrs), EPS)
        out = x["gradOut"] * r
        n = numel(shapes["self"])
        return out / n if attrs["reduction"] == 1 and n else out

    # The reference kernel's steps, each a method a mutant or a variant may override.
    def kernel_beta(self, attrs) -> np.float32:
        return np.float32(beta32(attrs))

    def band_term(self, d: np.ndarray, beta: np.float32) -> np.ndarray:
        """t = d / (beta + 1e-6): a vector division by the broadcast beta + 1e-6 (float32)."""
        return d / (beta + np.float32(EPS))

    def combine(self, d: np.ndarray, t: np.ndarray, beta: np.float32) -> np.ndarray:
        """NaN d -> 0 for the comparisons; (s1 + s2) + s3 with s3 = t inside the band."""
        zero, one = np.float32(0.0), np.float32(1.0)
        x0 = np.where(d == d, d, zero)
        s1 = np.where(x0 <= -beta, -one, zero)
        s2 = np.where(x0 >= beta, one, zero)
        s3 = np.where(np.abs(x0) < beta, t, zero)
        return (s1 + s2) + s3

    def mean_cof(self, shapes) -> np.float32:
        """The dynamic tiling's coefficient: 1.0f / d0 / d1 / ... over self's dims, in float32."""
        cof = np.float32(1.0)
        for n in shapes["self"]:
            cof = np.float32(cof / np.float32(n))
        return cof

    def reference_terms(self, x, attrs, shapes) -> np.ndarray:
        """The TBE kernel (docs/operators/SmoothL1LossBackward.md, "How the vendor kernel computes"):
        x = p - l; t = x / (beta + 1e-6); r = (s1 + s2) + s3; res = r * dout; mean: res * cof."""
        beta = self.kernel_beta(attrs)
        d = ftz(x["self"] - x["target"])
        r = ftz(self.combine(d, ftz(self.band_term(d, beta)), beta))
        res = ftz(r * x["gradOut"])
        if attrs["reduction"] == 1 and numel(shapes["self"]):
            res = ftz(res * self.mean_cof(shapes))
        return res

    def describe(self, x, attrs, out_shape, index) -> str:
        s = float(np.broadcast_to(x["self"], out_shape)[index])
        t = float(np.broadcast_to(x["target"], out_shape)[index])
        beta = beta32(attrs)
        d = s - t
        if d != d:
            where = "NaN: " + ("0 with beta = 0" if beta == 0 else "NaN")
        elif d <= -beta and d >= beta:
            where = "both +-1 terms: r = 0"
        elif d <= -beta:
            where = "d <= -beta: r = -1"
        elif d >= beta:
            where = "d >= beta: r = +1"
        else:
            where = f"inside the band: r = d / (beta + 1e-6) = {d / (beta + EPS)!r}"
        return f"{element_inputs(x, out_shape, index)}; beta={beta!r}, d={d!r} ({where})"

    def torch(self, torch, t, attrs, device):
        """aten's backward op (out= of the broadcast shape B; aten's mean divides by self.numel(), the
        contract's N), adjusted where aten's semantics differ from the contract:
        - inside the band (|d| < beta) aten gives d / beta; the contract (the TBE kernel) divides by
          beta + 1e-6: those elements are recomputed as gradOut * (d / (beta + 1e-6)) * norm;
        - with beta = 0 aten gives -1 at d = 0 (its first branch, d <= -beta); the contract gives 0
          (both +-1 terms fire and cancel): those elements are gradOut * 0 * norm."""
        g, x, y = t["gradOut"], t["self"], t["target"]
        reduction = self.torch_reduction(attrs)
        beta = beta32(attrs)
        if not beta >= 0:
            raise ValueError(f"torch backend: {self.name} beta {beta!r} is not >= 0")
        shape = torch.broadcast_shapes(g.shape, x.shape, y.shape)
        out = torch.empty(shape, dtype=x.dtype, device=device)
        res = torch.ops.aten.smooth_l1_loss_backward.grad_input(g, x, y, reduction, beta, grad_input=out)
        norm = 1.0 / x.numel() if reduction == 1 and x.numel() else 1.0
        d = (x - y).expand(shape)
        gb = g.expand(shape)
        band = d.abs() < beta
        res = torch.where(band, gb * (d / (beta + EPS)) * norm, res)
        if beta == 0:
            res = torch.where(d == 0, gb * 0.0 * norm, res)
        return res

    def examples(self) -> Tuple[Example, ...]:
        """The page's phase-1 table, row by row."""
        sig = self.sig
        reject = {
            **self.null_rows(),
            "NULL before a NaN beta and a bad dtype": (sig(t=None, beta=math.nan, dt="bfloat16",
                                                           product="atlas-training"), NULLPTR),
            "gradOut bfloat16 on atlas-training": (sig(gdt="bfloat16", product="atlas-training"), INVALID),
            "self bfloat16 on atlas-inference": (sig(sdt="bfloat16", odt="float32", product="atlas-inference"), INVALID),
            "target bfloat16 on atlas-inference": (sig(tdt="bfloat16", product="atlas-inference"), INVALID),
            "out bfloat16 on atlas-training": (sig(odt="bfloat16", product="atlas-training"), INVALID),
            **self.rank_rows(),
            **self.reduction_rows(),
            "beta -1": (sig(beta=-1.0), INVALID),
            "beta -1e-30": (sig(beta=-1e-30), INVALID),
            "beta -inf": (sig(beta=-math.inf), INVALID),
            "beta NaN": (sig(beta=math.nan), INVALID),
            "gradOut and self do not broadcast": (sig(g=(2, 3), s=(2, 4), out=(2, 3)), INVALID),
            "target does not broadcast with them": (sig(t=(3, 3), out=(2, 3)), INVALID),
            "out is self's shape, not B": (sig(g=(3,), s=(3,), t=(2, 3), out=(3,)), INVALID),
            "out transposed": (sig(out=(3, 2)), INVALID),
            "0-d B, out (1,)": (sig(g=(), s=(), t=(), out=(1,)), INVALID),
        }
        accept = {
            "bfloat16 on ascend-950 (regbase: the three-dtype list)": sig(dt="bfloat16", product="ascend-950"),
            "beta 0": sig(beta=0.0),
            "beta -0.0": sig(beta=-0.0),
            "beta -1e-46 (a C float -0.0)": sig(beta=-1e-46),
            "beta +inf": sig(beta=math.inf),
            "beta 1e30": sig(beta=1e30, reduction=1),
            "mixed float16 and float32": sig(gdt="float16", tdt="float16", reduction=2),
            "bfloat16 on atlas-a3, float16 out": sig(dt="bfloat16", odt="float16", product="atlas-a3"),
            "float16 on atlas-training": sig(dt="float16", product="atlas-training"),
            "0-d everything": sig(g=(), s=(), t=()),
            "all three broadcast": sig(g=(4, 1, 3), s=(1, 5, 1), t=(5, 3)),
            "8-d": sig(g=R8, s=R8, t=R8),
            "empty": sig(g=(0, 3), s=(0, 3), t=(0, 3)),
        }
        return table(reject, accept)


OP = SmoothL1LossBackward()
