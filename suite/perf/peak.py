"""A product's peak memory bandwidth for the timing record's % of peak (cases/hardware.yaml's
optional peak_gbps with its peak_source). Why "unverified" rather than a number: a % of a peak
nobody can trace is worse than none, and above 100 % it would call a kernel cache-resident."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from suite.cases import hardware

UNVERIFIED = "unverified"


def peak_of(product: str, table: Dict[str, hardware.Hardware]) -> Tuple[Optional[float], str]:
    """(peak GB/s, its source), or (None, "unverified") where the file gives no cited figure."""
    hw = table.get(product)
    if hw is None or hw.peak_gbps is None:
        return None, UNVERIFIED
    return hw.peak_gbps, str(hw.peak_source)
