"""benchmarks/standards_table.py judges one run of each kernel under every standard: its memo makes
each distinct call once and hands back copies, and a cell reads `pass` or the failed cases out of
those run, a correct kernel passing where a defect fails."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from suite.backends.reference import ReferenceBackend
from tests.mutants import harness
from tests.mutants.gallery import GENERIC

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("standards_table", ROOT / "benchmarks" / "standards_table.py")
st = importlib.util.module_from_spec(spec)
spec.loader.exec_module(st)


class Counting:
    name = "counting"
    products = ("atlas-a2",)

    def __init__(self) -> None:
        self.calls = 0

    def run(self, call):
        self.calls += 1
        return np.asarray(call.inputs["x"]) * 2


def _call(x) -> SimpleNamespace:
    return SimpleNamespace(op="Op", attrs={"reduction": 1}, out_dtype=np.float32, out_shape=(2,), outputs=None,
                           inputs={"x": np.asarray(x, np.float32), "w": None})


def test_the_memo_calls_once_per_distinct_call_and_hands_back_copies() -> None:
    be = Counting()
    once = st.Once(be, "memo")
    assert once.products == ("atlas-a2",) and once.name == "memo"
    a, b = once.run(_call([1, 2])), once.run(_call([1, 2]))
    assert be.calls == 1 and np.array_equal(a, b) and a is not b
    once.run(_call([1, 3]))
    assert be.calls == 2
    c = _call([1, 2])
    c.attrs = {"reduction": 2}
    once.run(c)
    assert be.calls == 3


def test_a_defect_fails_where_a_correct_kernel_passes(tmp_path: Path, monkeypatch) -> None:
    cases = [c for c in harness.subset() if "numbers" in harness.checks_of(c)][:60]
    monkeypatch.setattr(harness, "subset", lambda: tuple(cases))
    zero = next(m for m in GENERIC if m.__name__ == "LastElementUnwritten")
    monkeypatch.setattr(st, "kernels", lambda quick: [("reference", ReferenceBackend()), ("unwritten", zero())])
    out = tmp_path / "t.md"
    assert st.main(["--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    names = list(harness.table().standards)
    assert lines[0] == "| kernel | " + " | ".join(f"`{s}`" for s in names) + " |"
    ref, zeros = (line.split(" | ") for line in lines[2:4])
    assert ref[0] == "| reference" and ref[names.index("cann") + 1] == "pass"
    cell = zeros[names.index("strict") + 1]
    failed, ran = (int(v) for v in cell.split("/"))
    assert 0 < failed <= ran == len(cases)
