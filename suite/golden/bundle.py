"""The bundle format: deterministic zip files of .npy members holding small cases' inputs and golden
(golden/<op>/<bucket>-<sha12>.npz)."""
from __future__ import annotations

import hashlib
import io
import math
import json
import zipfile
from typing import Dict, List, Mapping, Tuple

import numpy as np

from suite.common import dtypes
from suite.common.signals import held
from suite.cases.model import Case
from suite.ops.base import Golden
from suite.golden.source import CaseData, Materialized, _ZIP_DATE


# -- bundles -----------------------------------------------------------------------------------
def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a, order="C"), allow_pickle=False)
    return buf.getvalue()


def _members(case: Case, inputs: Mapping[str, np.ndarray], g: Golden,
             others: Mapping[str, Golden] = {}) -> Dict[str, np.ndarray]:
    """A case's arrays in a bundle: its inputs in their dtypes, the golden, the sum of magnitudes
    where it differs from |golden|, and the number of terms; each other written output's the same
    way, its name after a dot (`out.totalWeightOut`, ...). A case with one output has exactly the
    members it always had, so its bundle is byte-identical."""
    m = {f"in.{n}": np.asarray(a) for n, a in inputs.items() if a is not None}
    m.update(_golden_members(g, ""))
    for name, o in others.items():
        m.update(_golden_members(o, f".{name}"))
    return m


def _golden_members(g: Golden, suffix: str) -> Dict[str, np.ndarray]:
    m = {f"out{suffix}": np.asarray(g.out, dtype=np.float64)}
    if not np.array_equal(g.scale, np.abs(g.out), equal_nan=True):
        m[f"scale{suffix}"] = np.asarray(g.scale, dtype=np.float64)
    if g.path is not g.scale and not np.array_equal(g.path, g.scale, equal_nan=True):
        m[f"path{suffix}"] = np.asarray(g.path, dtype=np.float64)
    m[f"nterms{suffix}"] = np.array(g.nterms, dtype=np.int64)
    return m


def _golden_of(arrays: Mapping[str, np.ndarray], suffix: str) -> Golden:
    out = arrays[f"out{suffix}"]
    scale = arrays[f"scale{suffix}"] if f"scale{suffix}" in arrays else np.abs(out)
    return Golden(out=out, scale=scale, nterms=int(arrays[f"nterms{suffix}"]), path=arrays.get(f"path{suffix}"))


def _bundle_bytes(cases: Mapping[str, Mapping[str, np.ndarray]]) -> bytes:
    """One zip with two members that np.load reads: `data`, every array's raw bytes one after the
    other (8-byte aligned; bfloat16 as its bits, with its dtype name in the index), and `index`, a
    JSON map of datakey -> array name -> [dtype, shape, offset]. Reading a bundle is one
    decompression, and a case's arrays are views into it. Byte-identical for identical content."""
    index: Dict[str, Dict[str, list]] = {}
    chunks: List[bytes] = []
    offset = 0
    for key in sorted(cases):
        index[key] = {}
        for name in sorted(cases[key]):
            a = np.asarray(cases[key][name], order="C")     # (ascontiguousarray makes 0-d 1-d)
            raw = a.tobytes()
            index[key][name] = [dtypes.name_of(a.dtype), list(a.shape), offset]
            pad = -len(raw) % 8
            chunks.append(raw + b"\0" * pad)
            offset += len(raw) + pad
    data = np.frombuffer(b"".join(chunks), dtype=np.uint8)
    text = np.frombuffer(json.dumps(index, sort_keys=True, separators=(",", ":")).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    with held(), zipfile.ZipFile(buf, "w") as z:
        for name, arr in (("data.npy", data), ("index.npy", text)):
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, _npy(arr), compresslevel=6)
    return buf.getvalue()


def _read_bundle(data: bytes) -> Tuple[dict, bytes]:
    with held():                              # an interrupt is handled after the zip is read and closed
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            text, raw = npz["index"].tobytes(), npz["data"].tobytes()
    return json.loads(text.decode()), raw


_STORED_DTYPES = {"float64": np.dtype(np.float64), "int64": np.dtype(np.int64)}


def _unpack(index: dict, data: bytes, key: str) -> Dict[str, np.ndarray]:
    """A case's arrays, as read-only views of the bundle's bytes."""
    out = {}
    for name, (dname, shape, offset) in index[key].items():
        dt = _STORED_DTYPES.get(dname) or dtypes.dtype_of(dname)
        out[name] = np.frombuffer(data, dtype=dt, count=math.prod(shape), offset=offset).reshape(tuple(shape))
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()



def _read_case(bundle: Tuple[dict, bytes], datakey: str) -> CaseData:
    index, data = bundle
    if datakey not in index:
        raise KeyError(f"{datakey} is not in its bundle")
    arrays = _unpack(index, data, datakey)
    inputs = {k[3:]: v for k, v in arrays.items() if k.startswith("in.")}
    others = {k[4:]: Materialized(_golden_of(arrays, k[3:])) for k in arrays if k.startswith("out.")}
    return CaseData(inputs, Materialized(_golden_of(arrays, "")), others)
