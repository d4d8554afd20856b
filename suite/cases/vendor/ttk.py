"""TTK kernel-mode CSV files (`tests/st/arch35/ttk_kernel_*.csv`, run by `python3 -m ttk kernel`):
one row a case, naming the kernel (`op_name`), its inputs in the kernel's order (`input_shapes`,
`input_dtypes`), its attributes in the kernel's names, the data range of each input, whether the
row is enabled and which SoCs it is for. docs/vendor-cases.md maps every column."""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from suite import ops
from suite.common import dtypes
from suite.common.yamlfile import FileError, read_text
from suite.cases.vendor.emit import Call
from suite.cases.vendor.record import Item
from suite.cases.vendor.spec import Refused, attr_value, literal, per_input, ttk_values
from suite.ops.base import Operator

REQUIRED = ("op_name", "input_shapes", "input_dtypes")
ENABLED = {"": True, "1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def operators() -> Dict[str, Operator]:
    """Kernel op_name -> operator, from each operator's declaration."""
    return {op.vendor.ttk: op for op in ops.OPERATORS.values() if op.vendor.ttk}


def read(path: Path, shown: str, product: str) -> Iterator[Item]:
    """Every row of one TTK file, translated or refused."""
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader, [])]
    except csv.Error as e:
        raise FileError(shown, 1, None, f"not CSV: {e}") from None
    aclnn_mode = "api_name" in header
    missing = [c for c in REQUIRED if c not in header] if not aclnn_mode else []
    if not header or missing:
        raise FileError(shown, 1, missing[0] if missing else None,
                        "a TTK kernel file's header names op_name, input_shapes and input_dtypes")
    by_kernel = operators()
    row_no = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            raise FileError(shown, reader.line_num, None, f"not CSV: {e}") from None
        if not any(c.strip() for c in cells):
            continue                              # the kit skips blank rows
        row_no += 1
        row = dict(zip(header, (c.strip() for c in cells)))
        ident = f"{row.get('testcase_name') or f'row {row_no}'} (line {reader.line_num})"
        if len(cells) != len(header):
            yield Item(shown, ident, row.get("op_name") or "?", None, None,
                       f"the row has {len(cells)} cells, the header {len(header)}")
            continue
        if aclnn_mode:
            name = row.get("api_name") or "?"
            yield Item(shown, ident, name, None, None,
                       "a TTK row of the kit in aclnn or end-to-end mode: only kernel-mode files are read")
            continue
        kernel = row.get("op_name", "")
        op = by_kernel.get(kernel)
        if op is None:
            yield Item(shown, ident, f"kernel {kernel}", None, None, f"operator not covered: kernel {kernel!r}")
            continue
        try:
            yield Item(shown, ident, op.name, op, translate(op, row, product), None)
        except Refused as e:
            yield Item(shown, ident, op.name, None, None, str(e))


def _enabled(v: str) -> bool:
    w = v.strip().lower()
    if w not in ENABLED:
        raise Refused(f"field 'is_enabled': {v!r} is not true or false")
    return ENABLED[w]


def _cell(row: Dict[str, str], col: str) -> Any:
    text = row.get(col, "")
    return literal(text, f"field '{col}'") if text else None


def product_of(row: Dict[str, str], default: str) -> str:
    """soc_series: empty, the default product; one SoC, that SoC's name (the loader resolves it to
    its family); several, or exclusions, refused (a case runs on one product)."""
    socs = _cell(row, "soc_series")
    if socs in (None, (), [], ""):
        return default
    socs = [socs] if isinstance(socs, str) else list(socs)
    if len(socs) == 1 and isinstance(socs[0], str) and not socs[0].startswith("-"):
        return socs[0].lower()
    raise Refused(f"field 'soc_series': {socs!r} names several SoCs or excludes some; a case runs on one "
                  f"product (import with --product)")


def translate(op: Operator, row: Dict[str, str], product: str) -> Call:
    """One kernel row as the aclnn call of the operator, or Refused."""
    if not _enabled(row.get("is_enabled", "")):
        raise Refused("disabled in the vendor file (is_enabled)")
    vn = op.vendor
    order: List[str] = list(vn.ttk_inputs)
    n = len(order)
    shapes = _cell(row, "input_shapes")
    if not isinstance(shapes, (tuple, list)) or len(shapes) != n:
        raise Refused(f"field 'input_shapes': {row.get('input_shapes')!r} is not {n} shapes "
                      f"(the kernel takes {n} inputs)")
    dts = per_input(_cell(row, "input_dtypes"), n, "field 'input_dtypes'")
    ranges = per_input(_cell(row, "input_data_ranges"), n, "field 'input_data_ranges'")
    call = Call(product=product_of(row, product), dtypes={}, shapes={})
    for name, shape, dt, rng in zip(order, shapes, dts, ranges):
        what = f"field 'input_shapes' ({name})"
        if shape is None:
            if name not in op.optional:
                raise Refused(f"{what}: None, but {name!r} is not optional")
            call.dtypes[name], call.shapes[name] = None, None
            continue
        if not isinstance(shape, (tuple, list)) or any(
                isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in shape):
            raise Refused(f"{what}: {shape!r} is not a shape")
        call.shapes[name] = tuple(shape)
        call.dtypes[name] = _dtype(dt, f"field 'input_dtypes' ({name})")
        call.values[name] = ttk_values(rng, f"field 'input_data_ranges' ({name})")
    outs = per_input(_cell(row, "output_dtypes"), 1, "field 'output_dtypes'")
    call.out_dtype = None if outs[0] is None else _dtype(outs[0], "field 'output_dtypes'")
    _attributes(op, _cell(row, "attributes") or {}, call)
    call.dtypes = {k: call.dtypes[k] for k in op.inputs}
    call.shapes = {k: call.shapes[k] for k in op.inputs}
    return call


def _dtype(v: Any, what: str) -> str:
    try:
        return dtypes.canonical(str(v))
    except KeyError:
        raise Refused(f"{what}: dtype {v!r} is not one the suite runs ({', '.join(dtypes.DTYPES)})") from None


def _attributes(op: Operator, given: Any, call: Call) -> None:
    """The kernel's attributes in the operator's names; one a row leaves out takes the kernel's
    default (its proto's ATTR); a reduction word is the operator's reduction of that name."""
    if not isinstance(given, dict):
        raise Refused(f"field 'attributes': {given!r} is not a dict")
    vn = op.vendor
    kinds = {a.name: a.kind for a in op.attributes}
    for kname, v in {**vn.ttk_defaults, **given}.items():
        ours = vn.ttk_attrs.get(kname, kname)
        what = f"field 'attributes' ({kname})"
        if kname in vn.ttk_fixed:
            if v != vn.ttk_fixed[kname]:
                raise Refused(f"{what}: {v!r}, but aclnn{op.name} runs the kernel with {vn.ttk_fixed[kname]!r}")
        elif ours == "reduction" and op.reductions:
            if not isinstance(v, str) or v not in op.reductions:
                raise Refused(f"{what}: {v!r} is not one of {', '.join(op.reductions)}")
            call.reduction = op.reductions[v]
        elif ours in kinds:
            call.attrs[ours] = attr_value(v, kinds[ours], what)
        else:
            raise Refused(f"{what}: not an attribute of aclnn{op.name}")
    if op.reductions and call.reduction is None:
        raise Refused("field 'attributes': no reduction")
