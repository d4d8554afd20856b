"""The conformance suite's pytest plugin lives in suite/plugin.py; this file only loads it."""
pytest_plugins = ["suite.plugin"]
