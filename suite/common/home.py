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
