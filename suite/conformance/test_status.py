"""Parameter validation: every call the contract rejects gets exactly the documented status."""
CASE_KIND = "rejection"


def test_rejected(case, verify):
    verify("rejection", case)
