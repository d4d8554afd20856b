"""Run every check battery against one emulator build in a fresh process; print JSON.

    python -m tests.aclnn_fault_driver LIBDIR [--bf16-code N]

A fresh process per build, because two builds of the same libraries cannot share one process: the
dynamic loader would resolve one build's libascendcl.so for the other. Output: {battery: [failure
messages]}; an empty list means the battery passed.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
from typing import Dict, List, Optional

from suite import ops
from suite.backends.aclnn import AclnnBackend
from tests import aclnn_checks as C


def _record(failures: List[str], label: str, fn) -> None:
    try:
        fn()
    except Exception as exc:  # any failure of the backend under test counts, whatever its type
        failures.append(f"{label}: {type(exc).__name__}: {exc}")


def run_all(lib_dir: str, bf16_code: Optional[int] = None) -> Dict[str, List[str]]:
    res: Dict[str, List[str]] = {k: [] for k in ("setup", "numerics", "strided_out", "exact_cast", "status", "leaks")}
    opts = {} if bf16_code is None else {"_bf16_code": str(bf16_code)}
    ops.OPERATORS.update(C.stand_ins(probe=False))  # this process only: the batteries' operators
    os.environ["ACLNN_EMU_SOC"] = "Ascend910B3"
    b = AclnnBackend(lib_dir=lib_dir, **opts)
    if b.unavailable:
        res["setup"].append(b.unavailable)
        return res
    live = b.libraries.runtime.handle.aclemuLiveCounts
    for label, call in C.numeric_calls():
        _record(res["numerics"], label, lambda: C.assert_close(b.run(call), call, label))
    for dt in (C.F16, C.BF16):
        call = C.exact_cast_call(dt)
        _record(res["exact_cast"], dt.name, lambda: C.assert_exact_cast(b.run(call), call))
    for label, call, status in C.status_calls("atlas-a2"):
        _record(res["status"], label, lambda: C.check_status(b, call, status, label))
    for label, call in C.accepted_controls("atlas-a2"):
        _record(res["status"], label, lambda: C.assert_close(b.run(call), call, label))
    b.close()
    bf = AclnnBackend(lib_dir=lib_dir, _out_layout="fortran", **opts)
    for label, call in C.numeric_calls(seed=3):
        if call.out_shape is not None and len(call.out_shape) >= 2:
            _record(res["strided_out"], label, lambda: C.assert_close(bf.run(call), call, label))
    bf.close()
    os.environ["ACLNN_EMU_SOC"] = "Ascend910A"
    bt = AclnnBackend(lib_dir=lib_dir, **opts)
    _record(res["status"], "product detection", lambda: _expect(bt.products == ("atlas-training",), bt.products))
    for label, call, status in C.status_calls("atlas-training"):
        _record(res["status"], f"training {label}", lambda: C.check_status(bt, call, status, label))
    bt.close()
    counts = [ctypes.c_int64() for _ in range(4)]
    live(*[ctypes.byref(c) for c in counts])
    if any(c.value for c in counts):
        res["leaks"].append(f"live bufs/tensors/executors/streams after close: {[c.value for c in counts]}")
    return res


def _expect(ok: bool, what) -> None:
    if not ok:
        raise AssertionError(f"unexpected {what!r}")


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("lib_dir")
    parser.add_argument("--bf16-code", type=int, default=None)
    args = parser.parse_args(argv)
    json.dump(run_all(args.lib_dir, args.bf16_code), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
