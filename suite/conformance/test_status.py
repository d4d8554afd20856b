"""Parameter validation: every call the contract rejects gets exactly the documented status."""
from suite.plugin import check

CASE_KIND = "rejection"


def test_rejected(case, request):
    check(request, case)
