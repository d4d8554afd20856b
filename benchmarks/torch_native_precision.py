"""What compute=native costs: the torch backend in float16/bfloat16 against a float64 golden.

Runs each case with compute=widen and compute=native and prints, per output dtype, the largest
error in ulps of the output dtype, the share of elements beyond 1 ulp, and the spurious overflows
(inf where the golden rounds to a finite value) and flushes (0 where the golden rounds to nonzero).

    PYTHONPATH=. python benchmarks/torch_native_precision.py [--device cpu|cuda|npu]
"""
from __future__ import annotations

import argparse

import ml_dtypes
import numpy as np

from suite.backends.torch_backend import TorchBackend
from suite.contract import OpCall

F16, BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def golden(op: str, g, x, t, reduction: int, log_target: bool = False) -> tuple:
    """float64 formulas of docs/operators/MseLossBackward.md and KlDivBackward.md:
    (out, sum of |terms|)."""
    g, x, t = (np.asarray(a).astype(np.float64) for a in (g, x, t))
    if op == "MseLossBackward":
        out = g * (x - t) * 2.0 / (x.size if reduction == 1 else 1)
        out = np.broadcast_to(out, np.broadcast_shapes(g.shape, x.shape, t.shape))
        return out, np.abs(out)
    shape = np.broadcast_shapes(x.shape, t.shape)
    terms = -(np.exp(t) if log_target else t) * g
    terms = np.broadcast_to(terms, shape) / {1: np.prod(shape), 3: shape[0]}.get(reduction, 1)
    lead = len(shape) - x.ndim
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(x.shape)
                                      if n == 1 and shape[lead + i] != 1)
    return terms.sum(axis=axes).reshape(x.shape), np.abs(terms).sum(axis=axes).reshape(x.shape)


def ulp(values: np.ndarray, dtype) -> np.ndarray:
    info = ml_dtypes.finfo(dtype)
    with np.errstate(divide="ignore"):
        exp = np.floor(np.log2(np.abs(values)))
    exp = np.maximum(np.nan_to_num(exp, neginf=info.minexp), info.minexp)
    return np.ldexp(1.0, (exp - info.nmant).astype(np.int64))


def measure(out: np.ndarray, gold: np.ndarray, mag: np.ndarray) -> tuple:
    """(max ulp error, share > 1 ulp, max error in ulps of sum|terms|, spurious inf, spurious zero)
    over goldens that round to a finite value."""
    info = ml_dtypes.finfo(out.dtype)
    limit = float(info.max) + 2.0 ** (info.maxexp - 2 - info.nmant)
    got = out.astype(np.float64)
    fin = np.isfinite(gold) & (np.abs(gold) < limit)
    spurious_inf = int((np.isinf(got) & fin).sum())
    tiny = float(ml_dtypes.finfo(out.dtype).smallest_subnormal) / 2
    spurious_zero = int(((got == 0) & fin & (np.abs(gold) > tiny)).sum())
    ok = fin & np.isfinite(got)
    abs_err = np.abs(got[ok] - gold[ok])
    err = abs_err / ulp(gold[ok], out.dtype)
    cond = abs_err / ulp(mag[ok], out.dtype)    # condition-aware: the sum's own scale
    return (float(err.max(initial=0.0)), float((err > 1).mean()) if err.size else 0.0,
            float(cond.max(initial=0.0)), spurious_inf, spurious_zero)


def cases(rng: np.random.Generator, dtype):
    """(label, op, shapes (grad, self, target), value range, reduction, logTarget)."""
    u = lambda s, lo=-5.0, hi=5.0: rng.uniform(lo, hi, s).astype(dtype)  # noqa: E731
    big = 2e2 if dtype == F16 else 1e9      # near float16's range / far beyond it for bfloat16
    yield "mse none U[-5,5] 64x1024", "MseLossBackward", [u((64, 1024)) for _ in range(3)], 0, False
    yield "mse mean U[-5,5] N=3000", "MseLossBackward", [u((30, 100)) for _ in range(3)], 1, False
    yield "mse mean U[-5,5] N=262144", "MseLossBackward", [u((512, 512)) for _ in range(3)], 1, False
    yield "mse mean self (1000,1) bcast", "MseLossBackward", \
        [u((1000, 64)), u((1000, 1)), u((1000, 64))], 1, False
    yield f"mse sum U[-{big:g},{big:g}]", "MseLossBackward", \
        [u((64, 256), -big, big), u((64, 256), -big, big), u((64, 256), -big, big)], 2, False
    yield "kl none U[-5,5] 64x1024", "KlDivBackward", [u((64, 1024)) for _ in range(3)], 0, False
    yield "kl mean U[-5,5] N=262144", "KlDivBackward", [u((512, 512)) for _ in range(3)], 1, False
    yield "kl batchmean self (1,256) B=(512,256)", "KlDivBackward", \
        [u((512, 256)), u((1, 256)), u((512, 256), 0, 1)], 3, False
    yield "kl batchmean logT U[-5,5] 256x256", "KlDivBackward", [u((256, 256)) for _ in range(3)], 3, True
    yield "kl sum logT self (1,64) t U[0,11]", "KlDivBackward", \
        [u((64, 64), 0, 1), u((1, 64)), u((64, 64), 0, 11)], 2, True
    yield f"kl none |t|,|g| <= {big:g}", "KlDivBackward", \
        [u((64, 256), -big, big), u((64, 256)), u((64, 256), -big, big)], 0, False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    backends = {c: TorchBackend(device=args.device, compute=c) for c in ("widen", "native")}
    header = ("case", "dtype", "widen max ulp", "native max ulp", "native >1 ulp",
              "native max ulp of Σ|terms|", "native spurious inf", "native spurious 0")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for dtype in (F16, BF16):
        rng = np.random.default_rng(2024)
        for label, op, (g, x, t), reduction, log_target in cases(rng, dtype):
            attrs = {"reduction": reduction, **({"logTarget": log_target} if op == "KlDivBackward" else {})}
            gold, mag = golden(op, g, x, t, reduction, log_target)
            call = OpCall(op, {"gradOutput": g, "self": x, "target": t}, attrs, gold.shape, dtype, "atlas-a2")
            w = measure(backends["widen"].run(call), gold, mag)
            n = measure(backends["native"].run(call), gold, mag)
            print(f"| {label} | {dtype.name} | {w[0]:.2f} | {n[0]:.2f} | {100 * n[1]:.2f}% | "
                  f"{n[2]:.2f} | {n[3]} | {n[4]} |")


if __name__ == "__main__":
    main()
