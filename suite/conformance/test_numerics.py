"""Results: every accepted call's output against its float64 golden, by the operator's standard."""
CASE_KIND = "numbers"


def test_results(case, verify):
    verify("numbers", case)
