"""The simulated backend: the reference backend's numbers (so it passes the conformance suite) and
a timing hook, `time_launches`, on a simulated device (suite/perf/simdevice.py). Named
`--backend simulated` (options: `--backend-opt seed=3 --backend-opt slowdown=1.2`, any field of
DeviceModel (`drift=0.3 --backend-opt drift_launches=20000`: a device 30 % slower after
20,000 launches), and `clock=host` for honest host-clock timing); `simulated-host-clock` is the variant
that claims the device clock but returns the host's, for the test that must catch it."""
from __future__ import annotations

from dataclasses import fields
from typing import Any, Hashable, Mapping

import numpy as np

from suite.backends.reference import ReferenceBackend
from suite.contract import OpCall
from suite.perf.record import CLOCKS, Timing
from suite.perf.simdevice import DeviceModel, SimulatedDevice
from suite.perf.traffic import bytes_moved

FIELDS = {f.name: f.type for f in fields(DeviceModel)}
POSITIVE = ("slowdown", "bandwidth_gbps", "cache_gbps", "peak_gbps", "drift_launches")


def _number(key: str, value: Any, integral: bool) -> Any:
    """An option as given on the command line ('1.2') or in Python (1.2): one clear error otherwise."""
    try:
        v = int(value) if integral else float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key}={value!r}: give a {'whole number' if integral else 'number'}") from None
    if not (v >= 0 and np.isfinite(v)):
        raise ValueError(f"{key}={value!r}: give a finite number >= 0")
    return v


def data_key(call: OpCall) -> Hashable:
    """Which memory a launch touches: each input's buffer (address, shape, strides, dtype) and the
    outputs it writes. The same call launched again touches the same data; another call does not."""
    ins = tuple((n, None) if a is None else (n, a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)
                for n, a in call.inputs.items())
    return ins, call.out_shape, str(call.out_dtype)


class SimulatedBackend(ReferenceBackend):
    """Reference numerics, simulated device timing."""

    name = "simulated"
    clock = "device"

    def __init__(self, seed: Any = 0, clock: str = "device", **model: Any):
        unknown = sorted(set(model) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown option {', '.join(unknown)} (known: seed, clock, {', '.join(FIELDS)})")
        if clock not in CLOCKS:
            raise ValueError(f"clock={clock!r}: one of {', '.join(CLOCKS)}")
        self.clock = clock
        values = {k: _number(k, v, k in ("llc_bytes", "drift_launches")) for k, v in model.items()}
        if any(values.get(k, 1.0) <= 0 for k in POSITIVE):
            raise ValueError(f"{', '.join(POSITIVE[:-1])} and {POSITIVE[-1]} must be > 0")
        self.model = DeviceModel(**values)
        self.device = SimulatedDevice(self.model, _number("seed", seed, True))

    @property
    def peak_gbps(self) -> float:
        """The simulated memory's nominal peak, the figure a record's peak_fraction is of (what it
        delivers, bandwidth_gbps, is less: a kernel above 100 % of peak read from a cache)."""
        return self.model.peak_gbps

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> Timing:
        """`launches` launches of `call`, one simulated event pair each, the flush (if any) before
        each launch and outside its time. Only time is simulated: the numbers come from run()."""
        device, host = self.device.launches(bytes_moved(call), data_key(call), int(launches), flush=flush)
        return Timing(self.clock, "simulated", tuple(device if self.clock == "device" else host))


class HostClockBackend(SimulatedBackend):
    """A backend that lies: it says "device" but its seconds are the host's enqueue times, which do
    not grow with the kernel's bytes (torch.utils.benchmark's mistake on an NPU)."""

    name = "simulated-host-clock"

    def time_launches(self, call: OpCall, launches: int, *, flush: bool) -> Timing:
        _, host = self.device.launches(bytes_moved(call), data_key(call), int(launches), flush=flush)
        return Timing("device", "simulated", tuple(host))
