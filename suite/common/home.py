"""Where the suite's data (cases/, golden/) lives: the folder named by $ACLNN_CONFORMANCE_HOME,
else the checkout this package sits in. A kernel team that runs the suite from its own repository
against an installed copy sets the variable (or passes --cases, --golden-dir and --tolerances)."""
from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "ACLNN_CONFORMANCE_HOME"
CHECKOUT = Path(__file__).resolve().parents[2]   # suite/common/home.py -> the checkout


def data_root() -> Path:
    home = os.environ.get(HOME_ENV)
    return Path(home) if home else CHECKOUT


def no_data_folder(overrides: str) -> str:
    """Why the default data folder cannot serve, and how to name another: one line for the plugin
    and the CLI alike (`overrides`: the options that name the folders one by one)."""
    return (f"no case files: {data_root() / 'cases'} is not a folder (set ${HOME_ENV} to the folder "
            f"that holds cases/ and golden/, or pass {overrides})")
