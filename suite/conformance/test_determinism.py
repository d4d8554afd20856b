"""Determinism: both operators are documented as deterministic; two runs must be bit-identical."""
CASE_KIND = "determinism"


def test_bit_identical(case, verify):
    verify("determinism", case)
