"""The built-in `torch` backend: PyTorch as an independent implementation of the operators.

Each operator module says how PyTorch computes it (`Operator.torch`: an aten op, or autograd of
the forward loss, as PyTorch itself produces the gradient); this module converts the arrays,
picks the compute dtype and the device. See docs/torch-backend.md for options, devices and
precision.

PyTorch does not validate parameters as aclnn does, so this backend claims no "status"
capability: the suite skips rejection cases for it.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import ml_dtypes
import numpy as np

from suite.common import dtypes
from suite import ops
from suite.backends import soc
from suite.contract import PRODUCTS, OpCall, Unsupported

DEVICES = ("cpu", "cuda", "npu")
COMPUTES = ("widen", "native")
FLUSH_FLOOR = 384 << 20           # bytes of the cache flush at least (2 x 192 MiB)
_DTYPE_NAMES = ("float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")


def _import_torch() -> Any:
    """Import torch on first use, so that naming another backend never needs it."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            "the 'torch' backend needs PyTorch; install it with "
            "`pip install aclnn-conformance[torch]`"
        ) from exc
    return torch


def products_for_soc(name: str) -> tuple:
    """The one product family an NPU's SoC name belongs to (real hardware stands for one), by
    suite/backends/soc.py's table; an unknown or out-of-scope name is an error naming it, never a guess."""
    try:
        return (soc.family_of(name),)
    except soc.UnknownSoc as exc:
        raise RuntimeError(f"torch backend: {exc} (torch.npu.get_device_name)") from None


def _check_option(key: str, value: str, allowed: tuple) -> str:
    if value not in allowed:
        raise ValueError(
            f"torch backend: {key}={value!r} is not supported; allowed values: {', '.join(allowed)}"
        )
    return value


class TorchBackend:
    """Runs each OpCall with PyTorch on `device`.

    compute=widen (default) widens float16/bfloat16 inputs to float32, computes in float32 and
    rounds once to the out dtype, as the vendor kernels do; compute=native computes in the
    inputs' own (promoted) dtype, which shows what half-precision arithmetic costs.
    """

    name = "torch"
    products = PRODUCTS

    def __init__(self, device: str = "cpu", compute: str = "widen") -> None:
        self.device_name = _check_option("device", device, DEVICES)
        self.compute = _check_option("compute", compute, COMPUTES)
        self.capabilities: set = set()
        torch = self._torch = _import_torch()
        if device == "npu":
            try:
                import torch_npu  # noqa: F401  (registers the "npu" device with torch)
            except ImportError as exc:
                raise RuntimeError(
                    "torch backend: device=npu needs torch_npu (Ascend's PyTorch adapter, a build "
                    "matching your torch and CANN versions) and a CANN toolkit"
                ) from exc
            if not torch.npu.is_available():
                raise RuntimeError("torch backend: device=npu, but torch_npu sees no Ascend NPU")
            self.products = products_for_soc(torch.npu.get_device_name(0))
        elif device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(
                "torch backend: device=cuda, but torch.cuda.is_available() is False "
                f"(torch {torch.__version__}); install a CUDA build of PyTorch on a machine with a GPU"
            )
        self.device = torch.device(device)
        self._dtypes = {
            "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
            # exact inputs (integer and BOOL operands), cast to the operator's operand dtype in run()
            "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8,
            "uint8": torch.uint8, "bool": torch.bool,
        }

    # -- conversion ------------------------------------------------------------------------

    def _torch_dtype(self, dtype: Any, what: str) -> Any:
        name = np.dtype(dtype).name
        if name not in self._dtypes:
            raise ValueError(f"torch backend: {what} has dtype {name}; supported: {_DTYPE_NAMES}")
        return self._dtypes[name]

    def _to_torch(self, array: np.ndarray, what: str) -> Any:
        """A torch copy of `array` on the device, bit-exact, never aliasing the caller's memory.

        The copy (order K) keeps a transposed layout but turns negative strides positive, which
        torch.from_numpy refuses; bfloat16 travels as its 16 raw bits.
        """
        array = np.asarray(array)
        dtype = self._torch_dtype(array.dtype, what)
        copy = np.array(array, copy=True, order="K")
        if dtype == self._torch.bfloat16:
            tensor = self._torch.from_numpy(copy.view(np.int16)).view(self._torch.bfloat16)
        else:
            tensor = self._torch.from_numpy(copy)
        return tensor.to(self.device)

    def _to_numpy(self, tensor: Any, call: OpCall, name: Optional[str] = None) -> np.ndarray:
        """Round once to the out dtype (on the device), then bring the bits back to numpy. `name`:
        an output beyond the first of a call with several (OpCall.outputs), in its own dtype."""
        torch = self._torch
        shape, dt = (call.out_shape, call.out_dtype) if name is None else call.outputs[name]
        out_dtype = self._torch_dtype(dt, name or "out")
        if tuple(tensor.shape) != tuple(shape):
            raise ValueError(
                f"torch backend: {'out_shape' if name is None else name + ' shape'} {tuple(shape)} differs "
                f"from the result's shape "
                f"{tuple(tensor.shape)} (this backend does not validate like aclnn)"
            )
        result = tensor.to(out_dtype).cpu().contiguous()
        if out_dtype == torch.bfloat16:
            return result.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return result.numpy()

    def _compute_dtype(self, *tensors: Any) -> Any:
        if self.compute == "widen":
            return self._torch.float32
        dtype = tensors[0].dtype
        for tensor in tensors[1:]:
            dtype = self._torch.promote_types(dtype, tensor.dtype)
        return dtype

    # -- the operators ---------------------------------------------------------------------

    def run(self, call: OpCall) -> np.ndarray:
        """The operator's own torch mapping (Operator.torch), in the compute dtype, rounded to the
        dtype the operator's kernel rounds its result to (Operator.result_dtype: out's own unless
        the operator declares another, e.g. its promoted input dtype) before out's dtype."""
        op, tensors = self._tensors(call)
        first, others = self._launch(call, op, tensors)
        rest = {n: self._to_numpy(t, call, n) for n, t in others.items()}
        result = self._to_numpy(first, call)
        return {op.outputs[0]: result, **rest} if getattr(call, "outputs", None) is not None else result

    def _tensors(self, call: OpCall) -> Any:
        """The operator and the call's inputs on the device in the compute dtype (what a launch reads)."""
        op = ops.get(call.op)
        missing = [k for k in op.inputs if call.inputs.get(k) is None and k not in op.optional]
        if call.out_shape is None or call.out_dtype is None:
            missing.append("out")
        if missing:
            raise ValueError(f"torch backend: cannot express NULL tensors ({', '.join(missing)})")
        # An optional input passed as NULL is left out of the mapping's tensors.
        tensors = {k: self._to_torch(call.inputs[k], k) for k in op.inputs if call.inputs.get(k) is not None}
        # An exact (integer or BOOL) input is cast to the operator's operand dtype first, as the op
        # API's Cast does before the kernel (Operator.operand_dtype; torch's own promotion of an
        # integer with a float tensor gives the same dtype for the pairs the suite runs).
        names = {k: np.dtype(a.dtype).name for k, a in call.inputs.items() if a is not None}
        # An index input (Operator.indices: a class-index target) is passed as int64, never cast.
        index = [k for k in tensors if k in op.indices]
        exact = [k for k in tensors if names[k] in dtypes.EXACT and k not in index]
        if exact:
            to = op.operand_dtype(names)
            if to is None:
                raise ValueError(f"torch backend: {op.name} takes no exact input ({', '.join(exact)})")
            tensors = {k: t.to(self._torch_dtype(dtypes.dtype_of(to), k)) if k in exact else t
                       for k, t in tensors.items()}
        cdtype = self._compute_dtype(*(t for k, t in tensors.items() if k not in index))
        return op, {k: t.to(self._torch.int64 if k in index else cdtype) for k, t in tensors.items()}

    def _launch(self, call: OpCall, op: Any, tensors: Dict[str, Any]) -> Any:
        """One launch on the device: (the first output rounded through the kernel's result dtype,
        {name: tensor} of the other written outputs); nothing leaves the device."""
        result = op.torch(self._torch, tensors, dict(call.attrs), self.device)
        others: Dict[str, Any] = {}
        if getattr(call, "outputs", None) is not None:
            # Several outputs: the mapping gives name -> tensor (or a tuple in signature order) of
            # the outputs the call writes; the first takes the rounding path below, each other is
            # rounded once to its own dtype.
            found = dict(result) if isinstance(result, Mapping) else dict(zip(op.outputs, result))
            result = found.pop(op.outputs[0])
            # A one-element output beyond the first may be any one-element shape the contract
            # accepts (a weight sum of [], [1] or [1, 1]): reshaped to the call's, as out is.
            others = {n: t.reshape(tuple(call.outputs[n][0]))
                      if t.numel() == 1 and int(np.prod(call.outputs[n][0])) == 1 else t
                      for n, t in found.items()}
        # A one-element out of another shape the contract accepts ([1] for a canonical (), a forward loss's
        # reductions): the mapping gives the canonical shape, reshaped as the reference reshapes it.
        # Only a one-element out: a transposed out of as many elements stays an error (no validation).
        shapes = {k: tuple(np.shape(a)) for k, a in call.inputs.items() if a is not None}
        canonical = op.canonical_out(shapes, dict(call.attrs), tuple(call.out_shape))
        if int(np.prod(call.out_shape)) == 1 and tuple(result.shape) == canonical != tuple(call.out_shape):
            result = result.reshape(tuple(call.out_shape))
        # An operator whose kernel rounds its result to another dtype before out's (its result_dtype:
        # the promoted input dtype, say) is rounded the same two ways here; out's own is a no-op.
        through = op.result_dtype({k: np.dtype(a.dtype).name for k, a in call.inputs.items() if a is not None},
                                  np.dtype(call.out_dtype).name)
        return result.to(self._torch_dtype(np.dtype(dtypes.dtype_of(through)), "result")), others

    # -- timing (docs/backend-contract.md, "Timing"; docs/timing.md) ------------------------

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> "Timing":
        """`launches` launches of the call on the device, each between its own pair of
        torch.cuda / torch.npu events (enable_timing) recorded on the current stream, one
        synchronize after the loop; with `flush`, a buffer of at least twice the device's L2 is
        written before each launch, outside its events. Inputs are on the device before the loop;
        a launch is the operator's kernels and the rounding to out's dtype, as run() computes them.
        On device=cpu there is no device clock: Unsupported (the case is reported not timed)."""
        from suite.perf.record import Timing       # (suite.perf imports suite.backends)
        torch = self._torch
        if self.device_name == "cpu":
            raise Unsupported("torch backend on device=cpu has no device clock (no events); "
                              "time it with --backend-opt device=cuda or device=npu")
        dev = torch.cuda if self.device_name == "cuda" else torch.npu
        op, tensors = self._tensors(call)
        out_dtype = self._torch_dtype(call.out_dtype, "out")
        scratch = self._flush_buffer(dev) if flush else None
        starts = [dev.Event(enable_timing=True) for _ in range(launches)]
        ends = [dev.Event(enable_timing=True) for _ in range(launches)]
        dev.synchronize()
        for i in range(launches):
            if scratch is not None:
                scratch.fill_(i & 0x7F)              # outside the events: evicts what the last launch left
            starts[i].record()
            first, _ = self._launch(call, op, tensors)
            first.to(out_dtype)
            ends[i].record()
        dev.synchronize()
        source = "torch.cuda.Event" if self.device_name == "cuda" else "torch.npu.Event"
        return Timing("device", source, tuple(s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)))

    def _flush_buffer(self, dev: Any) -> Any:
        """A byte buffer of twice the device's L2 (CUDA: its L2_cache_size), at least FLUSH_FLOOR;
        where the properties report no L2 size (torch_npu's), the floor is used: 384 MiB, twice
        192 MiB, a figure we have not verified for any Ascend part (docs/timing.md)."""
        if getattr(self, "_scratch", None) is None:
            l2 = getattr(dev.get_device_properties(self.device), "L2_cache_size", 0) or 0
            self._scratch = self._torch.empty(max(2 * int(l2), FLUSH_FLOOR), dtype=self._torch.uint8,
                                              device=self.device)
        return self._scratch
