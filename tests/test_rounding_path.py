"""The rounding path (docs/precision.md, "The rounding path"): MseLossBackward's kernel writes its
result in the inputs' dtype and casts it to out's; KlDivBackward's all-FLOAT16 calls keep FLOAT16
through KlDivLossGrad and the sum back to self's shape. A kernel doing exactly that documented
arithmetic passes their mixed and FLOAT16 cases; one rounding through a dtype the contract does
not name fails them."""
from __future__ import annotations

from typing import List

import numpy as np
import pytest

from suite.common import dtypes
from suite import ops
from suite.cases.model import NUMBERS, Case
from suite.ops.base import to_out
from suite.run.runner import build_call
from suite.judge.judging import judge
from tests.mutants import harness
from tests.mutants.kernel import Float32Kernel

MSE, KL = ops.get("MseLossBackward"), ops.get("KlDivBackward")
NAMED = "MseLossBackward-float16-to-float32-atlas-a2-mean-2x3.2x3.2x3-contiguous-uniform"


def test_the_operators_declare_their_paths() -> None:
    f16 = {"gradOutput": "float16", "self": "float16", "target": "float16"}
    assert MSE.result_dtype(f16, "float32") == "float16"
    assert MSE.result_dtype({n: "bfloat16" for n in f16}, "float16") == "bfloat16"
    assert MSE.result_dtype({n: "float32" for n in f16}, "bfloat16") == "float32"
    assert MSE.term_dtype(f16) == "float32"
    assert (KL.result_dtype(f16, "float32"), KL.term_dtype(f16)) == ("float16", "float16")
    for other in ("float32", "bfloat16"):
        mixed = {**f16, "gradOutput": other}
        assert (KL.result_dtype(mixed, "float16"), KL.term_dtype(mixed)) == ("float32", "float32")


def _path_cases() -> List[Case]:
    """MSE's cases whose out dtype differs from the inputs', KL's all-FLOAT16 ones."""
    out = []
    for c in harness.all_cases():
        if c.expect != NUMBERS:
            continue
        if c.op == MSE.name and c.out_dtype != c.dtypes["self"]:
            out.append(c)
        elif c.op == KL.name and all(c.dtypes[n] == "float16" for n in KL.inputs):
            out.append(c)
    return out


class ThroughInputs(Float32Kernel):
    """The documented arithmetic: float32 inside, rounded to the inputs' dtype, cast to out's."""

    def round_out(self, r, call):
        own = np.dtype(call.inputs["self"].dtype)
        return to_out(to_out(r, own), call.out_dtype)


class ThroughTheOther(Float32Kernel):
    """Rounded through the 16-bit dtype that is neither the inputs' nor out's where there is one
    (FLOAT16 inputs -> BFLOAT16 -> FLOAT out, BFLOAT16 -> FLOAT16 -> FLOAT): a path the contract
    does not name."""

    def round_out(self, r, call):
        own, out = dtypes.name_of(call.inputs["self"].dtype), dtypes.name_of(call.out_dtype)
        other = [d for d in ("float16", "bfloat16") if d not in (own, out)]
        if other:
            r = to_out(r, dtypes.dtype_of(other[0]))
        return to_out(r, call.out_dtype)


@pytest.fixture(scope="module")
def cases() -> List[Case]:
    cs = _path_cases()
    assert NAMED in {c.id for c in cs}
    return cs


def test_a_kernel_rounding_through_the_inputs_dtype_passes(cases) -> None:
    mse = [c for c in cases if c.op == MSE.name]
    kl = [c for c in cases if c.op == KL.name]
    assert len(mse) >= 200 and len(kl) >= 200, (len(mse), len(kl))
    o = harness.run_backend(ThroughInputs(), cases, kinds=("numbers",))
    assert o.ran == len(cases) and not o.failures, list(o.failures.values())[:3]


def test_a_kernel_rounding_through_another_dtype_fails(cases) -> None:
    """FLOAT16 or BFLOAT16 inputs with a FLOAT out: the other 16-bit dtype is a path the contract
    does not allow, and most of those cases fail it (the named one among them)."""
    mixed = [c for c in cases if c.op == MSE.name and c.out_dtype == "float32"
             and c.dtypes["self"] in ("float16", "bfloat16")]
    o = harness.run_backend(ThroughTheOther(), mixed, kinds=("numbers",))
    assert o.ran == len(mixed) > 50
    failed = {cid for cid, _ in o.failures}
    assert NAMED in failed
    assert len(failed) >= 0.5 * len(mixed), (len(failed), len(mixed))


def test_judged_in_outs_dtype_the_documented_path_fails() -> None:
    """What the suite did before: judging the named case in out's dtype, as if the kernel rounded
    once, fails a kernel that rounds through the inputs' dtype as the page documents."""
    case = next(c for c in harness.all_cases() if c.id == NAMED)
    data = harness.store().load(case)
    got = ThroughInputs().run(build_call(case, data.inputs))
    std = harness.table().for_op(case.op)
    f32 = np.dtype(np.float32)
    assert not judge(got, data.golden, f32, std, harness.table().slack_ulps).passed
    assert judge(got, data.golden, np.dtype(np.float16), std, harness.table().slack_ulps,
                 through=np.dtype(np.float16)).passed
