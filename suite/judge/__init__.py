"""Stage 3, the verdict: the rules a standard is built from, the tolerance table that names each
operator's standard, and judging a backend's output against the golden (docs/precision.md).

May import: suite.common, suite.contract, suite.golden (a golden's source, read block by block).
"""
