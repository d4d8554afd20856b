"""Whose goldens a command makes or reads: the suite's own, of the case files in cases/ of the data
folder (suite/common/home.py), kept in golden/ beside it; or a user's, of a case file or folder
anywhere else, kept on the user's side. Where a user's go by default, which golden folder a command
may write, and the exact `golden generate` command that remakes a golden folder and no other
(docs/goldens.md, "Your own case files")."""
from __future__ import annotations

import functools
import shlex
from pathlib import Path
from typing import List, Optional, Sequence

from suite.cases.model import Case
from suite.common.home import data_root
from suite.golden.source import GoldenError

GENERATE = "aclnn-conform golden generate"


def own_cases() -> Path:
    return data_root() / "cases"


def own_goldens() -> Path:
    return data_root() / "golden"


def _inside(path: Path, folder: Path) -> bool:
    p, f = Path(path).resolve(), Path(folder).resolve()
    return p == f or f in p.parents


def is_own(path: Path) -> bool:
    """A case file or folder of the suite's own: cases/ of the data folder or inside it."""
    return _inside(path, own_cases())


def is_own_case(case: Case) -> bool:
    """The case comes from a case file of the suite's own (its source is `file:line`)."""
    return _own_file(case.source.rpartition(":")[0], str(own_cases()))


@functools.lru_cache(maxsize=1024)
def _own_file(file: str, cases: str) -> bool:
    """is_own of a case's file, once per file and data folder (a run asks for every test)."""
    return _inside(Path(file), Path(cases))


def computed(case: Case) -> bool:
    """A case whose golden a run computes on demand where the golden folder lacks it: a user's
    (GoldenStore's on_demand). The suite's own cases' goldens are committed (`golden generate`)."""
    return not is_own_case(case)


def users(paths: Sequence[Path]) -> List[Path]:
    """The case paths given that are the user's own (not the suite's)."""
    return [Path(p) for p in paths if not is_own(Path(p))]


def beside(path: Path) -> Path:
    """The golden folder of a user's case file or folder: `<name>.golden` beside it (my.yaml ->
    my.golden, team/cases/ -> team/cases.golden)."""
    path = Path(path)
    return path.parent / f"{path.name if path.is_dir() else path.stem}.golden"


def is_own_goldens(folder: Path) -> bool:
    return Path(folder).resolve() == own_goldens().resolve()


def golden_dir(paths: Sequence[Path], given: Optional[Path]) -> Path:
    """The golden folder of `golden generate`/`check` with these --cases (empty: the suite's) and
    --golden-dir (None: not given): the suite's golden/ for the suite's cases; for a user's case
    path, the folder beside it; several of a user's paths need --golden-dir."""
    if given is not None:
        return Path(given)
    mine = users(paths)
    if not mine:
        return own_goldens()
    if len(mine) > 1:
        raise GoldenError(f"--cases {' '.join(shlex.quote(str(p)) for p in mine)}: several case paths of your "
                          f"own; name the folder for their goldens with --golden-dir")
    return beside(mine[0])


def may_write(paths: Sequence[Path], folder: Path) -> None:
    """`golden generate` into `folder` with these --cases removes every golden there that no case
    of theirs makes: the suite's golden/ is written from all of the suite's cases, never from a
    user's case file nor from part of cases/. Else one GoldenError with the command that is safe."""
    if not is_own_goldens(folder):
        return
    mine = users(paths)
    if mine:
        safe = command(mine, beside(mine[0])) if len(mine) == 1 else command(mine, Path("DIR"))
        raise GoldenError(f"--golden-dir {folder}: the suite's own goldens, which a command given your case "
                          f"file {mine[0]} never writes; run `{safe}`")
    part = [p for p in paths if Path(p).resolve() != own_cases().resolve()]
    if part:
        raise GoldenError(f"--cases {part[0]}: part of the suite's cases, whose goldens are written from "
                          f"all of {own_cases()} (this would remove the others'); run `{GENERATE}`, "
                          f"or give this part a folder of its own with --golden-dir")


def command(paths: Sequence[Path], folder: Path) -> str:
    """The `golden generate` command that remakes the goldens of these case paths (empty: the
    suite's) in `folder` and writes nothing else: the bare command for the suite's golden/ (made
    from all of the suite's cases; a user's never go there), else the paths and the folder."""
    if is_own_goldens(folder):
        return GENERATE
    words = [GENERATE] + [w for p in paths for w in ("--cases", shlex.quote(str(p)))]
    return " ".join(words + ["--golden-dir", shlex.quote(str(folder))])
