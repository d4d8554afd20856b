"""The SoC table (suite/backends/soc.py) held against the names CANN's platform configurations list.

LISTED is written out here from the sources the table cites, not read from the table: a name dropped
from the table, moved to another family, or a prefix rule that swallows a name it should not, fails
here. The emulator's bfloat16 rule is generated from the same table; the last tests prove the
generated C agrees with Python name by name (tests/test_backends_aclnn.py, which owns the emulator
build of its process: two builds cannot share one, the loader resolves libascendcl.so by soname).
"""
from __future__ import annotations

import pytest

from suite.backends import soc
from suite.contract import PRODUCTS

# Every name the issue and the sources list, with the family it must be held to.
LISTED = {
    # Atlas training series: the first-generation 910, no bfloat16; the bare Ascend910B is one of them
    "Ascend910A": "atlas-training", "Ascend910ProA": "atlas-training", "Ascend910ProB": "atlas-training",
    "Ascend910PremiumA": "atlas-training", "Ascend910B": "atlas-training",
    # Atlas A2: 910B1-B4 and their variants
    "Ascend910B1": "atlas-a2", "Ascend910B2": "atlas-a2", "Ascend910B2C": "atlas-a2", "Ascend910B3": "atlas-a2",
    "Ascend910B4": "atlas-a2", "Ascend910B4-1": "atlas-a2",
    # Atlas A3: 910_93xx
    "Ascend910_9391": "atlas-a3", "Ascend910_9392": "atlas-a3", "Ascend910_9381": "atlas-a3",
    "Ascend910_9382": "atlas-a3", "Ascend910_9372": "atlas-a3", "Ascend910_9362": "atlas-a3",
    "Ascend910_9361": "atlas-a3",
    # Atlas inference series: 310P
    "Ascend310P1": "atlas-inference", "Ascend310P2": "atlas-inference", "Ascend310P3": "atlas-inference",
    "Ascend310P4": "atlas-inference", "Ascend310P5": "atlas-inference", "Ascend310P7": "atlas-inference",
    # Ascend 950PR/950DT
    "Ascend950PR_9599": "ascend-950", "Ascend950DT_95A": "ascend-950", "Ascend950PR_9579": "ascend-950",
    # Atlas 200I/500 A2 inference products: 310B
    "Ascend310B1": "atlas-200i-500-a2", "Ascend310B2": "atlas-200i-500-a2", "Ascend310B3": "atlas-200i-500-a2",
    "Ascend310B4": "atlas-200i-500-a2",
}
# Names no rule may claim: prefixes of real names, made-up variants, other vendors' chips, nothing.
UNKNOWN = ["Ascend910", "Ascend910Bx", "Ascend910B_", "Ascend910_93", "Ascend910_9", "Ascend310P", "Ascend310",
           "Ascend610", "ascend910b3", " Ascend910B3", "Ascend910B3 ", "", "NVIDIA H200", "Ascend310B",
           "Ascend310Bx", "Ascend950 PR", "Ascend95"]
# Variants not yet listed that the prefix rules must still place.
VARIANTS = {"Ascend910B5": "atlas-a2", "Ascend910B4-2": "atlas-a2", "Ascend910_9399": "atlas-a3",
            "Ascend310P9": "atlas-inference", "Ascend950DT_9591": "ascend-950", "Ascend310B5": "atlas-200i-500-a2"}


@pytest.mark.parametrize("name,family", sorted(LISTED.items()))
def test_every_listed_name_has_its_family(name, family):
    assert soc.family_of(name) == family


@pytest.mark.parametrize("name", UNKNOWN)
def test_unknown_names_are_errors_that_name_them(name):
    assert soc.match(name) is None
    with pytest.raises(soc.UnknownSoc) as err:
        soc.family_of(name)
    assert repr(name) in str(err.value) and "no product family is guessed" in str(err.value)
    assert "product=" in str(err.value)  # the way out for simulators and emulators


@pytest.mark.parametrize("name,family", sorted(VARIANTS.items()))
def test_prefix_rules_place_unlisted_variants(name, family):
    m = soc.match(name)
    assert m is not None and m.rule.startswith("prefix") and m.family == family


def test_exact_names_come_before_prefix_rules():
    """The bare Ascend910B would be A2 by a plain prefix; the table says first-generation 910."""
    assert soc.match("Ascend910B").rule == "exact"
    assert soc.family_of("Ascend910B") == "atlas-training" and not soc.has_bfloat16("Ascend910B")
    assert soc.match("Ascend950PR_9599").rule == "exact" and soc.match("Ascend950DT_95A").rule == "prefix Ascend950"


def test_the_table_lists_every_name_listed_here_exactly():
    """Both directions: the table's exact names are the listed ones (the few extra listed names of
    950 are reached by its prefix rule), and every family, the 950 and 200I/500 A2 included, is
    reachable by an exact name."""
    exact = {n for n, m in ((n, soc.match(n)) for n in LISTED) if m.rule == "exact"}
    assert set(soc.EXACT) == exact
    assert set(soc.EXACT.values()) == set(PRODUCTS) == set(soc.BFLOAT16)


@pytest.mark.parametrize("name,bf16", [("Ascend910B3", True), ("Ascend910_9391", True), ("Ascend910A", False),
                                       ("Ascend910B", False), ("Ascend310P3", False), ("Ascend950PR_9599", True),
                                       ("Ascend950DT_95A", True), ("Ascend310B1", False), ("Nope", False)])
def test_bfloat16_per_soc(name, bf16):
    assert soc.has_bfloat16(name) is bf16


def test_c_header_holds_every_entry():
    text = soc.c_header()
    for name, family in soc.EXACT.items():
        idx = str(PRODUCTS.index(family))
        assert f'{{"{name}", 0, {idx}}},' in text
    for prefix, digit, family in soc.PREFIXES:
        assert f'{{"{prefix}", {int(digit)},' in text
