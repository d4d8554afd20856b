"""Host emulator of the CANN aclnn ABI subset the `aclnn` backend uses (test support only).

Build it with `python -m tests.emulator.build OUTDIR [--fault NAME]`; see build.py.
"""
