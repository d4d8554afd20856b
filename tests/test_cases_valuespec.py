"""A case's own values (suite/cases/valuespec.py): `values:` as a mapping of input name to a range,
a constant, `full` or a range with specials sprinkled in, in single cases and in a matrix's list;
its token in ids and datakeys; what is drawn (exact, reproducible bit for bit, chunk by chunk); and
each mistake one line naming file, line and field."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from suite.cli import main as cli
from suite.cases.inputs import draw_inputs
from suite.cases.load import load_cases
from suite.common.yamlfile import FileError
from suite import ops
from suite.values import draw
from suite.cases import valuespec
from tests.core_helpers import marked_line, write

MSE = "op: MseLossBackward\ncases:\n"          # inputs gradOutput, self, target
ONE = "  - {product: atlas-a2, dtypes: %s, reduction: none, shapes: [%s, %s, %s], values: %s}\n"
L1 = "op: L1LossBackward\n"                  # takes integer operands (docs/cases.md)


def _one(tmp_path: Path, values: str, dtype: str = "float32", shape: str = "64x64", op: str = MSE):
    cases, _ = load_cases([write(tmp_path, "v.yaml", op + ONE % (dtype, shape, shape, shape, values))])
    assert len(cases) == 1
    return cases[0]


def test_the_token_is_the_canonical_json_hash_and_ends_the_id(tmp_path: Path) -> None:
    c = _one(tmp_path, "{self: [-1, 1]}", shape="2x3")
    text = '{"self":[-1,1],"set":"uniform"}'            # keys sorted, no spaces, set filled in
    token = "v" + hashlib.sha256(text.encode()).hexdigest()[:10]
    assert c.values == token and c.value_spec.base == "uniform"
    assert c.id == f"MseLossBackward-float32-atlas-a2-none-2x3.2x3.2x3-contiguous-{token}"
    assert c.datakey == f"MseLossBackward-float32-none-2x3.2x3.2x3-{token}"
    # The same spec however it is spelt: the default set named, YAML's words, key order.
    assert _one(tmp_path, "{set: uniform, self: [-1, 1]}", shape="2x3").id == c.id
    a = _one(tmp_path, "{target: .nan, self: -.inf, gradOutput: -0.0}", shape="2x3")
    b = _one(tmp_path, "{gradOutput: '-0', self: '-inf', target: nan}", shape="2x3")
    assert a.values == b.values == "v" + hashlib.sha256(
        b'{"gradOutput":"-0","self":"-inf","set":"uniform","target":"nan"}').hexdigest()[:10]
    floats = _one(tmp_path, "{self: {range: [-100, 100.5], specials: [0, inf], share: 0.5}, target: full}", shape="2x3")
    want = {"self": {"range": [-100, 100.5], "specials": [0, "inf"], "share": 0.5}, "target": "full", "set": "uniform"}
    assert floats.values == valuespec.token_of("uniform", {k: v for k, v in floats.value_spec.inputs}) == (
        "v" + hashlib.sha256(json.dumps(want, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:10])
    assert len({c.values, a.values, floats.values, _one(tmp_path, "{self: [-1, 2]}", shape="2x3").values}) == 4


def test_ranges_constants_and_the_set_of_the_inputs_not_named(tmp_path: Path) -> None:
    c = _one(tmp_path, "{gradOutput: [-100, 100], self: 1.18e-38, set: specials}")
    x = draw_inputs(c)
    g = x["gradOutput"]
    assert g.dtype == np.float32 and np.all((g >= -100) & (g < 100)) and g.min() < -90 and g.max() > 90
    assert np.all(x["self"] == np.float32(1.18e-38))
    assert np.isnan(x["target"]).any() and np.isinf(x["target"]).any()      # target: the specials set
    words = draw_inputs(_one(tmp_path, "{gradOutput: nan, self: -.inf, target: '-0'}", dtype="bfloat16"))
    assert np.isnan(words["gradOutput"].astype(np.float32)).all()
    assert (words["self"].astype(np.float32) == -np.inf).all()
    t = words["target"].astype(np.float32)
    assert (t == 0).all() and np.signbit(t).all()


def test_every_value_is_rounded_once_to_the_dtype(tmp_path: Path) -> None:
    """65504 is float16's largest finite; 3.39e38 (YAML reads it as text) rounds to inf (IEEE);
    a range's values are float16 values."""
    x = draw_inputs(_one(tmp_path, "{gradOutput: 65504, self: 3.39e38, target: [0.1, 0.2]}", dtype="float16"))
    assert (x["gradOutput"] == np.float16(65504)).all() and np.isfinite(x["gradOutput"]).all()
    assert (x["self"] == np.inf).all()
    t = x["target"]
    assert t.dtype == np.float16 and np.all((t >= np.float16(0.1)) & (t <= np.float16(0.2)))


def test_full_spans_the_dtypes_binades_with_both_signs(tmp_path: Path) -> None:
    x = draw_inputs(_one(tmp_path, "{self: full}", dtype="float16", shape="128x128"))["self"]
    mag = np.abs(x.astype(np.float64))
    assert np.isfinite(x).all() and mag.min() >= 2.0 ** -14 and mag.max() <= 65504
    assert (x < 0).any() and (x > 0).any()
    exps = set(np.frexp(mag)[1].reshape(-1).tolist())
    assert len(exps) == 30                 # float16's 30 binades of normals, every one drawn


def test_a_range_with_specials_has_them_even_in_a_small_case(tmp_path: Path) -> None:
    big = draw_inputs(_one(tmp_path, "{self: {range: [-1, 1], specials: [nan, inf, -inf, '-0', 7], share: 0.3}}"))["self"]
    special = ~((big >= -1) & (big < 1)) | ((big == 0) & np.signbit(big))
    assert 0.25 < special.mean() < 0.35
    others = big[special & ~np.isnan(big)]
    assert set(others.tolist()) <= {np.inf, -np.inf, 0.0, 7.0} and np.isnan(big).any()
    one = draw_inputs(_one(tmp_path, "{self: {range: full, specials: [nan], share: 0.001}}", shape="2"))["self"]
    assert np.isnan(one).sum() >= 1


def test_exact_inputs_take_integer_ranges_constants_and_specials(tmp_path: Path) -> None:
    body = ("cases:\n  - {product: atlas-a2, dtypes: {gradOutput: int32, self: float32, target: float32, out: float32},"
            " reduction: none, shapes: [64x64, 64x64, 64x64], values: %s}\n")
    c, _ = load_cases([write(tmp_path, "e.yaml", L1 + body % "{gradOutput: [-3, 3]}")])
    g = draw_inputs(c[0])["gradOutput"]
    assert g.dtype == np.int32 and set(g.reshape(-1).tolist()) == set(range(-3, 4))     # both ends included
    c, _ = load_cases([write(tmp_path, "e.yaml", L1 + body % "{gradOutput: {range: [0, 1], specials: [-7], share: 0.5}}")])
    g = draw_inputs(c[0])["gradOutput"]
    assert set(g.reshape(-1).tolist()) == {-7, 0, 1}
    dist = valuespec.dist(dict(c[0].value_spec.inputs)["gradOutput"], "int32")
    assert np.array_equal(draw.draw(dist, c[0].seed, "gradOutput", (64, 64), np.int32, chunk=5), g)
    c, _ = load_cases([write(tmp_path, "e.yaml", L1 + body % "{gradOutput: full}")])
    g = draw_inputs(c[0])["gradOutput"].astype(np.int64)
    assert g.min() < -(1 << 30) and g.max() > 1 << 30
    c, _ = load_cases([write(tmp_path, "e.yaml", L1 + body % "{gradOutput: 2147483647}")])
    assert (draw_inputs(c[0])["gradOutput"] == 2147483647).all()


def test_draws_are_pinned_and_do_not_depend_on_the_chunk(tmp_path: Path) -> None:
    """Goldens are keyed by these bits: a change to a transform or the token is noticed here."""
    c = _one(tmp_path, "{gradOutput: [-100, 100], self: {range: full, specials: [nan, inf, '-0'], share: 0.25}, "
                       "target: 3}", dtype="float16", shape="16x16")
    x = draw_inputs(c)
    assert c.values == "v57d56febbe"
    assert {n: draw.digest(a)[:16] for n, a in x.items()} == PINNED
    op = ops.get(c.op)
    for n, item in c.value_spec.inputs:
        dist = valuespec.dist(item, "float16")
        whole = draw.draw(dist, c.seed, n, (16, 16), np.float16)
        assert np.array_equal(whole.view(np.uint16), x[n].view(np.uint16))
        assert np.array_equal(draw.draw(dist, c.seed, n, (16, 16), np.float16, chunk=7).view(np.uint16),
                              whole.view(np.uint16))
    assert op.inputs == tuple(x)


PINNED = {"gradOutput": "df02a14b5d01e28c", "self": "05ed90fe66d73458", "target": "78912e9f982471b0"}


def test_a_matrix_takes_specs_beside_value_set_names(tmp_path: Path) -> None:
    path = write(tmp_path, "m.yaml", """
op: MseLossBackward
matrices:
  - products: [atlas-a2, atlas-training]
    dtypes: [float32, bfloat16]
    reductions: [none]
    shapes: [[2x3, 2x3, 2x3]]
    values: [uniform, {self: [-1, 1]}, {self: 0}]
    exclude:
      - {values: %s, dtype: float32}
""" % valuespec.token_of("uniform", {"self": valuespec.Const(0)}))
    cases, dropped = load_cases([path])
    by = {(c.product, c.dtype_token, c.values) for c in cases}
    one = valuespec.token_of("uniform", {"self": valuespec.Range(-1, 1)})
    zero = valuespec.token_of("uniform", {"self": valuespec.Const(0)})
    assert ("atlas-a2", "float32", one) in by and ("atlas-a2", "bfloat16", zero) in by
    assert ("atlas-a2", "float32", zero) not in by                       # excluded by its token
    # bfloat16 on atlas-training is a rejection, made once: in the first value set
    rejections = [c for c in cases if c.expect != 0]
    assert [c.values for c in rejections] == ["uniform"]
    assert all(c.value_spec is None for c in cases if c.values == "uniform")


# name -> (text with the bad line marked, the field, words of the message)
BAD = {
    "unknown input": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                      "    values:\n      weight: [0, 1] #<\n", "values.weight", "unknown input"),
    "lo above hi": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                    "    values:\n      self: [1, -1] #<\n", "values.self", "lo 1 is greater than hi -1"),
    "range not finite": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                         "    values:\n      self: [0, .inf] #<\n", "values.self", "finite numbers"),
    "an integer past float64": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                                "    values:\n      self: 1%s #<\n" % ("0" * 400), "values.self", "past float64's range"),
    "range of three": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                       "    values:\n      self: [0, 1, 2] #<\n", "values.self", "a range is [lo, hi]"),
    "unknown word": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                     "    values:\n      self: infinity #<\n", "values.self", "not 'infinity'"),
    "share zero": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                   "    values:\n      self: {range: [0, 1], specials: [nan], share: 0} #<\n", "values.self",
                   "share is a number in (0, 1], not 0"),
    "share above one": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                        "    values:\n      self: {range: [0, 1], specials: [nan], share: 1.5} #<\n", "values.self",
                        "not 1.5"),
    "no specials": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                    "    values:\n      self: {range: [0, 1], share: 0.5} #<\n", "values.self", "a mixed spec is"),
    "bad special": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                    "    values:\n      self: {range: [0, 1], specials: [nan, big]} #<\n", "values.self", "not 'big'"),
    "unknown set": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                    "    values:\n      self: 1\n      set: gaussian #<\n", "values.set", "unknown value set 'gaussian'"),
    "only a set": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                   "    values: {set: tiny} #<\n", "values", "names no input"),
    "a number for values": (MSE + "  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                            "    values: 3 #<\n", "values", "a value set's name, or a mapping"),
    "exact input given floats": (L1 + "cases:\n  - product: atlas-a2\n    dtypes: {gradOutput: int32, self: float32, "
                                 "target: float32, out: float32}\n    reduction: none\n    shapes: [2, 2, 2]\n"
                                 "    values:\n      gradOutput: [-0.5, 0.5] #<\n", "values.gradOutput",
                                 "int32, an exact dtype: it takes integers, not -0.5"),
    "exact input given a word": (L1 + "cases:\n  - product: atlas-a2\n    dtypes: {gradOutput: int8, self: float32, "
                                 "target: float32, out: float32}\n    reduction: none\n    shapes: [2, 2, 2]\n"
                                 "    values:\n      gradOutput: nan #<\n", "values.gradOutput", "not nan"),
    "exact input outside its dtype": (L1 + "cases:\n  - product: atlas-a2\n    dtypes: {gradOutput: int8, self: float32, "
                                      "target: float32, out: float32}\n    reduction: none\n    shapes: [2, 2, 2]\n"
                                      "    values:\n      gradOutput: {range: [0, 1], specials: [300]} #<\n",
                                      "values.gradOutput", "300 is outside its -128..127"),
    # in a matrix: the spec is read once, checked against every dtype of the matrix
    "matrix exact input given floats": (L1 + "matrices:\n  - products: [atlas-a2]\n    dtypes:\n      - float32\n"
                                        "      - {gradOutput: int32, self: float32, target: float32, out: float32}\n"
                                        "    reductions: [none]\n    shapes: [[2, 2, 2]]\n    values:\n      - uniform\n"
                                        "      - gradOutput: [0, 1.5] #<\n", "values.gradOutput", "takes integers"),
    "matrix unknown value set": (MSE + "  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2, 2, 2]}\n"
                                 "matrices:\n  - dtypes: [float32]\n    shapes: [[2, 2, 2]]\n    values:\n"
                                 "      - {self: 1}\n      - gaussian #<\n", "values[1]", "unknown value set 'gaussian'"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_spec_is_one_line_naming_file_line_and_field(tmp_path: Path, name: str, capsys) -> None:
    text, field, words = BAD[name]
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(FileError) as e:
        load_cases([path])
    assert (e.value.path, e.value.line, e.value.field) == (str(path), marked_line(text), field)
    assert words in e.value.message and "\n" not in str(e.value)
    assert cli.main(["cases", "validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"error: {e.value}\n"
