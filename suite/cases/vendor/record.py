"""One vendor case as the readers hand it on: where it comes from, the operator it belongs to (or
the vendor's name for one the suite does not cover), and either its call or why it is refused."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from suite.cases.vendor.emit import Call
from suite.ops.base import Operator


@dataclass
class Item:
    file: str                       # the file as the report names it
    ident: str                      # the vendor's id or testcase_name (and its CSV line)
    key: str                        # the operator's name, or the vendor's for one not covered
    op: Optional[Operator]
    call: Optional[Call]
    refused: Optional[str]          # why it is not imported (None: translated)
