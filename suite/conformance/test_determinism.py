"""Determinism: both operators are documented as deterministic; two runs must be bit-identical."""
from suite.cases.model import Kind
from suite.plugin import check

CASE_KIND = Kind.DETERMINISM


def test_bit_identical(case, request):
    check(request, case)
