"""Parameter validation: every call the contract rejects gets exactly the documented status."""
from suite.cases.model import Kind
from suite.plugin import check

CASE_KIND = Kind.REJECTION


def test_rejected(case, request):
    check(request, case)
