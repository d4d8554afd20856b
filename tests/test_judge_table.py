"""The tolerance table's loader (`load_table`) and `for_op`: every error branch, each with the bad key
NOT first in its mapping (a loader that reports a mapping's first line would pass a test whose bad
key is first), the message checked whole (file, line, field, words); what it must accept (0 where
0 means something, integers, `operators:` left empty); and the per-operator standard."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, Optional

import ml_dtypes
import numpy as np
import pytest

from suite.ops.base import Golden
from suite.judge.judging import judge
from suite.judge.table import load_table
from suite.common.yamlfile import FileError
from tests.core_helpers import marked_line, write

SECTIONS: Dict[str, str] = {
    "slack": "float32_slack_ulps: 8\n",
    "default": "default: loose\n",
    "operators": "operators:\n  FakeOpA: tight\n  FakeOpB: loose\n",
    "standards": """\
standards:
  loose:
    doc: a share rule
    rule: share
    threshold: {float16: 1.0e-3, bfloat16: 1.0e-3, float32: 1.0e-4}
  tight:
    rule: ulp
    doc: an ulp rule
    max_ulp: {float16: 1, bfloat16: 1, float32: 32}
    share:
      float16: 0.001
      bfloat16: 0.001
      float32: 0.05
    mean_ulp: {float32: 64}
    gross:
      float16: 0.25
      bfloat16: 0.25
      float32: 0.25
  near:
    doc: msprobe's
    rule: abs_rel
    small_value: {float16: 1.0e-3, bfloat16: 1.0e-3, float32: 1.0e-6}
    atol: {float16: 1.0e-5, bfloat16: 1.0e-5, float32: 1.0e-9}
    rtol: {float16: 1.0e-3, bfloat16: 4.0e-3, float32: 1.0e-6}
  close:
    doc: torch's
    rule: allclose
    rtol: {float16: 1.0e-3, bfloat16: 1.6e-2, float32: 1.3e-6}
    atol: {float16: 1.0e-5, bfloat16: 1.0e-5, float32: 1.0e-5}
  exact:
    doc: correctly rounded
    rule: exact
  stat:
    doc: the kit's
    rule: stat_rel_err
    threshold: {float16: 1.0e-3, bfloat16: 8.0e-3, float32: 1.0e-4}
    small_value: {float16: 1.0e-3, bfloat16: 1.0e-3, float32: 1.0e-6}
    small_atol: {float16: 1.0e-5, bfloat16: 1.0e-5, float32: 1.0e-9}
""",
    "aliases": "aliases:\n  nearby: near\n  kit_word: stat\n"}
HEAD = "# a table for the tests\n"
NAMES = "loose, tight, near, close, exact, stat"
SMALL = ("    small_value: {float16: 1.0e-3, bfloat16: 1.0e-3, float32: 1.0e-6}\n"
         "    small_atol: {float16: 1.0e-5, bfloat16: 1.0e-5, float32: 1.0e-9}\n")
KNOWN_RULES = "share, ulp, abs_rel, allclose, mixed, stat_rel_err, cosine, exact"
NUMBER = "expected a finite non-negative number, got "


def table(section: Optional[str] = None, old: str = "", new: str = "") -> str:
    """The table with `old` replaced by `new` in `section`, which is put last (so the key it
    breaks is never the table's first)."""
    order = [s for s in SECTIONS if s != section] + ([section] if section else [])
    parts = []
    for s in order:
        text = SECTIONS[s]
        if s == section:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        parts.append(text)
    return HEAD + "".join(parts)


SHARE_BLOCK = "      bfloat16: 0.001\n      float32: 0.05\n"
GROSS_BLOCK = "      bfloat16: 0.25\n      float32: 0.25\n"
EXACT = "  exact:\n    doc: correctly rounded\n    rule: exact\n"
# name: (section, old, new, field, message, line when no line is marked)
BAD = {
    "unknown top-level key": ("default", "default: loose\n", "default: loose\ndefualt: tight #<\n", "defualt",
                              "unknown key (allowed: aliases, default, float32_slack_ulps, operators, standards)"),
    "standards a list": ("standards", SECTIONS["standards"], "standards: [loose, tight] #<\n", "standards",
                         "is a mapping of standard name to its rule"),
    "standards empty": ("standards", SECTIONS["standards"], "standards: {} #<\n", "standards",
                        "is a mapping of standard name to its rule"),
    "standards missing": ("standards", SECTIONS["standards"], "", "standards",
                          "is a mapping of standard name to its rule", 2),
    "standard's name a number": ("standards", EXACT, "  7: #<\n    rule: exact\n", "standards.7",
                                 "a standard's name is text"),
    "standard not a mapping": ("standards", EXACT, "  exact: exact #<\n", "standards.exact",
                               "is a mapping: its rule, doc and parameters"),
    "standard without a rule": ("standards", "  near:\n    doc: msprobe's\n    rule: abs_rel\n",
                                "  near: #<\n    doc: msprobe's\n", "standards.near", "gives a 'rule'"),
    "unknown rule": ("standards", "    rule: allclose\n", "    rule: allclose_ish #<\n", "standards.close.rule",
                     f"unknown rule 'allclose_ish' (known: {KNOWN_RULES})"),
    "rule a list": ("standards", "    rule: allclose\n", "    rule: [allclose] #<\n", "standards.close.rule",
                    f"unknown rule ['allclose'] (known: {KNOWN_RULES})"),
    "doc not text": ("standards", "    doc: an ulp rule\n", "    doc: [an, ulp, rule] #<\n", "standards.tight.doc",
                     "is text, not ['an', 'ulp', 'rule']"),
    "parameter of another rule": ("standards", "    atol: {float16: 1.0e-5, bfloat16: 1.0e-5, float32: 1.0e-5}\n",
                                  "    atol: {float16: 1.0e-5, bfloat16: 1.0e-5, float32: 1.0e-5}\n"
                                  "    small_value: {float16: 1.0e-3} #<\n", "standards.close.small_value",
                                  "not a parameter of rule allclose"),
    "parameter not a mapping": ("standards", "    mean_ulp: {float32: 64}\n", "    mean_ulp: 64 #<\n",
                                "standards.tight.mean_ulp", "is a mapping of dtype to number"),
    "unknown dtype": ("standards", SHARE_BLOCK, SHARE_BLOCK + "      fp16: 0.001 #<\n", "standards.tight.share.fp16",
                      "unknown dtype (judged dtypes: float32, float16, bfloat16)"),
    "exact dtype": ("standards", SHARE_BLOCK, SHARE_BLOCK + "      int32: 0.001 #<\n", "standards.tight.share.int32",
                    "an exact dtype, compared bit for bit: it has no tolerance (judged dtypes: float32, float16, bfloat16)"),
    **{f"number {label}": ("standards", SHARE_BLOCK, f"      bfloat16: {text} #<\n      float32: 0.05\n",
                           "standards.tight.share.bfloat16", NUMBER + said)
       for label, text, said in [("true", "true", "True"), ("false", "false", "False"), ("a string", "'0.001'", "'0.001'"),
                                 ("negative", "-1.0e-3", "-0.001"), ("-1", "-1", "-1"), ("inf", ".inf", "inf"),
                                 ("NaN", ".nan", "nan"), ("empty", "", "None"), ("a list", "[1]", "[1]")]},
    "gross 0": ("standards", GROSS_BLOCK, "      bfloat16: 0.25\n      float32: 0 #<\n", "standards.tight.gross.float32",
                "the gross-error guard is a finite positive relative error, got 0"),
    "gross 0.0": ("standards", GROSS_BLOCK, "      bfloat16: 0.0 #<\n      float32: 0.25\n",
                  "standards.tight.gross.bfloat16", "the gross-error guard is a finite positive relative error, got 0.0"),
    "gross negative": ("standards", GROSS_BLOCK, "      bfloat16: -0.25 #<\n      float32: 0.25\n",
                       "standards.tight.gross.bfloat16", NUMBER + "-0.25"),
    "an ulp share over 1": ("standards", SHARE_BLOCK, "      bfloat16: 0.001\n      float32: 5 #<\n",
                            "standards.tight.share.float32", "a share of elements is at most 1, got 5"),
    "a share rule's threshold over 1": ("standards", "threshold: {float16: 1.0e-3, bfloat16: 1.0e-3, float32: 1.0e-4}\n",
                                        "threshold: {float16: 1.0e-3, bfloat16: 1.0e-3, float32: 1.5} #<\n",
                                        "standards.loose.threshold.float32", "a share of elements is at most 1, got 1.5"),
    "a dtype missing": ("standards", "    max_ulp: {float16: 1, bfloat16: 1, float32: 32}\n",
                        "    max_ulp: {float16: 1, float32: 32} #<\n", "standards.tight.max_ulp", "no value for bfloat16"),
    "a parameter missing": ("standards", "  close:\n    doc: torch's\n    rule: allclose\n"
                            "    rtol: {float16: 1.0e-3, bfloat16: 1.6e-2, float32: 1.3e-6}\n",
                            "  close: #<\n    doc: torch's\n    rule: allclose\n", "standards.close.rtol",
                            "no value for float32, float16, bfloat16"),
    "default names no standard": ("default", "default: loose\n", "default: lose #<\n", "default",
                                  f"names no standard ({NAMES})"),
    "default a list": ("default", "default: loose\n", "default: [loose] #<\n", "default", f"names no standard ({NAMES})"),
    "default missing": ("default", "default: loose\n", "", "default", f"names no standard ({NAMES})", 2),
    **{f"operators {label}": ("operators", SECTIONS["operators"], f"operators: {text} #<\n", "operators",
                              f"is a mapping of operator to standard name, not {said}")
       for label, text, said in [("0", "0", "0"), ("an empty list", "[]", "[]"), ("an empty string", "''", "''"),
                                 ("false", "false", "False"), ("a standard", "tight", "'tight'")]},
    "operator names no standard": ("operators", "  FakeOpB: loose\n", "  FakeOpB: lose #<\n", "operators.FakeOpB",
                                   "names no standard 'lose'"),
    "operator names a list": ("operators", "  FakeOpB: loose\n", "  FakeOpB: [loose] #<\n", "operators.FakeOpB",
                              "names no standard ['loose']"),
    "operator's name a number": ("operators", "  FakeOpB: loose\n", "  7: loose #<\n", "operators.7",
                                 "an operator's name is text"),
    "alias names no standard": ("aliases", "  nearby: near\n", "  nearby: nera #<\n", "aliases.nearby",
                                f"names no standard 'nera' (standards: {NAMES})"),
    "alias names an alias": ("aliases", "  kit_word: stat\n", "  kit_word: nearby #<\n", "aliases.kit_word",
                             f"names no standard 'nearby' (standards: {NAMES})"),
    "alias a standard's own name": ("aliases", "  nearby: near\n", "  close: near #<\n", "aliases.close",
                                    "is a standard's own name"),
    "aliases a list": ("aliases", SECTIONS["aliases"], "aliases: [near] #<\n", "aliases",
                       "is a mapping of a name to a standard, not ['near']"),
    "alias a number": ("aliases", "  nearby: near\n", "  7: near #<\n", "aliases.7", "an alias is text"),
    "small_value without small_atol for a dtype": (
        "standards", SMALL, SMALL.replace("float32: 1.0e-6}\n", "float32: 1.0e-6} #<\n").replace(", float32: 1.0e-9", ""),
        "standards.stat.small_atol", "small_value and small_atol are given together: no small_atol for float32"),
    "small_atol without small_value": (
        "standards", SMALL, SMALL.split("\n")[1] + " #<\n", "standards.stat.small_value",
        "small_value and small_atol are given together: no small_value for float32"),
    **{f"slack {label}": ("slack", "float32_slack_ulps: 8\n", f"float32_slack_ulps: {text} #<\n", "float32_slack_ulps",
                          f"a finite non-negative number, not {said}")
       for label, text, said in [("-1", "-1", "-1"), ("-0.5", "-0.5", "-0.5"), ("true", "true", "True"),
                                 ("inf", ".inf", "inf"), ("NaN", ".nan", "nan"), ("text", "eight", "'eight'"),
                                 ("empty", "", "None")]},
}


def test_the_base_table_loads(tmp_path: Path) -> None:
    t = load_table(write(tmp_path, "t.yaml", table()))
    assert sorted(t.standards) == sorted(NAMES.split(", ")) and t.default == "loose" and t.slack_ulps == 8.0
    assert t.operators == {"FakeOpA": "tight", "FakeOpB": "loose"} and t.source == str(tmp_path / "t.yaml")
    tight = t.standards["tight"]
    assert (tight.name, tight.rule, tight.doc) == ("tight", "ulp", "an ulp rule")
    assert tight.params == {"max_ulp": {"float16": 1.0, "bfloat16": 1.0, "float32": 32.0},
                            "share": {"float16": 0.001, "bfloat16": 0.001, "float32": 0.05},
                            "mean_ulp": {"float32": 64.0}, "gross": {"float16": 0.25, "bfloat16": 0.25, "float32": 0.25}}
    assert all(type(v) is float for p in tight.params.values() for v in p.values())
    assert t.standards["exact"].params == {} and t.standards["exact"].doc == "correctly rounded"
    assert t.aliases == {"nearby": "near", "kit_word": "stat"}
    assert t.names() == tuple(NAMES.split(", ")) + ("nearby", "kit_word")
    assert t.for_op("FakeOpC", "kit_word") is t.standards["stat"] and t.for_op("FakeOpA") is t.standards["tight"]


def test_an_alias_serves_wherever_a_standard_name_does(tmp_path: Path) -> None:
    """default, operators and --standard (for_op's override) may name an alias; it judges as its standard."""
    text = table().replace("default: loose\n", "default: nearby\n").replace("FakeOpB: loose", "FakeOpB: kit_word")
    t = load_table(write(tmp_path, "t.yaml", text))
    assert t.for_op("FakeOpX") is t.standards["near"] and t.for_op("FakeOpB") is t.standards["stat"]
    assert t.for_op("FakeOpB", "nearby") is t.standards["near"]


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_table_names_file_line_and_field(tmp_path: Path, name: str) -> None:
    section, old, new, field, message, *line = BAD[name]
    text = table(section, old, new)
    path = write(tmp_path, "t.yaml", text)
    want = line[0] if line else marked_line(text)      # (a missing key: the table's first line)
    assert line or want > 2, "the bad key must not be the table's first"
    with pytest.raises(FileError) as info:
        load_table(path)
    e = info.value
    assert (e.path, e.line, e.field, e.message) == (str(path), want, field, message), text
    assert str(e) == f"{path}:{want}: field '{field}': {message}"


@pytest.mark.parametrize("text", ["- default\n- standards\n", "just text\n", "", "# only a comment\n", "7\n"])
def test_a_table_that_is_not_a_mapping(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "t.yaml", text)
    with pytest.raises(FileError) as info:
        load_table(path)
    assert str(info.value) == f"{path}:1: the tolerance table is a mapping"


# -- what it accepts ---------------------------------------------------------------------------
ZEROS = {
    "a share rule's threshold 0": ("threshold: {float16: 1.0e-3, bfloat16: 1.0e-3, float32: 1.0e-4}",
                                   "threshold: {float16: 0, bfloat16: 0.0, float32: 1}", "loose", "threshold",
                                   {"float16": 0.0, "bfloat16": 0.0, "float32": 1.0}),
    "max_ulp 0": ("max_ulp: {float16: 1, bfloat16: 1, float32: 32}", "max_ulp: {float16: 0, bfloat16: 0, float32: 0}",
                  "tight", "max_ulp", {"float16": 0.0, "bfloat16": 0.0, "float32": 0.0}),
    "an ulp share 0 and 1": (SHARE_BLOCK, "      bfloat16: 0\n      float32: 1\n", "tight", "share",
                             {"float16": 0.001, "bfloat16": 0.0, "float32": 1.0}),
    "mean_ulp 0": ("mean_ulp: {float32: 64}", "mean_ulp: {float32: 0}", "tight", "mean_ulp", {"float32": 0.0}),
    "mean_ulp for none": ("mean_ulp: {float32: 64}", "mean_ulp: {}", "tight", "mean_ulp", {}),
    "small_value, atol, rtol 0": ("rtol: {float16: 1.0e-3, bfloat16: 4.0e-3, float32: 1.0e-6}",
                                  "rtol: {float16: 0, bfloat16: 0, float32: 0.0}", "near", "rtol",
                                  {"float16": 0.0, "bfloat16": 0.0, "float32": 0.0}),
    "gross tiny and huge": (GROSS_BLOCK, "      bfloat16: 1.0e-300\n      float32: 1.0e+300\n", "tight", "gross",
                            {"float16": 0.25, "bfloat16": 1e-300, "float32": 1e300}),
    "gross 1": (GROSS_BLOCK, "      bfloat16: 1\n      float32: 1.0\n", "tight", "gross",
                {"float16": 0.25, "bfloat16": 1.0, "float32": 1.0}),
}


@pytest.mark.parametrize("name", ZEROS)
def test_zero_where_it_means_something_is_accepted(tmp_path: Path, name: str) -> None:
    old, new, std, key, want = ZEROS[name]
    t = load_table(write(tmp_path, "t.yaml", table("standards", old, new)))
    assert t.standards[std].params[key] == want


@pytest.mark.parametrize("text,want", [("0", 0.0), ("0.0", 0.0), ("2", 2.0), ("8.5", 8.5), ("1.0e+3", 1000.0)])
def test_the_slack_takes_any_finite_non_negative_number(tmp_path: Path, text: str, want: float) -> None:
    t = load_table(write(tmp_path, "t.yaml", table("slack", "float32_slack_ulps: 8\n", f"float32_slack_ulps: {text}\n")))
    assert t.slack_ulps == want and type(t.slack_ulps) is float


def test_without_slack_the_default_is_8(tmp_path: Path) -> None:
    assert load_table(write(tmp_path, "t.yaml", table("slack", "float32_slack_ulps: 8\n", ""))).slack_ulps == 8.0


@pytest.mark.parametrize("text", ["operators:\n", "operators: {}\n", "operators: ~\n", ""])
def test_no_operators_is_an_empty_mapping(tmp_path: Path, text: str) -> None:
    t = load_table(write(tmp_path, "t.yaml", table("operators", SECTIONS["operators"], text)))
    assert t.operators == {} and t.for_op("FakeOpA").name == "loose"


def test_a_standard_without_doc_has_an_empty_one(tmp_path: Path) -> None:
    t = load_table(write(tmp_path, "t.yaml", table("standards", "    doc: torch's\n", "")))
    assert t.standards["close"].doc == ""


# -- the standard an operator is judged by -----------------------------------------------------
def test_for_op_honours_the_per_operator_standard(tmp_path: Path) -> None:
    t = load_table(write(tmp_path, "t.yaml", table()))
    assert t.for_op("FakeOpA").name == "tight"          # its own
    assert t.for_op("FakeOpB").name == "loose"          # named, the default's name
    assert t.for_op("FakeOpC").name == "loose"          # not named: the default
    assert t.for_op("FakeOpA", "exact").name == "exact" and t.for_op("FakeOpC", "close").name == "close"
    assert t.for_op("FakeOpA", None).name == "tight"
    assert t.for_op("FakeOpA") is t.standards["tight"]
    with pytest.raises(KeyError):
        t.for_op("FakeOpA", "nonesuch")


def test_the_project_table_judges_every_operator_by_its_default() -> None:
    """cases/tolerances.yaml holds the standards docs/precision.md describes (the suite's five and
    the test kit's five) with the kit's and ATK's words as aliases, and names no operator: every one
    is judged by `default: cann`."""
    t = load_table(Path(__file__).resolve().parents[1] / "cases" / "tolerances.yaml")
    assert sorted(t.standards) == ["cann", "close", "cosine", "mixed", "msprobe-abs", "msprobe-ulp", "single_bm",
                                   "stat_rel_err", "strict", "torch"]
    assert t.aliases == {"mix_tolerance": "mixed", "isclose": "close", "binary": "strict", "binary_equal": "strict",
                         "high_precision": "single_bm", "high_performance": "single_bm",
                         "double_benchmark": "mixed"}
    assert t.operators == {} and t.default == "cann" and t.for_op("AnyOperator").name == "cann"


# -- an ulp standard without mean_ulp -----------------------------------------------------------
F32, F16 = np.dtype(np.float32), np.dtype(np.float16)


def _ulp_std(tmp_path: Path, mean: str):
    t = load_table(write(tmp_path, "t.yaml", table("standards", "    mean_ulp: {float32: 64}\n", mean)))
    return t.standards["tight"], t.slack_ulps


@pytest.mark.parametrize("mean", ["", "    mean_ulp: {}\n", "    mean_ulp: {float16: 64}\n"])
def test_an_ulp_standard_without_mean_ulp_judges_by_the_share_alone(tmp_path: Path, mean: str) -> None:
    """float32 without mean_ulp: 1 element in 20 over 32 ulps is a share of 5%, not below 5%, and
    no mean can forgive it (msprobe's float32 escape is optional data)."""
    std, slack = _ulp_std(tmp_path, mean)
    assert std.param("mean_ulp", "float32") is None
    g = np.full(20, 1.5)
    got = g.astype(F32)
    got[4] = np.float32(1.5 + 48 * 2.0 ** -23)             # 48 - 6.75 = 41.25 ulps beyond the window
    v = judge(got, Golden(g, np.abs(g)), F32, std, slack)
    assert (v.passed, v.n_over) == (False, 1)
    assert v.why == "5.0000% of elements are over 32 ulp (limit 0.05)"
    got[4] = np.float32(1.5 + 38 * 2.0 ** -23)             # 31.25 ulps: under max_ulp
    assert judge(got, Golden(g, np.abs(g)), F32, std, slack).passed


def test_mean_ulp_0_is_a_limit_nothing_meets_and_is_said(tmp_path: Path) -> None:
    std, slack = _ulp_std(tmp_path, "    mean_ulp: {float32: 0}\n")
    g = np.full(20, 1.5)
    got = g.astype(F32)
    got[4] = np.float32(1.5 + 48 * 2.0 ** -23)
    v = judge(got, Golden(g, np.abs(g)), F32, std, slack)
    mean = (48 - 6.75) / 20                                # the window: 6.75 ulps either side of 1.5
    assert not v.passed and v.mean_ulp == pytest.approx(mean, rel=1e-12)
    assert v.why == (f"5.0000% of elements are over 32 ulp (limit 0.05) and the mean ulp error {mean:.3g} "
                     f"is not below 0")


def test_a_float16_output_of_an_ulp_standard_with_only_a_float32_mean(tmp_path: Path) -> None:
    std, slack = _ulp_std(tmp_path, "    mean_ulp: {float32: 64}\n")
    g = np.full(1000, 1.5)
    got = g.astype(F16)
    got[9] = np.float16(1.5 + 2 * 2.0 ** -10)              # 2 ulps: 1 in 1000 over 1 ulp, not below 0.1%
    v = judge(got, Golden(g, np.abs(g)), F16, std, slack)
    assert not v.passed and v.why == "0.1000% of elements are over 1 ulp (limit 0.001)"
    assert math.isclose(v.mean_ulp, (2 - 13.5 * 2.0 ** -14) / 1000, rel_tol=1e-12)


def test_the_runner_judges_an_operator_by_its_own_standard(tmp_path: Path) -> None:
    """What the conformance run asks (Runner.standard_for): the operator's standard, the default for
    an operator the table does not name, --standard over both."""
    from types import SimpleNamespace

    from suite.run.runner import Runner
    t = load_table(write(tmp_path, "t.yaml", table()))
    case = lambda op: SimpleNamespace(op=op)  # noqa: E731
    plain = Runner(None, None, None, t)
    assert [plain.standard_for(case(op)).name for op in ("FakeOpA", "FakeOpB", "FakeOpC")] == ["tight", "loose", "loose"]
    forced = Runner(None, None, None, t, "near")
    assert [forced.standard_for(case(op)).name for op in ("FakeOpA", "FakeOpC")] == ["near", "near"]
