"""Loads the conformance plugin (suite/plugin.py) when running from a checkout without installing;
an installed package registers it through its pytest11 entry point instead."""
import sys

pytest_plugins = [] if "suite.plugin" in sys.modules else ["suite.plugin"]
