"""aclnn-conformance: a conformance suite and golden-data generator for aclnn operator kernels.

The contract's names are read from suite.contract when first used, so that importing the package (as
pytest's entry point, suite/pytest_entry.py, does in every pytest run of the environment) costs
nothing."""
from typing import Any

__version__ = "0.1.0"
__all__ = ["AclnnError", "DeviceFault", "OpCall", "Unsupported", "__version__"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from suite import contract
        return getattr(contract, name)
    raise AttributeError(f"module 'suite' has no attribute {name!r}")
