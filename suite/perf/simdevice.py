"""A simulated device's clock, for proving the timing path and the gate without hardware.

Device time per launch = (bytes / bandwidth + launch overhead) x slowdown x a round's drift x
lognormal noise x (1 + drift x launches made so far / drift_launches: a device that heats up or
clocks down over a job, which is what interleaved timing is for), and now and then 2x (an outlier: a preempted or throttled launch). It has its own
last-level cache: a launch whose bytes fit in it and whose previous launch touched the same data,
with no flush between, reads at the cache's bandwidth, which is how a warm cache makes a
memory-bound kernel look faster than its memory. The host clock sees only the asynchronous enqueue:
a few microseconds whatever the kernel does, from a random stream of its own. Every figure is the
simulation's own, not any product's. Seeded through numpy's PCG64: one seed, one sequence."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, List, Optional, Tuple

import numpy as np


@dataclass(frozen=True)
class DeviceModel:
    """The simulated device's figures (defaults: a made-up device, labelled as such everywhere)."""
    bandwidth_gbps: float = 1000.0        # what main memory delivers to a streaming kernel
    peak_gbps: float = 1200.0             # the memory's nominal peak, which no kernel reaches
    cache_gbps: float = 4000.0            # the last-level cache
    llc_bytes: int = 64 << 20
    overhead_s: float = 2e-6              # launch overhead on the device
    noise_sigma: float = 0.03             # lognormal sigma of one launch
    outlier_rate: float = 0.01            # share of launches that take 2x
    round_sigma: float = 0.005            # lognormal sigma of the drift between calls (rounds)
    host_s: float = 4e-6                  # the host's enqueue time of one launch
    host_sigma: float = 0.2
    slowdown: float = 1.0                 # 1.20: a kernel 20 % slower
    drift: float = 0.0                    # 0.3: the device 30 % slower after drift_launches launches
    drift_launches: int = 100_000         # (a thermal or clock drift, linear in its launches)


@dataclass
class Ramp:
    """How far a device has drifted: the launches it has made. Its own object so that two backends
    can stand for one device (the benchmark's A and B in one job: `b.device.ramp = a.device.ramp`);
    in two processes each counts its own, which interleaved rounds of equal launches keep in step."""
    launched: int = 0


class SimulatedDevice:
    """The clock and cache state of one simulated device."""

    def __init__(self, model: DeviceModel = DeviceModel(), seed: int = 0):
        self.model = model
        self.ramp = Ramp()
        device_seq, host_seq = np.random.SeedSequence(seed).spawn(2)
        self._rng = np.random.Generator(np.random.PCG64(device_seq))
        self._host_rng = np.random.Generator(np.random.PCG64(host_seq))
        self._resident: Optional[Hashable] = None      # the data the cache holds, if any

    def flush(self) -> None:
        """Evict everything (the timing protocol's flush buffer, outside the timed region)."""
        self._resident = None

    def launches(self, nbytes: int, data: Hashable, count: int, *, flush: bool) -> Tuple[List[float], List[float]]:
        """`count` launches of a kernel moving `nbytes` of `data`: (device seconds, host seconds),
        one each per launch, in order."""
        m = self.model
        drift = float(np.exp(self._rng.normal(0.0, m.round_sigma)))
        noise = np.exp(self._rng.normal(0.0, m.noise_sigma, count))
        outliers = np.where(self._rng.random(count) < m.outlier_rate, 2.0, 1.0)
        host = m.host_s * np.exp(self._host_rng.normal(0.0, m.host_sigma, count))
        fits = nbytes <= m.llc_bytes
        # Which launches read from the cache: none after a flush; else the first only if the cache
        # still holds this data, each later one if the data fits (its previous launch left it there).
        warm = np.zeros(count, dtype=bool)
        if not flush and count:
            warm[0] = self._resident == data             # only data that fits is ever resident
            warm[1:] = fits
        bw = np.where(warm, m.cache_gbps, m.bandwidth_gbps) * 1e9
        hot = 1.0 + m.drift * (self.ramp.launched + np.arange(count)) / m.drift_launches
        self.ramp.launched += count
        device = (nbytes / bw + m.overhead_s) * m.slowdown * drift * noise * outliers * hot
        if count:
            self._resident = data if fits else None      # a stream larger than the cache evicts itself
        return [float(d) for d in device], [float(h) for h in host]
