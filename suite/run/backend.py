"""Finding and describing the backend under test (docs/backend-contract.md, "Selecting a backend").

A backend's code is imported only when the user names it: built-in names and entry points are
resolved lazily, and nothing else is ever imported."""
from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Dict, FrozenSet, Iterable, Optional

from suite.contract import PRODUCTS

GROUP = "aclnn_conformance.backends"
BUILTIN = {
    "reference": "suite.backends.reference:ReferenceBackend",
    "torch": "suite.backends.torch_backend:TorchBackend",
    "aclnn": "suite.backends.aclnn:AclnnBackend",
    "simulated": "suite.perf.simulated:SimulatedBackend",
    "simulated-host-clock": "suite.perf.simulated:HostClockBackend",
}


class BackendError(Exception):
    """The named backend cannot be loaded or made; the message says why, for the user."""


def parse_opts(items: Iterable[str]) -> Dict[str, str]:
    opts: Dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BackendError(f"--backend-opt {item!r}: expected KEY=VALUE")
        opts[key.strip()] = value
    return opts


def _import(module_name: str) -> Any:
    """The backend's module, found as `python -m pytest` finds it: on sys.path, else in the folder
    pytest runs in (the `pytest` script, unlike `python -m`, does not put that folder on sys.path,
    so a kernel team's own `mykernels/` beside their checkout was not found). The folder is added
    last, so it never shadows an installed module, and only for the module the user named."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        top, here = module_name.split(".")[0], Path.cwd()
        if e.name != top or str(here) in sys.path or not ((here / top).is_dir() or (here / f"{top}.py").is_file()):
            raise
        sys.path.append(str(here))
        return importlib.import_module(module_name)


def _resolve(spec: str) -> Any:
    target = None
    if ":" not in spec:
        for ep in metadata.entry_points(group=GROUP) if hasattr(metadata, "entry_points") else ():
            if ep.name == spec:
                try:
                    return ep.load()
                except Exception as e:  # a broken plugin is the user's to fix: say what broke
                    raise BackendError(f"backend {spec!r} (entry point {ep.value}) failed to import: "
                                       f"{type(e).__name__}: {e}") from None
        target = BUILTIN.get(spec)
        if target is None:
            known = sorted(set(BUILTIN) | {ep.name for ep in metadata.entry_points(group=GROUP)})
            raise BackendError(f"unknown backend {spec!r}: not a registered name ({', '.join(known)}) "
                               f"and not a package.module:attribute path")
    else:
        target = spec
    module_name, _, attr = target.partition(":")
    try:
        obj: Any = _import(module_name)
    except Exception as e:
        raise BackendError(f"backend {spec!r}: cannot import {module_name}: {type(e).__name__}: {e}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise BackendError(f"backend {spec!r}: {module_name} has no attribute {attr!r}") from None
    return obj


def make_backend(spec: Optional[str], opts: Dict[str, str]) -> Any:
    """A class is instantiated with the options, a factory called with them, an instance taken."""
    obj = _resolve(spec or "reference")
    if inspect.isclass(obj) or (callable(obj) and not hasattr(obj, "run")):
        try:
            backend = obj(**opts)
        except TypeError as e:
            raise BackendError(f"backend {spec or 'reference'!r} does not take these options "
                               f"{opts}: {e}") from None
        except Exception as e:
            raise BackendError(f"backend {spec or 'reference'!r} failed to start: "
                               f"{type(e).__name__}: {e}") from None
    else:
        if opts:
            raise BackendError(f"backend {spec!r} is an instance: it takes no --backend-opt")
        backend = obj
    if not callable(getattr(backend, "run", None)):
        raise BackendError(f"backend {spec!r} has no run(call) method")
    return backend


@dataclass(frozen=True)
class BackendInfo:
    """What the suite reads off a backend: the contract's optional attributes, with defaults."""

    name: str
    capabilities: FrozenSet[str]
    products: tuple
    deterministic: bool
    working_memory: float = 2.0         # what run() allocates, in units of the call's array bytes

    @classmethod
    def of(cls, backend: Any) -> "BackendInfo":
        """Read off a backend that was made; BackendError when it says it cannot run here at all."""
        products = tuple(getattr(backend, "products", None) or PRODUCTS)
        unavailable = getattr(backend, "unavailable", None)     # read after products (which may try)
        if unavailable:
            raise BackendError(f"backend {getattr(backend, 'name', type(backend).__name__)} cannot run here: "
                               f"{unavailable}")
        unknown = [p for p in products if p not in PRODUCTS]
        if unknown:
            raise BackendError(f"backend declares unknown products {unknown} (known: {', '.join(PRODUCTS)})")
        working = getattr(backend, "working_memory", 2.0)
        if isinstance(working, bool) or not isinstance(working, (int, float)) or not 0 <= working < float("inf"):
            raise BackendError(f"backend declares working_memory {working!r}: a non-negative number "
                               f"(bytes run() allocates per byte of the call's inputs and output)")
        return cls(name=str(getattr(backend, "name", type(backend).__name__)),
                   capabilities=frozenset(getattr(backend, "capabilities", ()) or ()),
                   products=products,
                   deterministic=bool(getattr(backend, "deterministic", True)),
                   working_memory=float(working))
