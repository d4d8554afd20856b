"""Stage 3, the verdict: the rules a standard is built from, the tolerance table that names each
operator's standard, judging a backend's output against the golden, and the double benchmark's
metrics against a baseline's output (benchmark; docs/precision.md).

May import: suite.common, suite.contract, suite.golden (a golden's source, read block by block).
"""
