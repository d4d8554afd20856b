"""The `aclnn-conform` command (main) and its `doctor` (split by job: environment, CANN probe, smoke
cases, diagnosis, rendering).

May import: every stage below (suite.common .. suite.report), suite.perf and suite.backends; not suite.plugin.
"""
