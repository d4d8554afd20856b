"""Stage 5, the reports: results.json (its schema, records, reading and writing), merging and diffing
runs (compare), the summary, the HTML page, the journal, known failures and sharding.

May import: suite.common, suite.contract, suite.cases. Not the pytest plugin: suite.plugin imports it.
"""
