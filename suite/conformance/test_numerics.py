"""Results: every accepted call's output against its float64 golden, by the operator's standard."""
from suite.cases.model import Kind
from suite.plugin import check

CASE_KIND = Kind.NUMBERS


def test_results(case, request):
    check(request, case)
