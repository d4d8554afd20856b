"""The CANN toolkit on disk: where the aclnn backend looks for CANN's libraries (library_dirs, the
one search the backend and the doctor share), which toolkit that is and what named it, where CANN
installs by default and records a custom install, its version and set_env.sh (what the doctor
reports)."""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple


RUNTIME_LIB = "libascendcl.so"           # the first library the backend loads (suite/backends/_aclnn_lib.py)
TOOLKIT_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
OPP_VAR = "ASCEND_OPP_PATH"              # <toolkit>/opp, also exported by set_env.sh
# Where CANN installs by default when no variable names it (CANN's install guide, "File Paths":
# root installs under /usr/local/Ascend, others under $HOME/Ascend; 8.0 names the toolkit
# ascend-toolkit/latest, 8.5 names it cann), and the files that record a custom install path
# (Install_Path=...). Sources: hiascend.com/document/detail/en/canncommercial/800/softwareinst/instg/
# instg_0044.html and .../canncommercial/850/softwareinst/instg/instg_0044.html.
DEFAULT_TOOLKITS = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann",
                    "~/Ascend/ascend-toolkit/latest", "~/Ascend/cann")
INSTALL_RECORDS = ("/etc/Ascend/ascend_cann_install.info", "~/Ascend/ascend_cann_install.info")
DEFAULT_SET_ENV = "/usr/local/Ascend/ascend-toolkit/set_env.sh"

# -- the CANN toolkit on disk --------------------------------------------------------------------
def _expand(path: str) -> Path:
    return Path(os.path.expanduser(path))


def recorded_installs() -> List[Tuple[Path, str]]:
    """Install paths CANN's installer recorded (Install_Path=<dir>, the folder holding the toolkit)."""
    found = []
    for record in INSTALL_RECORDS:
        p = _expand(record)
        for key, value in _key_values(p).items():
            if key.lower() == "install_path" and value:
                for sub in ("ascend-toolkit/latest", "cann"):
                    found.append((Path(value) / sub, f"{p} (Install_Path)"))
    return found


@dataclass(frozen=True)
class LibraryDir:
    """One folder the aclnn backend looks for CANN's libraries in: the folder, what named it (as
    messages show it), the toolkit folder it belongs to and the option or variable behind that."""

    dir: str
    why: str                              # "lib_dir", "$ASCEND_HOME_PATH/lib64", ...
    toolkit: str
    source: str                           # "lib_dir", "$ASCEND_HOME_PATH", "$ASCEND_OPP_PATH/.."


def _toolkit_of_lib_dir(lib_dir: str) -> Path:
    """lib_dir with its lib64/ and arch folder stripped: the toolkit it is part of."""
    p = Path(lib_dir).expanduser().resolve()
    if p.name == "lib64":
        p = p.parent
    if p.name.endswith("-linux"):
        p = p.parent
    return p


def library_dirs(lib_dir: Optional[str], environ: Mapping[str, str]) -> List[LibraryDir]:
    """Where the backend looks for CANN's libraries, in its order: lib_dir and lib_dir/lib64 if
    given (taken literally), else <toolkit>/lib64 and <toolkit>/<arch>-linux/lib64 of each
    variable set_env.sh exports ($ASCEND_HOME_PATH, $ASCEND_TOOLKIT_HOME, then $ASCEND_OPP_PATH/..),
    each folder once. The backend loads each library from the first that holds it; the doctor
    names the toolkit of that folder, so the two never disagree about which CANN is used."""
    if lib_dir:
        tk = str(_toolkit_of_lib_dir(lib_dir))
        return [LibraryDir(lib_dir, "lib_dir", tk, "lib_dir"),
                LibraryDir(os.path.join(lib_dir, "lib64"), "lib_dir/lib64", tk, "lib_dir")]
    roots = [(environ[var], f"${var}") for var in TOOLKIT_VARS if environ.get(var)]
    if environ.get(OPP_VAR):
        roots.append((os.path.dirname(os.path.normpath(environ[OPP_VAR])), f"${OPP_VAR}/.."))
    arch = f"{platform.machine()}-linux"
    places: List[LibraryDir] = []
    seen = set()
    for root, source in roots:
        for d, why in ((os.path.join(root, "lib64"), f"{source}/lib64"),
                       (os.path.join(root, arch, "lib64"), f"{source}/{arch}/lib64")):
            if d not in seen:
                seen.add(d)
                places.append(LibraryDir(d, why, str(Path(root)), source))
    return places


def toolkit_of(lib_dir: Optional[str], environ: Mapping[str, str]) -> Dict[str, Any]:
    """The toolkit folder the backend will use, and what named it: the toolkit of the first of
    library_dirs that holds the runtime library (the one the backend loads), else of the first
    of them (none holds it: the first named), else nothing. `installed` lists the default and
    recorded install places that exist, named by nothing in the environment."""
    dirs = library_dirs(lib_dir, environ)
    hit = next((d for d in dirs if os.path.isfile(os.path.join(d.dir, RUNTIME_LIB))), dirs[0] if dirs else None)
    named = None if hit is None else Path(hit.toolkit)
    why = "" if hit is None else hit.source
    places = [(_expand(d), "") for d in DEFAULT_TOOLKITS] + recorded_installs()
    installed = [{"path": str(p), "why": w or "a default install path"} for p, w in places if p.is_dir()]
    return {"path": None if named is None else str(named), "from": why,
            "exists": named is not None and named.is_dir(), "installed": installed,
            "looked_in": [f"{p} ({w})" if w else str(p) for p, w in places],
            "variables": {v: environ.get(v) for v in (*TOOLKIT_VARS, OPP_VAR)}}


def _key_values(path: Path) -> Dict[str, str]:
    """KEY=VALUE lines of a small text file ({} when it is absent or unreadable)."""
    out: Dict[str, str] = {}
    try:
        text = path.read_text(errors="replace")[:65536]
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out


def _bracketed_version(value: str) -> str:
    """version.cfg's `[<inner version>:<CANN version>]` -> the CANN version (the part after ':')."""
    inner = value.strip().strip("[]").split("],[")[0]
    return inner.rpartition(":")[2] or inner


def cann_version(toolkit: Optional[str]) -> Dict[str, Any]:
    """The toolkit's version, read from the files CANN writes at install:
      - <toolkit>/<arch>-linux/ascend_toolkit_install.info, `version=8.0.0` (CANN's install guide,
        "File Paths", 8.0.0: ascend-toolkit/latest/<arch>-linux/, 8.5.0: cann/<arch>-linux/;
        hiascend.com/document/detail/en/canncommercial/{800,850}/softwareinst/instg/instg_0044.html;
        its lines are package_name=, version=, innerversion=, arch=, os=, path=);
      - <toolkit>/version.cfg, `toolkit_running_version=[7.6.0.1.220:8.0.0]` (and runtime_...; the
        CANN version follows the ':'), as toolkits write it at their root (a CANN 6.0.1 one is quoted
        in github.com/Ascend/samples/issues/11: `runtime_running_version=[1.84.15.1.310:6.0.1]`);
      - <toolkit>/runtime/version.info, `Version=...` (the runtime component's own version).
    The first found wins; "unknown" lists every place looked in."""
    if not toolkit:
        return {"version": None, "source": None, "looked_in": []}
    t = Path(toolkit)
    arch = f"{platform.machine()}-linux"
    infos = [t / arch / "ascend_toolkit_install.info", *sorted(t.glob("*-linux/ascend_toolkit_install.info")),
             t / "ascend_toolkit_install.info"]
    candidates: List[Tuple[Path, Callable[[Dict[str, str]], Optional[str]]]] = []
    seen = set()
    for p in infos:
        if p not in seen:
            seen.add(p)
            candidates.append((p, lambda kv: kv.get("version")))
    candidates.append((t / "version.cfg", lambda kv: next(
        (_bracketed_version(kv[k]) for k in ("toolkit_running_version", "runtime_running_version") if kv.get(k)),
        None)))
    candidates.append((t / "runtime" / "version.info", lambda kv: kv.get("Version") or kv.get("version")))
    looked = []
    for path, read in candidates:
        looked.append(str(path))
        if path.is_file():
            value = read(_key_values(path))
            if value:
                return {"version": value, "source": str(path), "looked_in": looked}
    return {"version": None, "source": None, "looked_in": looked}


def set_env_script(toolkit: Optional[str]) -> Optional[Path]:
    """The set_env.sh that exports this toolkit's variables (in it, or in its parent: ascend-toolkit/
    set_env.sh serves ascend-toolkit/latest)."""
    if not toolkit:
        return None
    for d in (Path(toolkit), Path(toolkit).parent):
        if (d / "set_env.sh").is_file():
            return d / "set_env.sh"
    return None
