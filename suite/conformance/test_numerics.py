"""Results: every accepted call's output against its float64 golden, by the operator's standard."""
from suite.plugin import check

CASE_KIND = "numbers"


def test_results(case, request):
    check(request, case)
