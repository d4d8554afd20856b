"""suite/common/names.py: the name a user probably meant (issue 42, item 14: `--op nllloss` and
`--op aclnnNLLLoss` were refused with no "did you mean NLLLoss")."""
import pytest

from suite import ops
from suite.common.names import meant, unknown_words
from suite.contract import PRODUCTS

OPS = list(ops.OPERATORS)


@pytest.mark.parametrize("given,expected", [
    ("nllloss", "NLLLoss"), ("aclnnNLLLoss", "NLLLoss"), ("ACLNNmselossbackward", "MseLossBackward"),
    ("NLLLos", "NLLLoss"), ("MseLossBackwards", "MseLossBackward"), ("klDivbackward", "KlDivBackward"),
    ("aclnn", None), ("zz", None), ("Losses", None), ("", None),   # "Loss" is 0.8 from L1Loss: suggested
])
def test_an_operator_name_off_by_case_prefix_or_a_letter_is_meant(given, expected):
    assert meant(given, OPS) == expected


def test_a_product_off_by_case_or_separator_is_meant_and_a_far_one_is_not():
    assert meant("Atlas_A2", PRODUCTS) == "atlas-a2"
    assert meant("atlas-nine", PRODUCTS) is None and meant("a2", PRODUCTS) is None


def test_the_unknown_words_carry_their_suggestion_only_where_there_is_one():
    assert unknown_words(["nllloss", "zz", "aclnnKlDiv"], OPS) == \
        "nllloss (did you mean NLLLoss?), zz, aclnnKlDiv (did you mean KlDiv?)"
