"""Determinism: both operators are documented as deterministic; two runs must be bit-identical."""
from suite.plugin import check

CASE_KIND = "determinism"


def test_bit_identical(case, request):
    check(request, case)
