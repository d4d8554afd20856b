"""Importing the vendor's own system-test cases (`aclnn-conform cases import`, docs/vendor-cases.md):
ATK JSON (`atk.py`) and TTK kernel CSV (`ttk.py`) files, each vendor case read into one single case
of the case-file format (`spec.py` the values and attributes both formats give, `emit.py` the
YAML mapping), checked by the project's own loader and written one file per operator (`run.py`).
What a vendor case says about an operator (its names, the kernel's input order) is read from the
operator's declaration (suite/ops/records.py `VendorNames`), never written here.

May import: what suite.cases may (suite.common, suite.contract, suite.values, suite.ops) and suite.cases.
"""
