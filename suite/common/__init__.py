"""Shared helpers that know nothing of the flow: dtypes, walking shapes in blocks, memory layouts,
reading YAML and JSON with line numbers, the data folder, file digests, atomic writes.

May import: the standard library, numpy, ml_dtypes, yaml, and suite.contract. Everything else may import it.
"""
