"""Loads the conformance suite's plugin (suite/plugin/) for a run in this checkout.

Through the plugin manager, not `pytest_plugins`: a run of an editable install from another folder
(`pytest --backend X` there, suite/pytest_entry.py) collects suite/conformance/ below this file,
where pytest refuses `pytest_plugins` in a conftest.py that is not its rootdir's."""


def pytest_addoption(parser, pluginmanager) -> None:
    pluginmanager.import_plugin("suite.plugin")     # nothing when it is loaded already
