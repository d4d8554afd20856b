"""The two seams of running a case, as `typing.Protocol`s: a backend (docs/backend-contract.md) and
the host it runs in (suite/run/host.py's Hosted, suite/run/calls.py's InProcess).

Why protocols and not base classes: a backend is anyone's code, written against the contract page
alone; it must never have to import or subclass anything of the suite. A protocol names the shape
the suite relies on, so a type checker (and the tests) can hold the built-ins and both hosts to it,
while a third-party backend that merely has the shape keeps working.
"""
from __future__ import annotations

from typing import AbstractSet, List, Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from suite.contract import OpCall
from suite.run.backend import BackendInfo
from suite.run.calls import Outcome, Request
from suite.run.output import Log


@runtime_checkable
class Backend(Protocol):
    """What the contract requires of a backend: `run(call)` returns the result, or raises
    AclnnError / Unsupported / DeviceFault. Everything else is optional (BackendHooks)."""

    def run(self, call: OpCall) -> np.ndarray: ...


class BackendHooks(Backend, Protocol):
    """A backend with every optional hook of the contract, typed as the contract describes them. A
    backend may declare any subset; the suite reads each with its default (suite.run.backend.BackendInfo
    and close_backend). Not runtime-checkable on purpose: a missing hook is not an error."""

    name: str                              # default: the class's name
    capabilities: AbstractSet[str]         # "status": it validates as aclnn does
    products: Sequence[str]                # the product families it can stand for (default: all)
    deterministic: bool                    # False opts it out of the determinism tests
    working_memory: float                  # what run() allocates, in units of the call's array bytes

    def close(self) -> None: ...           # once, when the session ends, in the backend's own process


@runtime_checkable
class Host(Protocol):
    """Where the backend runs, as suite/run/runner.py uses it."""

    info: Optional[BackendInfo]            # what the backend declared (None: a Hosted not started yet)
    backend: Optional[Backend]             # the backend object when it lives in this process, else None
    copies: int                            # extra copies of a case's arrays the host holds (memory)

    def run(self, req: Request, repeat: int = 1, deadline: Optional[float] = None) -> List[Outcome]:
        """`repeat` calls of one request; a fault of the backend's process raises host.Fault."""

    def close(self) -> Optional[str]:
        """End the backend; what went wrong comes back as one line (an incident), never raised."""

    def deadline_for(self, elements: int) -> Optional[float]:
        """Seconds a call on this many elements may take (None: no deadline)."""

    def take_output(self) -> Optional[Log]:
        """What the backend printed since the last take (None: its output is not the suite's)."""

    def twin(self) -> Optional["Host"]:
        """The backend's second process, for the determinism tests' last call (None: there is one)."""
