"""Exact (integer and BOOL) inputs through the core: their draws are reproducible forever (pinned
digests), chunk-invariant, in range and unbiased; class indices, ignore values and out-of-range
values are their own sets; they are stored in goldens bit for bit and the golden of a case with
integer inputs is the same from a cold and a warm cache; the tolerance table wants no entry for
them, and an accepted call with an exact out cannot be a case."""
from __future__ import annotations

from pathlib import Path
from typing import List

import numpy as np
import pytest

from suite.common import dtypes
from suite.common.yamlfile import FileError
from suite.cases.inputs import draw_inputs
from suite.cases.load import load_cases
from suite.golden import build as golden_build
from suite.golden import cache as golden_cache
from suite.golden import source as golden_source
from suite.golden.store import GoldenStore
from suite.ops.base import Signature
from suite.values.draw import Stream, Uniform, digest, draw, fits
from suite.values.exact import ClassIndex, Ignored, Integers, OutOfRange, uniform_ints
from tests.core_helpers import write

EXACT = [np.dtype(d) for d in (np.int64, np.int32, np.int16, np.int8, np.uint8)]
NLL = Signature({"self": (6, 40), "target": (6,)}, {"self": "float32", "target": "int64"}, (6,), "float32",
                {"reduction": 0, "ignoreIndex": -100}, "atlas-a2")


def _ints(dist, dt=np.int64, shape=(5001,), chunk=None, seed=7):
    kw = {} if chunk is None else {"chunk": chunk}
    return draw(dist.bind(NLL), seed, "target", shape, np.dtype(dt), **kw)


DISTS = {"integers": Integers(-5, 5), "class": ClassIndex("self"), "ignored": Ignored(ClassIndex("self"), "ignoreIndex"),
         "outside": OutOfRange("self"), "huge_span": Integers(-(1 << 63), (1 << 62) - 1)}       # span 3 * 2^62


def test_pinned_digests() -> None:
    """The bits of a few draws, written down once: a change of stream, seeding or transform (and
    with it every committed integer input) fails here."""
    got = {name: digest(_ints(d, np.int64, (64, 33), seed=12345))[:16] for name, d in DISTS.items()}
    got["bool"] = digest(draw(Integers(0, 1), 12345, "target", (64, 33), np.dtype(np.bool_)))[:16]
    got["uint8"] = digest(draw(Integers(0, 255), 12345, "target", (64, 33), np.dtype(np.uint8)))[:16]
    assert got == PINNED, got


PINNED = {"integers": "414a98943696af39", "class": "dc318fa8f0a78a91", "ignored": "25e3441b622abdb2",
          "outside": "de284f2ed2950259", "huge_span": "15e65685d1d9025f", "bool": "f5574d9de77232c4",
          "uint8": "f1c6697df364aa3f"}


@pytest.mark.parametrize("name", DISTS)
def test_chunking_never_changes_a_draw(name: str) -> None:
    whole = _ints(DISTS[name])
    for chunk in (1, 7, 1000):
        assert np.array_equal(whole, _ints(DISTS[name], chunk=chunk)), chunk


@pytest.mark.parametrize("dt", EXACT, ids=str)
def test_integers_lie_in_their_range_and_reach_both_ends(dt) -> None:
    lo, hi = dtypes.exact_range(dt.name)
    lo, hi = max(lo, -5), min(hi, 5)
    a = draw(Integers(lo, hi), 3, "self", (4000,), dt)
    assert a.dtype == dt and a.min() == lo and a.max() == hi


def test_full_int64_range_and_bool() -> None:
    a = draw(Integers(-(1 << 63), (1 << 63) - 1), 3, "self", (2000,), np.dtype(np.int64))
    assert (a < 0).any() and (a > 0).any()
    b = draw(Integers(0, 1), 3, "self", (2000,), np.dtype(np.bool_))
    assert b.dtype == np.bool_ and 900 < int(b.sum()) < 1100


def test_small_ranges_are_uniform() -> None:
    """11 values, 110000 draws: each count within 5 standard deviations of 10000 (a plain count
    bound; scipy is not a test dependency)."""
    a = draw(Integers(-5, 5), 11, "self", (110000,), np.dtype(np.int32))
    counts = np.bincount(a + 5, minlength=11)
    sd = (110000 * (1 / 11) * (10 / 11)) ** 0.5
    assert np.all(np.abs(counts - 10000) < 5 * sd), counts


def test_no_modulo_bias_where_the_span_does_not_divide_2_64() -> None:
    """span = 3 * 2^62: a plain `word mod span` puts half the draws below 2^62 (the words past 3 *
    2^62 fold onto [0, 2^62)); the unbiased draw puts a third there, replacing the quarter of the
    words that would bias it from the retry stream."""
    lo = -(1 << 63)
    a = _ints(Integers(lo, lo + 3 * (1 << 62) - 1), shape=(30000,))
    share = float(np.mean(a < lo + (1 << 62)))
    assert abs(share - 1 / 3) < 0.02, share
    words = Stream(7, "target/value").raw(30000)
    plain = words % np.uint64(3 * (1 << 62))
    assert abs(float(np.mean(plain < np.uint64(1 << 62))) - 0.5) < 0.02        # what the test tells apart


def test_class_indices_ignore_values_and_out_of_range() -> None:
    c = _ints(ClassIndex("self"), shape=(3000,))
    assert c.min() == 0 and c.max() == 39                     # C = self's last axis, 40
    assert _ints(ClassIndex("self", axis=0), shape=(300,)).max() == 5
    ig = _ints(Ignored(ClassIndex("self"), "ignoreIndex", share=0.25), shape=(4000,))
    hit = ig == -100
    assert 0.2 < hit.mean() < 0.3 and ig[~hit].min() == 0 and ig[~hit].max() == 39
    assert (_ints(Ignored(ClassIndex("self"), "ignoreIndex", share=0.0), shape=(50,)) == -100).sum() == 1   # at least one
    out = _ints(OutOfRange("self"), shape=(4000,))
    assert not ((out >= 0) & (out < 40)).any() and out.min() == -40 and out.max() == 79
    assert ((out < 0).mean() > 0.4) and ((out >= 40).mean() > 0.4)
    high = draw(OutOfRange("self", low=False).bind(NLL), 7, "target", (500,), np.dtype(np.uint8))
    assert high.min() >= 40 and high.max() <= 79


@pytest.mark.parametrize("dist,dt,says", [
    (Uniform(-5.0, 5.0), np.int32, "exact dtype, but its value set draws floats"),
    (Integers(-1, 3), np.uint8, "outside uint8's 0..255"),
    (Integers(0, 300), np.int8, "outside int8's -128..127"),
    (Integers(0, 2), np.bool_, "outside bool's 0..1"),
    (Ignored(ClassIndex("self"), "ignoreIndex"), np.uint8, "outside uint8's 0..255"),            # ignoreIndex -100
])
def test_a_value_set_that_does_not_fit_its_dtype_is_one_line(dist, dt, says: str) -> None:
    with pytest.raises(ValueError, match=says) as e:
        draw(dist.bind(NLL), 1, "target", (200,), np.dtype(dt))
    assert "\n" not in str(e.value)


def test_binding_needs_what_it_reads() -> None:
    bare = Signature({"self": (6, 0)}, {"self": "float32"}, (6,), "float32", {"reduction": 0}, "atlas-a2")
    with pytest.raises(ValueError, match="C = 0"):
        ClassIndex("self").bind(bare)
    with pytest.raises(ValueError, match="no attribute 'ignoreIndex'"):
        Ignored(ClassIndex("self", axis=0), "ignoreIndex").bind(bare)
    with pytest.raises(ValueError, match="no input 'weight'"):
        ClassIndex("weight").bind(bare)
    for unbound in (ClassIndex("self"), OutOfRange("self"), Ignored(ClassIndex("self"), "ignoreIndex")):
        with pytest.raises(ValueError, match=r"^.*\(.*self.*\) is drawn only once bound to a call$"):
            draw(unbound, 1, "target", (3,), np.dtype(np.int64))


def test_uniform_ints_refuses_a_range_past_int64() -> None:
    with pytest.raises(ValueError, match="not an int64 range"):
        uniform_ints(lambda p: Stream(1, p), 3, 0, 1 << 63)


def test_to_bits_takes_one_byte_dtypes() -> None:
    for dt in (np.int8, np.uint8, np.bool_):
        a = np.array([1, 0, 1], dtype=dt)
        assert dtypes.to_bits(a).dtype == np.uint8 and dtypes.to_bits(a).tolist() == [1, 0, 1]


# -- through the case files and the goldens -----------------------------------------------------
INT_CASES = """
op: L1LossBackward
cases:
  - {product: atlas-a2, dtypes: {gradOutput: int32, self: float32, target: float32}, reduction: none, shapes: [2x3, 2x3, 2x3]}
  - {product: atlas-a2, dtypes: {gradOutput: float16, self: int8, target: uint8, out: float16}, reduction: mean, shapes: [3, 3, 2x3], values: int_ties}
  - {product: atlas-a3, dtypes: {gradOutput: bfloat16, self: bool, target: int64, out: float32}, reduction: none, shapes: [4, 4, 4]}
  - {product: atlas-a2, dtypes: {gradOutput: int16, self: float32, target: float32}, reduction: mean, shapes: [20000, 20000, 20000]}
"""


@pytest.fixture
def int_cases(tmp_path: Path):
    cases = load_cases([write(tmp_path, "l1.yaml", INT_CASES)])[0]
    root = tmp_path / "golden"
    golden_build.generate(cases, root)
    return cases, root


def test_integer_inputs_are_stored_bit_for_bit(int_cases) -> None:
    cases, root = int_cases
    store = GoldenStore(root)
    for case in cases[:3]:
        assert golden_source.is_stored(case)
        stored = store.inputs(case)
        drawn = draw_inputs(case)
        for n, a in stored.items():
            assert a.dtype == dtypes.dtype_of(case.dtypes[n]), (case.id, n, a.dtype)
            assert np.array_equal(dtypes.to_bits(a), dtypes.to_bits(drawn[n]))
    assert golden_build.check(cases, root) == []


def test_cold_and_warm_cache_give_the_same_golden(int_cases, tmp_path: Path) -> None:
    cases, root = int_cases
    large = cases[3]
    assert not golden_source.is_stored(large)
    cache = golden_cache.GoldenCache(tmp_path / "cache")
    cold = GoldenStore(root, cache=cache).load(large)
    assert list((tmp_path / "cache").rglob("meta.json")), "the cold load filled the cache"
    warm = GoldenStore(root, cache=cache).load(large)
    none = GoldenStore(root, cache=golden_cache.GoldenCache(None)).load(large)
    for d in (warm, none):
        assert np.array_equal(dtypes.to_bits(d.golden.out), dtypes.to_bits(cold.golden.out))
    assert cold.inputs["gradOutput"].dtype == np.int16


def test_the_golden_reads_an_integer_as_its_value_cast_to_P() -> None:
    """INT32 2049 next to FLOAT16 operands is 2048 to the kernel (Cast to FLOAT16, round to even):
    the golden's gradOutput * sign is 2048, not 2049."""
    from suite import ops
    op = ops.get("L1LossBackward")
    x = {"gradOutput": np.array([2049, -2051], dtype=np.int32), "self": np.array([1, -1], dtype=np.float16),
         "target": np.zeros(2, dtype=np.float16)}
    assert op.golden(x, {"reduction": 0}).out.tolist() == [2048.0, 2052.0]


@pytest.mark.parametrize("text, line", [
    ("op: L1LossBackward\ncases:\n  - {product: atlas-a2, dtypes: {inputs: float32, out: int32}, "
     "reduction: none, shapes: [2, 2, 2]}\n", 3),
    ("op: L1LossBackward\nmatrices:\n  - products: [atlas-a2]\n    reductions: [none]\n"
     "    dtypes: [{inputs: float32, out: int32}]\n    shapes: [[2, 2, 2]]\n", 5),
], ids=["case", "matrix"])
def test_an_exact_out_on_an_accepted_call_is_refused_in_one_line(tmp_path: Path, text: str, line: int) -> None:
    from suite import ops
    from suite.ops.base import Operator
    cases = load_cases([write(tmp_path, "a.yaml", text)])[0]
    assert cases[0].expect == 161002                                  # the contract rejects it: a fine case
    op = ops.get("L1LossBackward")

    class Accepting(type(op)):                                         # an operator that would accept it
        def check(self, sig):
            return 0, ""
    ops.OPERATORS["L1LossBackward"] = Accepting()
    try:
        with pytest.raises(FileError) as e:
            load_cases([write(tmp_path, "b.yaml", text)])
    finally:
        ops.OPERATORS["L1LossBackward"] = op
    assert str(e.value) == (f"{tmp_path / 'b.yaml'}:{line}: field 'dtypes': out dtype int32 is exact (integer or BOOL): "
                            "an accepted call's result in it cannot be judged "
                            f"(judged dtypes: {', '.join(dtypes.JUDGED)})")


def test_every_exact_dtype_has_its_documented_acl_enum() -> None:
    """aclDataType values of hicann/runtime docs/api_docs/aclDataType.md (docs/aclnn-status.md):
    the aclnn backend tags every exact input with its own, never a float's."""
    from suite.backends import _aclnn_marshal as marshal
    want = {"int8": 2, "int32": 3, "uint8": 4, "int16": 6, "int64": 9, "bool": 12}
    assert {n: marshal.acl_dtype(dt) for n, dt in dtypes.EXACT.items()} == want


@pytest.mark.parametrize("name", sorted(DISTS))
def test_the_bounds_of_an_exact_distribution_are_what_it_draws(name: str) -> None:
    """bounds() is what `fits` checks a case by before anything is drawn: the extremes a large draw
    reaches (every distribution here reaches both ends in 20000 draws of a span of at most 120)."""
    dist = DISTS[name].bind(NLL)
    lo, hi = dist.bounds()
    if name == "huge_span":
        assert (lo, hi) == (-(1 << 63), (1 << 62) - 1)
        return
    got = _ints(DISTS[name], shape=(20000,))
    assert (int(got.min()), int(got.max())) == (lo, hi)
    low = OutOfRange("self", high=False).bind(NLL)
    assert low.bounds() == (-40, -1) and OutOfRange("self", low=False).bind(NLL).bounds() == (40, 79)


@pytest.mark.parametrize("dist,dt,says", [
    (Uniform(-5.0, 5.0), np.int32, "exact dtype, but its value set draws floats"),
    (Integers(-1, 3), np.uint8, "outside uint8's 0..255"),
    (Ignored(ClassIndex("self"), "ignoreIndex"), np.uint8, "outside uint8's 0..255"),
    (ClassIndex("self"), np.bool_, "draws 0..39, outside bool's 0..1"),
])
def test_fits_refuses_before_a_draw_what_the_draw_refuses(dist, dt, says: str) -> None:
    with pytest.raises(ValueError, match=says) as before:
        fits(dist.bind(NLL), np.dtype(dt), "target")
    with pytest.raises(ValueError) as drawn:
        draw(dist.bind(NLL), 1, "target", (2000,), np.dtype(dt))
    assert "\n" not in str(before.value) and (str(before.value) == str(drawn.value) or "floats" in says)
    fits(Integers(0, 255).bind(NLL), np.dtype(np.uint8), "target")      # the edges fit
    fits(Uniform(-5.0, 5.0), np.dtype(np.float16), "target")
