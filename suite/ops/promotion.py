"""opbase's type promotion (PromoteType over kPromoteTypesLookup) and CanCast, by the suite's dtype
names ([opbase] github.com/hicann/opbase @aa3cd74b include/nnopbase/opdev/data_type_utils.h; the
emulator's copy is tests/emulator/src/opapi.c). The operators promote mixed input dtypes with it,
integer and BOOL operands included (docs/operators/L1LossBackward.md, "Integer operands"), so the
table is the vendor's whole one, not only the floats the suite judges."""
from __future__ import annotations

from typing import Optional

# The order of kPromoteTypesLookup's rows and columns, as aclDataType names.
ORDER = ("float32", "float16", "int8", "int32", "uint8", "int16", "uint16", "uint32", "int64", "uint64",
         "float64", "bool", "complex64", "complex128", "bfloat16", "complex32")
_ROWS = """
f4 f4 f4 f4 f4 f4 ud ud f4 ud f8 f4 c4 c8 f4 c4
f4 f2 f2 f2 f2 f2 ud ud f2 ud f8 f2 c4 c8 f4 c2
f4 f2 i1 i4 i2 i2 ud ud i8 ud f8 i1 c4 c8 bf c2
f4 f2 i4 i4 i4 i4 ud ud i8 ud f8 i4 c4 c8 bf c2
f4 f2 i2 i4 u1 i2 ud ud i8 ud f8 u1 c4 c8 bf c2
f4 f2 i2 i4 i2 i2 ud ud i8 ud f8 i2 c4 c8 bf c2
ud ud ud ud ud ud ud ud ud ud ud ud c4 c8 ud ud
ud ud ud ud ud ud ud ud ud ud ud ud c4 c8 ud ud
f4 f2 i8 i8 i8 i8 ud ud i8 ud f8 i8 c4 c8 bf c2
ud ud ud ud ud ud ud ud ud ud ud ud c8 c8 ud ud
f8 f8 f8 f8 f8 f8 ud ud f8 ud f8 f8 c8 c8 f8 c8
f4 f2 i1 i4 u1 i2 ud ud i8 ud f8 b1 c4 c8 bf c2
c4 c4 c4 c4 c4 c4 ud ud c4 ud c8 c4 c4 c8 c4 c4
c8 c8 c8 c8 c8 c8 ud ud c8 ud c8 c8 c8 c8 c8 c8
f4 f4 bf bf bf bf ud ud bf ud f8 bf c4 c8 bf c4
c4 c2 c2 c2 c2 c2 ud ud c2 ud c8 c2 c4 c8 c4 c2
"""
_CODE = {"f4": "float32", "f2": "float16", "i1": "int8", "i4": "int32", "u1": "uint8", "i2": "int16",
         "i8": "int64", "f8": "float64", "b1": "bool", "c4": "complex64", "c8": "complex128",
         "bf": "bfloat16", "c2": "complex32", "ud": None}
TABLE = {(a, b): _CODE[c] for a, row in zip(ORDER, _ROWS.split("\n")[1:-1])
         for b, c in zip(ORDER, row.split())}
FLOATING = ("float32", "float16", "bfloat16", "float64")
COMPLEX = ("complex32", "complex64", "complex128")
INTEGRAL = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def promote_pair(a: str, b: str) -> Optional[str]:
    """PromoteType(a, b): equal dtypes stay, else the table's entry; None where it is undefined
    (UINT16/32/64 with anything but a complex dtype) or a name is not an aclDataType."""
    if a not in ORDER or b not in ORDER:
        return None
    return a if a == b else TABLE[(a, b)]


def can_cast(src: str, dst: str) -> bool:
    """CanCast(src, dst): no complex to non-complex, no floating to integral, nothing but BOOL to BOOL."""
    if src in COMPLEX and dst not in COMPLEX:
        return False
    if src in FLOATING and dst in INTEGRAL:
        return False
    return not (src != "bool" and dst == "bool")
