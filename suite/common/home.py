"""Where the suite's data (cases/, golden/) lives: the folder named by $ACLNN_CONFORMANCE_HOME, else
the data an installed copy carries (suite/data/, which setup.py fills from the repository's cases/ and
golden/ when it builds a wheel), else the checkout this package sits in (an editable install, or a run
from the checkout). A kernel team may point the variable at its own copy with its own case files (or
pass --cases, --golden-dir and --tolerances)."""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Tuple

HOME_ENV = "ACLNN_CONFORMANCE_HOME"
CHECKOUT = Path(__file__).resolve().parents[2]   # suite/common/home.py -> the checkout
PACKAGED = Path(__file__).resolve().parents[1] / "data"   # suite/data/ of an installed wheel


def data_source() -> Tuple[Path, str]:
    """The data folder and where it comes from, in words (`aclnn-conform doctor` prints both)."""
    home = os.environ.get(HOME_ENV)
    if home:
        return Path(home), f"${HOME_ENV}"
    if _packaged():
        return PACKAGED, "the installed package"
    return CHECKOUT, "this checkout"


@functools.lru_cache(maxsize=1)
def _packaged() -> bool:
    """Whether this copy is an installed one that carries its data: asked once (a run asks for the
    data folder for every test: GoldenStore.entry, where.is_own_case), not a file-system look-up each time."""
    return (PACKAGED / "cases").is_dir()


def data_root() -> Path:
    return data_source()[0]


def no_data_folder(overrides: str) -> str:
    """Why the default data folder cannot serve, and how to name another: one line for the plugin
    and the CLI alike (`overrides`: the options that name the folders one by one)."""
    return (f"no case files: {data_root() / 'cases'} is not a folder (set ${HOME_ENV} to the folder "
            f"that holds cases/ and golden/, or pass {overrides})")
