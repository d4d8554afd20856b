"""What a backend's time_launches returns (docs/backend-contract.md, "Timing")."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class Timing:
    clock: str  # "device" or "host"
    source: str  # "aclrtEvent", "torch.cuda.Event", "perf_counter_ns", "simulated"
    seconds: Tuple[float, ...]  # one per launch, in order
