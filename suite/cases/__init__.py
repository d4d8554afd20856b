"""Stage 1 of the flow, the cases: the case model, ids, the case-file parsers and their expansion,
shape generators, each product's hardware, and a case's drawn inputs.

May import: suite.common, suite.contract, suite.values, suite.ops. Imported by golden and above.
"""
