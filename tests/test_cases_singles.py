"""A single case's extensions (suite/cases/singles.py, suite/cases/parse.py): attributes and the
reduction as lists or spreads, `tier:`, `seed:` (single case and matrix), `standard:` (checked
against the tolerance table in use, and judging the case: suite/run/runner.py), and products given
by the vendor's SoC names (suite/contract.py SOC_ALIASES); each mistake one line naming file, line
and field."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from suite import contract, ops
from suite.backends.reference import ReferenceBackend
from suite.cli import main as cli
from suite.cases.inputs import draw_inputs
from suite.cases.load import load_cases
from suite.cases.model import Kind
from suite.common.yamlfile import FileError
from suite.golden.store import GoldenStore
from suite.judge.table import load_table, standard_names
from suite.run.calls import InProcess
from suite.run.runner import CaseFailure, Runner
from tests.core_helpers import marked_line, write

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "cases" / "tolerances.yaml"
MSE = "op: MseLossBackward\n"
SMOOTH = "op: SmoothL1LossBackward\n"          # attribute beta (float)
NLLB = "op: NLLLossBackward\n"                 # attribute ignoreIndex (int)
KLB = "op: KlDivBackward\n"
CASE = "  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [2x3, 2x3, 2x3]%s}\n"


def _load(tmp_path: Path, text: str, **kw):
    return load_cases([write(tmp_path, "c.yaml", text)], **kw)[0]


def test_an_attribute_and_the_reduction_as_lists_make_their_cross_product(tmp_path: Path) -> None:
    cases = _load(tmp_path, SMOOTH + "cases:\n  - {product: atlas-a2, dtypes: float32, reduction: [none, sum], "
                                      "beta: [0.5, 2], shapes: [2x3, 2x3, 2x3]}\n")
    assert [c.id for c in cases] == [
        f"SmoothL1LossBackward-float32-atlas-a2-{r}-beta{b}-2x3.2x3.2x3-contiguous-uniform"
        for r in ("none", "sum") for b in ("0.5", "2.0")]
    assert [(c.attrs["reduction"], c.attrs["beta"]) for c in cases] == [(0, 0.5), (0, 2.0), (2, 0.5), (2, 2.0)]
    # A raw reduction value stays for a single case, in a list too.
    raw = _load(tmp_path, MSE + "cases:\n  - {product: atlas-a2, dtypes: float32, reduction: [none, 3], "
                                "shapes: [2x3, 2x3, 2x3]}\n")
    assert [c.attrs["reduction"] for c in raw] == [0, 3] and raw[1].expect == 161002


def test_a_spread_is_evenly_spaced_and_an_int_one_drops_repeats(tmp_path: Path) -> None:
    beta = _load(tmp_path, SMOOTH + "cases:\n  - {product: atlas-a2, dtypes: float32, reduction: none, "
                                    "beta: {range: [0.7, 0.9], count: 3}, shapes: [2x3, 2x3, 2x3]}\n")
    assert [c.attrs["beta"] for c in beta] == [0.7, 0.7 + (0.9 - 0.7) * 1 / 2, 0.9]
    ignore = _load(tmp_path, NLLB + "cases:\n  - {product: atlas-a2, dtypes: {inputs: float32, target: int64}, "
                                    "reduction: sum, ignoreIndex: {range: [0, 3], count: 7}, "
                                    "shapes: [scalar, 4x5, 4, 5, scalar]}\n")
    # 0, 0.5, 1, 1.5, 2, 2.5, 3 rounded: 0, 0, 1, 2, 2, 2, 3
    assert [c.attrs["ignoreIndex"] for c in ignore] == [0, 1, 2, 3]
    assert len({c.id for c in ignore}) == 4


def test_tier_on_a_single_case_raises_its_limit(tmp_path: Path) -> None:
    big = "  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [16384x16385, 16384x16385, 16384x16385]%s}\n"
    with pytest.raises(FileError, match="past the default tier's limit"):
        _load(tmp_path, MSE + "cases:\n" + big % "")
    (c,) = _load(tmp_path, MSE + "cases:\n" + big % ", tier: huge")
    assert c.tier == "huge"
    assert _load(tmp_path, MSE + "cases:\n" + CASE % "")[0].tier == "default"


def test_a_seed_gives_the_same_case_data_of_its_own(tmp_path: Path) -> None:
    plain, seeded = (_load(tmp_path, MSE + "cases:\n" + CASE % s)[0] for s in ("", ", seed: 7"))
    assert seeded.id == plain.id + "-seed7" and seeded.datakey == plain.datakey + "-seed7"
    assert seeded.seed != plain.seed
    assert not np.array_equal(draw_inputs(seeded)["self"], draw_inputs(plain)["self"])
    zero = _load(tmp_path, MSE + "cases:\n" + CASE % ", seed: 0")[0]
    assert zero.id.endswith("-seed0") and zero.seed not in (plain.seed, seeded.seed)
    # Both the case and its seeded twin in one file: two cases, no duplicate id.
    both = _load(tmp_path, MSE + "cases:\n" + CASE % "" + CASE % ", seed: 1")
    assert len({c.id for c in both}) == 2
    m = _load(tmp_path, MSE + "matrices:\n  - {products: [atlas-a2], dtypes: [float32], reductions: [none], "
                              "shapes: [[2x3, 2x3, 2x3]], seed: 1}\n")
    assert [c.id for c in m] == [both[1].id] and m[0].datakey == both[1].datakey


def test_a_standard_is_carried_not_in_the_id(tmp_path: Path) -> None:
    plain = _load(tmp_path, MSE + "cases:\n" + CASE % "")[0]
    strict = _load(tmp_path, MSE + "cases:\n" + CASE % ", standard: strict", standards=standard_names(TABLE))[0]
    assert plain.standard is None and strict.standard == "strict" and strict.id == plain.id
    m = _load(tmp_path, MSE + "matrices:\n  - {products: [atlas-a2], dtypes: [float32], reductions: [none], "
                              "shapes: [[2x3, 2x3, 2x3]], standard: torch}\n")
    assert m[0].standard == "torch" and m[0].id == plain.id


class OffByAFewUlps(ReferenceBackend):
    """The reference result with one element 2^-16 (128 float32 ulps) off: within cann's 1e-4, not
    a correct rounding (strict)."""

    def run(self, call):
        out = np.array(super().run(call))
        out.reshape(-1)[0] *= np.float32(1 + 2.0 ** -16)
        return out


def test_a_cases_standard_judges_it_and_the_command_line_comes_first(tmp_path: Path) -> None:
    text = MSE + "cases:\n  - {product: atlas-a2, dtypes: float32, reduction: none, shapes: [8x8, 8x8, 8x8]%s}\n"
    plain = _load(tmp_path, text % "")[0]
    strict = _load(tmp_path, text % ", standard: strict", standards=standard_names(TABLE))[0]
    host = InProcess(OffByAFewUlps())

    def runner(override=None):
        store = GoldenStore(tmp_path / "golden", on_demand=lambda case: True)
        return Runner(host, host.info, store, load_table(TABLE), override)
    assert runner().standard_for(plain).name == "cann" and runner().standard_for(strict).name == "strict"
    assert runner().check(Kind.NUMBERS, plain, "n")["status"] == 0              # cann: passes
    with pytest.raises(CaseFailure, match="fails standard 'strict'"):
        runner().check(Kind.NUMBERS, strict, "n")                                 # its own: fails
    assert runner("cann").check(Kind.NUMBERS, strict, "n")["status"] == 0       # --standard first
    with pytest.raises(CaseFailure, match="fails standard 'strict'"):
        runner("strict").check(Kind.NUMBERS, plain, "n")


def test_soc_names_resolve_to_their_family(tmp_path: Path, monkeypatch) -> None:
    for soc, family in contract.SOC_ALIASES.items():
        text = MSE + "cases:\n  - {product: %s, dtypes: float32, reduction: none, shapes: [2, 2, 2]}\n"
        if family in contract.PRODUCTS and ops.get("MseLossBackward").serves(family):
            (c,) = _load(tmp_path, text % soc.upper())                   # any case
            assert c.product == family and f"-{family}-" in c.id
        elif family in contract.PRODUCTS:                                # resolved, then not served
            with pytest.raises(FileError, match=f"MseLossBackward is not served on {family}"):
                _load(tmp_path, text % soc.upper())
        else:                                                            # a family this suite lacks
            with pytest.raises(FileError, match=f"unknown product '{soc.upper()}', the SoC name of {family}"):
                _load(tmp_path, text % soc.upper())
    assert contract.SOC_ALIASES["ascend910b"] == "atlas-a2" and contract.SOC_ALIASES["ascend950dt"] == "ascend-950"
    assert contract.SOC_ALIASES["ascend310b"] == "atlas-200i-500-a2"
    (kl,) = _load(tmp_path, KLB + "cases:\n  - {product: Ascend310B, dtypes: float32, reduction: none, "
                                  "shapes: [2, 2, 2], expect: 161002}\n")
    assert kl.product == "atlas-200i-500-a2" and kl.expect == 161002     # KlDivBackward serves it: 161002
    m = _load(tmp_path, MSE + "matrices:\n  - {products: [Ascend910B, ascend910_93], dtypes: [float32], "
                              "reductions: [none], shapes: [[2, 2, 2]]}\n")
    assert [c.product for c in m] == ["atlas-a2", "atlas-a3"]
    ex = _load(tmp_path, MSE + "matrices:\n  - {products: [atlas-a2, atlas-a3], dtypes: [float32], reductions: [none], "
                               "shapes: [[2, 2, 2]], exclude: [{product: ASCEND910B}]}\n")
    assert [c.product for c in ex] == ["atlas-a3"]
    monkeypatch.setitem(contract.SOC_ALIASES, "ascend999", "atlas-nonesuch")
    bad = MSE + "matrices:\n  - products:\n      - atlas-a2\n      - Ascend999 #<\n    dtypes: [float32]\n    shapes: [[2, 2, 2]]\n"
    with pytest.raises(FileError) as e:
        _load(tmp_path, bad)
    assert (e.value.line, e.value.field) == (marked_line(bad), "products[1]")
    assert "unknown product 'Ascend999', the SoC name of atlas-nonesuch, a family this suite does not have" in str(e.value)


# name -> (text with the bad line marked, the field, words of the message)
BAD = {
    "empty list": (SMOOTH + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n"
                   "    shapes: [2, 2, 2]\n    beta: [] #<\n", "beta", "is empty"),
    "list of a wrong type": (SMOOTH + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n"
                             "    shapes: [2, 2, 2]\n    beta:\n      - 1.0\n      - big #<\n", "beta[1]", "expected float"),
    "spread count 1": (SMOOTH + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n"
                       "    shapes: [2, 2, 2]\n    beta: {range: [0, 1], count: 1} #<\n", "beta", "count is an integer >= 2"),
    "spread backwards": (SMOOTH + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n"
                         "    shapes: [2, 2, 2]\n    beta: {range: [1, 0], count: 3} #<\n", "beta", "lo < hi"),
    "spread keys": (SMOOTH + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n"
                    "    shapes: [2, 2, 2]\n    beta: {from: 0, to: 1} #<\n", "beta", "{range: [lo, hi], count: n}"),
    "spread of a bool": ("op: KlDivBackward\ncases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n"
                         "    shapes: [2, 2, 2]\n    logTarget: {range: [0, 1], count: 2} #<\n", "logTarget", "expected true or false"),
    "reduction list": (MSE + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction:\n      - none\n"
                       "      - most #<\n    shapes: [2, 2, 2]\n", "reduction[1]", "unknown reduction 'most'"),
    "tier": (MSE + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
             "    tier: giant #<\n", "tier", "unknown tier 'giant'"),
    "seed negative": (MSE + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n    shapes: [2, 2, 2]\n"
                      "    seed: -1 #<\n", "seed", "a seed is an integer >= 0, not -1"),
    "seed bool": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes: [[2, 2, 2]]\n    seed: true #<\n", "seed",
                  "not True"),
    "standard unknown": (MSE + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n"
                         "    shapes: [2, 2, 2]\n    standard: lenient #<\n", "standard", "unknown standard 'lenient'"),
    "standard unknown in a matrix": (MSE + "matrices:\n  - dtypes: [float32]\n    shapes: [[2, 2, 2]]\n"
                                     "    standard: lenient #<\n", "standard", "unknown standard 'lenient'"),
    "standard not text": (MSE + "cases:\n  - product: atlas-a2\n    dtypes: float32\n    reduction: none\n"
                          "    shapes: [2, 2, 2]\n    standard: 3 #<\n", "standard", "a tolerance standard's name"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_mistake_is_one_line_naming_file_line_and_field(tmp_path: Path, name: str, capsys) -> None:
    text, field, words = BAD[name]
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(FileError) as e:
        load_cases([path], standards=standard_names(TABLE))
    assert (e.value.path, e.value.line, e.value.field) == (str(path), marked_line(text), field)
    assert words in e.value.message and "\n" not in str(e.value)
    assert cli.main(["cases", "validate", str(path)]) == 2          # against the suite's own table
    out, err = capsys.readouterr()
    assert out == "" and err == f"error: {e.value}\n"


def test_validate_checks_a_standard_against_the_table_named(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "c.yaml", MSE + "cases:\n" + CASE % ", standard: strict")
    assert cli.main(["cases", "validate", str(path)]) == 0
    mine = write(tmp_path, "t.yaml", TABLE.read_text().replace("  strict:", "  exactly:").replace(": strict\n", ": exactly\n"))
    assert cli.main(["cases", "validate", "--tolerances", str(mine), str(path)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"error: {path}:3: field 'standard': unknown standard 'strict' (known in {mine}: ")
    assert load_cases([path])[0][0].standard == "strict"         # a loader given no table checks none


def test_pytest_refuses_a_standard_its_table_lacks(pytester: pytest.Pytester, tmp_path: Path) -> None:
    path = write(tmp_path, "c.yaml", MSE + "cases:\n" + CASE % ", standard: lenient")
    pytester.makepyfile(test_x="from suite.plugin import check\nCASE_KIND = 'numbers'\n"
                               "def test_results(case, request):\n    check(request, case)\n")
    r = pytester.runpytest("-p", "suite.plugin", f"--cases={path}", f"--tolerances={TABLE}",
                           "-p", "no:cacheprovider", "-p", "no:benchmark")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    err = r.stderr.str()
    assert f"ERROR: {path}:3: field 'standard': unknown standard 'lenient' (known in {TABLE}: " in err
    assert "Traceback" not in err + r.stdout.str() and err.count("ERROR:") == 1
