"""Stage 5, the reports: results.json (its schema, records, reading and writing), merging and diffing
runs (compare), the summary, the HTML page, the journal, known failures and sharding.

May import: suite.common, suite.contract, suite.cases, suite.ops (the operator registry: report.html
names an operator's reduction codes and attributes as its case ids do), suite.perf (the timing
record and the performance gate). Not the pytest plugin: suite.plugin imports it.
"""
