"""Each product family's hardware, as its operators' host tiling sees it (cases/hardware.yaml, with
sources), and the names a shape generator may use for a product and dtype."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple, Union

from suite.common import dtypes
from suite.contract import PRODUCTS
from suite.common.home import data_root
from suite.common.yamlfile import FileError, LineDict, load

HARDWARE_FILE = "hardware.yaml"


def default_path() -> Path:
    """cases/hardware.yaml of the data folder (suite/common/home.py)."""
    return data_root() / "cases" / HARDWARE_FILE
FIELDS = {"socs": str, "cores": list, "ub_bytes": int, "block_bytes": int, "repeat_bytes": int,
          "max_repeat": int, "float32_subnormals": str, "peak_gbps": float, "peak_source": str}
# Fields a hardware file may leave out, with the value they then take. peak_gbps (the family's peak
# memory bandwidth, GB/s, what `pytest --timing` reports a % of) only with peak_source, its citation:
# a figure without a source is not given at all (the timing record then says "unverified").
OPTIONAL = {"float32_subnormals": "not established", "peak_gbps": None, "peak_source": None}
# What the family's vector cores do with float32 subnormal operands and results: judging accepts a
# flushed computation unless they are known to be kept (docs/precision.md, "Flushed subnormals").
SUBNORMALS = ("flushed", "kept", "not established")

Value = Union[int, Tuple[int, ...]]


@dataclass(frozen=True)
class Hardware:
    product: str
    socs: str
    cores: Tuple[int, ...]           # one per chip variant of the family
    ub_bytes: int
    block_bytes: int
    repeat_bytes: int
    max_repeat: int
    float32_subnormals: str = OPTIONAL["float32_subnormals"]
    peak_gbps: Optional[float] = None       # peak memory bandwidth, GB/s (with its source), or unknown
    peak_source: Optional[str] = None

    @property
    def may_flush(self) -> bool:
        """Whether a correct kernel on this family may flush float32 subnormals to zero."""
        return self.float32_subnormals != "kept"

    def names(self, dtype_name: str) -> Dict[str, Value]:
        """Generator names for data of `dtype_name`: counts in elements of that dtype."""
        size = dtypes.dtype_of(dtype_name).itemsize
        return {"cores": self.cores, "ub": self.ub_bytes, "block": self.block_bytes // size,
                "lanes": self.repeat_bytes // size,
                "reach": self.max_repeat * self.repeat_bytes // size}


def load_hardware(path: Optional[Path] = None) -> Dict[str, Hardware]:
    """The hardware file: `path`, else the data folder's."""
    path = default_path() if path is None else path
    doc = load(path)
    if not isinstance(doc, LineDict):
        raise FileError(path, 1, None, "the hardware file maps each product family to its parameters")
    out: Dict[str, Hardware] = {}
    for product, body in doc.items():
        if product not in PRODUCTS:
            raise FileError(path, doc.line_of(product), str(product),
                            f"unknown product (known: {', '.join(PRODUCTS)})")
        if not isinstance(body, LineDict):
            raise FileError(path, doc.line_of(product), str(product), "is a mapping of parameters")
        for k in body:
            if k not in FIELDS:
                raise FileError(path, body.line_of(k), f"{product}.{k}",
                                f"unknown key (allowed: {', '.join(FIELDS)})")
        values = {}
        for k, typ in FIELDS.items():
            if k not in body and k in OPTIONAL:
                continue
            if k not in body:
                raise FileError(path, body.line, f"{product}.{k}", "is required")
            v = body[k]
            if k == "cores":
                if not v or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in v):
                    raise FileError(path, body.line_of(k), f"{product}.{k}", "a list of positive integers")
                v = tuple(v)
            elif typ is int and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise FileError(path, body.line_of(k), f"{product}.{k}", f"a positive integer, not {v!r}")
            elif typ is float and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf")):
                raise FileError(path, body.line_of(k), f"{product}.{k}", f"a positive number of GB/s, not {v!r}")
            elif typ is str and not isinstance(v, str):
                raise FileError(path, body.line_of(k), f"{product}.{k}", "a string")
            elif k == "float32_subnormals" and v not in SUBNORMALS:
                raise FileError(path, body.line_of(k), f"{product}.{k}",
                                f"one of {', '.join(SUBNORMALS)}, not {v!r}")
            values[k] = v
        if ("peak_gbps" in values) != ("peak_source" in values):
            k = "peak_source" if "peak_gbps" in values else "peak_gbps"
            raise FileError(path, body.line, f"{product}.{k}", "is required with "
                            + ("peak_gbps (a figure with its source)" if k == "peak_source" else "peak_source"))
        if "peak_gbps" in values:
            values["peak_gbps"] = float(values["peak_gbps"])
        out[product] = Hardware(product, **values)
    missing = [p for p in PRODUCTS if p not in out]
    if missing:
        raise FileError(path, 1, None, f"no parameters for {', '.join(missing)}")
    return out


def variants(names: Mapping[str, Value]) -> List[str]:
    """The names that take several values (one per chip variant)."""
    return [k for k, v in names.items() if isinstance(v, tuple)]
