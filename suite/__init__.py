"""aclnn-conformance: a conformance suite and golden-data generator for aclnn operator kernels."""
from suite.contract import AclnnError, DeviceFault, OpCall, Unsupported

__version__ = "0.1.0"
__all__ = ["AclnnError", "DeviceFault", "OpCall", "Unsupported", "__version__"]
