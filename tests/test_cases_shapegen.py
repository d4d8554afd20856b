"""Shape generators and the hardware file: what a generated set expands to for each product and
dtype (the vendor's tiling numbers), how case files use it, and one clear error per mistake."""
from __future__ import annotations

from pathlib import Path

import pytest

from suite.cases import hardware
from suite import ops
from suite.cases.load import load_cases
from suite.common.yamlfile import FileError
from tests.core_helpers import marked_line, write

ROOT = Path(__file__).resolve().parents[1]
GEN = """
op: MseLossBackward
shapes:
  edges:
    generate:
      shapes: [[N], [N], [N]]
      N: [tile - 1, tile + 1, cores*tile + 1]
  small:
    - [2x3, 2x3, 2x3]
matrices:
  - dtypes: [float32, float16, bfloat16]
    reductions: [none]
    shapes: [small, edges]
"""


def test_hardware_file_holds_every_product_with_its_numbers() -> None:
    hw = hardware.load_hardware()
    assert set(hw) == {"atlas-training", "atlas-inference", "atlas-a2", "atlas-a3", "ascend-950", "atlas-200i-500-a2"}
    # the 950 and the 310B: TOTAL_UB_SIZE 248 KB for NPU architectures 3510 and 3002 (cases/hardware.yaml)
    assert hw["ascend-950"].ub_bytes == hw["atlas-200i-500-a2"].ub_bytes == 248 * 1024
    assert hw["ascend-950"].cores == (48, 64) and hw["atlas-200i-500-a2"].cores == (1,)
    assert hw["atlas-a2"].cores == (40, 48) and hw["atlas-a2"].ub_bytes == 196608 - 256
    assert hw["atlas-training"].ub_bytes == 256 * 1024
    n = hw["atlas-a2"].names("float16")
    assert n == {"cores": (40, 48), "ub": 196352, "block": 16, "lanes": 128, "reach": 32640}
    assert hw["atlas-a2"].names("float32")["reach"] == 255 * 64


def test_operator_tilings_give_the_vendors_tile_lengths() -> None:
    hw = hardware.load_hardware()
    mse, kl = ops.get("MseLossBackward"), ops.get("KlDivBackward")
    f32, f16 = {"self": "float32", "target": "float32"}, {"self": "float16", "target": "float16"}
    assert mse.tiling(hw["atlas-a2"], f32)["tile"] == 12272          # ceil(196352 / 16)
    assert mse.tiling(hw["atlas-a2"], f16)["tile"] == 8182           # ceil(196352 / 24)
    assert mse.tiling(hw["atlas-inference"], f32)["tile"] == 16384
    assert kl.tiling(hw["atlas-a2"], f32) == {"tile": 8176, "tile_sgrad": 12272}
    assert kl.tiling(hw["atlas-a2"], f16) == {"tile": 8176, "tile_sgrad": 12272}


def test_generated_sets_expand_per_product_dtype_and_core_count(tmp_path: Path) -> None:
    cases, _ = load_cases([write(tmp_path, "g.yaml", GEN)])
    sizes = {}
    for c in cases:
        sizes.setdefault((c.product, c.dtype_token), set()).add(dict(c.shapes)["self"])
    assert {(8181,), (8183,), (40 * 8182 + 1,), (48 * 8182 + 1,)} <= sizes[("atlas-a2", "float16")]
    assert {(12271,), (12273,), (48 * 12272 + 1,)} <= sizes[("atlas-a3", "float32")]
    assert (40 * 12272 + 1,) not in sizes[("atlas-a3", "float32")]          # A3 has 48 cores only
    assert {(16383,), (16385,), (8 * 16384 + 1,), (10 * 16384 + 1,)} <= sizes[("atlas-inference", "float32")]
    # generated shapes make no rejection cases: bfloat16 on atlas-training is simply absent
    assert not [c for c in cases if c.product == "atlas-training" and "bfloat16" in c.id and dict(c.shapes)["self"] != (2, 3)]
    rejected = [c for c in cases if c.expect]
    assert rejected and all(dict(c.shapes)["self"] == (2, 3) for c in rejected)


def test_a_generated_repeat_of_an_earlier_case_is_dropped(tmp_path: Path) -> None:
    text = GEN.replace("tile + 1, cores*tile + 1]", "tile + 1, cores*tile + 1, 6, 3*2]").replace(
        "- [2x3, 2x3, 2x3]", "- [6, 6, 6]")
    cases, dropped = load_cases([write(tmp_path, "g.yaml", text)])
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)) and dropped > 0


def test_tier_key_marks_huge_cases(tmp_path: Path) -> None:
    text = GEN + "  - dtypes: [float16]\n    products: [atlas-a2]\n    reductions: [mean]\n    tier: huge\n" \
                 "    shapes: [[65536x1, 1x32769, 65536x1]]\n"
    cases, _ = load_cases([write(tmp_path, "g.yaml", text)])
    huge = [c for c in cases if c.tier == "huge"]
    assert len(huge) == 1 and huge[0].out_shape == (65536, 32769)
    assert {c.tier for c in cases} == {"default", "huge"}


@pytest.mark.parametrize("bad,field,says", [
    ("      N: [tile - 1, tile + nope]   #<", "shapes.edges.generate", "names 'nope'"),
    ("      N: [tile ** 2]   #<", "shapes.edges.generate.N[0]", "only integers"),
    ("      N: [__import__('os')]   #<", "shapes.edges.generate.N[0]", "only integers"),
    ("      N: [tile -]   #<", "shapes.edges.generate.N[0]", "cannot parse"),
    ("      N: [1.5]   #<", "shapes.edges.generate.N[0]", "not an integer"),
    ("      N: [tile - 100000]   #<", "shapes.edges", "dimensions are >= 0"),
    ("      N: [tile // 0]   #<", "shapes.edges", "divides by zero"),
    ("      tile: [3]   #<", "shapes.edges.generate.tile", "a variable is a new identifier"),
    ("      N: []   #<", "shapes.edges.generate.N", "is empty"),
])
def test_generator_mistakes_name_file_line_and_field(tmp_path: Path, bad: str, field: str, says: str) -> None:
    text = GEN.replace("      N: [tile - 1, tile + 1, cores*tile + 1]", bad)
    path = write(tmp_path, "g.yaml", text)
    with pytest.raises(FileError) as e:
        load_cases([path])
    err = e.value
    assert err.path == str(path) and err.field == field and says in err.message, str(err)
    if field.startswith("shapes.edges.generate."):
        assert err.line == marked_line(text), str(err)


def test_generator_without_shapes_or_with_wrong_templates(tmp_path: Path) -> None:
    text = GEN.replace("      shapes: [[N], [N], [N]]\n", "")
    with pytest.raises(FileError, match="shapes.edges.generate.shapes.*is required"):
        load_cases([write(tmp_path, "a.yaml", text)])
    text = GEN.replace("shapes: [[N], [N], [N]]", "shapes: [[N], [N]]")
    with pytest.raises(FileError, match="lists 3 shapes"):
        load_cases([write(tmp_path, "b.yaml", text)])


def test_hardware_file_mistakes(tmp_path: Path) -> None:
    good = (ROOT / "cases" / "hardware.yaml").read_text()
    for old, new, says in [("cores: [40, 48]", "cores: [0]", "positive integers"),
                           ("ub_bytes: 196352            # 196608", "ub_bytes: -1            # 196608", "positive integer"),
                           ("atlas-a3:", "atlas-a9:", "unknown product"),
                           ("  max_repeat: 255             # [ASC-CONST]", "  max_repeats: 255", "unknown key")]:
        assert old in good, old
        path = write(tmp_path, "hardware.yaml", good.replace(old, new, 1))
        with pytest.raises(FileError, match=says):
            hardware.load_hardware(path)


@pytest.mark.parametrize("extra, says", [
    ("  peak_gbps: 1600\n", "field 'atlas-a2.peak_source': is required with peak_gbps (a figure with its source)"),
    ("  peak_source: a sheet\n", "field 'atlas-a2.peak_gbps': is required with peak_source"),
    ("  peak_gbps: -1\n  peak_source: a sheet\n", "field 'atlas-a2.peak_gbps': a positive number of GB/s, not -1"),
    ("  peak_gbps: true\n  peak_source: a sheet\n", "a positive number of GB/s, not True"),
])
def test_a_peak_bandwidth_needs_its_source(tmp_path: Path, extra: str, says: str) -> None:
    """cases/hardware.yaml's optional peak_gbps (pytest --timing's % of peak) comes with its
    citation, or not at all (docs/timing.md): each mistake is one line."""
    good = (ROOT / "cases" / "hardware.yaml").read_text()
    anchor = "  float32_subnormals: not established\natlas-a3:"
    assert anchor in good
    path = write(tmp_path, "hardware.yaml", good.replace(anchor, "  float32_subnormals: not established\n"
                                                          + extra + "atlas-a3:", 1))
    with pytest.raises(FileError) as e:
        hardware.load_hardware(path)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_cited_peak_is_read() -> None:
    good = (ROOT / "cases" / "hardware.yaml").read_text()
    assert all(h.peak_gbps is None and h.peak_source is None for h in hardware.load_hardware().values())
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = write(Path(d), "hardware.yaml", good.replace(
            "  float32_subnormals: not established\natlas-a3:",
            "  float32_subnormals: not established\n  peak_gbps: 1600\n  peak_source: a sheet\natlas-a3:", 1))
        hw = hardware.load_hardware(path)["atlas-a2"]
    assert (hw.peak_gbps, hw.peak_source) == (1600.0, "a sheet") and type(hw.peak_gbps) is float


def test_hardware_file_is_not_a_case_file() -> None:
    cases, _ = load_cases([ROOT / "cases"])
    assert cases and not any(c.source.startswith(str(ROOT / "cases" / "hardware.yaml")) for c in cases)
