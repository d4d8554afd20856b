"""JSON read with suite.yamlfile's guarantees: a file too large, not UTF-8, not JSON or nested
past what the decoder can recurse through is one line naming the file (and the line, where there
is one), raised as the caller's own error type (ResultsError, GoldenError).

MAX_BYTES is 256 MiB: a results.json costs ~0.8 kB a record (9 MB for today's 11,000 records of
every product), so this is ~300,000 records; the golden manifest is 1 MB. json.loads of a file
costs several times its size in memory, so a few GB at most."""
from __future__ import annotations

import json
import reprlib
from pathlib import Path
from typing import Any, Callable

from suite.common.yamlfile import FileError, line_at, one_line, read_text

MAX_BYTES = 256 << 20

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict = 2, 4, 4


def short(value: Any) -> str:
    """repr() for an error message: at most ~60 characters a value, two levels deep, one line."""
    return one_line(_SHORT.repr(value))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value (write a non-finite number as the string \"nan\", "
                     f"\"inf\" or \"-inf\")")


def load(path: Path, error: Callable[[str], Exception], max_bytes: int = MAX_BYTES, allow_nan: bool = True) -> Any:
    """The JSON document in `path`; any problem reading it is `error("<path>[:line]: what")`.
    Python's json reads NaN, Infinity and -Infinity, which JSON has not: `allow_nan=False` refuses
    them (a document that must be written back with json.dumps(allow_nan=False))."""
    try:
        text = read_text(Path(path), max_bytes)
    except FileError as e:
        raise error(str(e)) from None
    return _parse(path, text, error, allow_nan)


def loads(path: Path, data: bytes, error: Callable[[str], Exception], max_bytes: int = MAX_BYTES) -> Any:
    """load() of `data`, the bytes already read from `path`, with the same errors (the golden
    store hashes and parses one read of its manifest, so that both are of the same bytes)."""
    if len(data) > max_bytes:
        raise error(str(FileError(path, None, None, f"larger than {max_bytes >> 20} MiB")))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        head = data[:e.start].decode("utf-8")
        raise error(str(FileError(path, line_at(head, len(head)), None,
                                  f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})"))) from None
    return _parse(path, text, error, True)


def _parse(path: Path, text: str, error: Callable[[str], Exception], allow_nan: bool) -> Any:
    try:
        return json.loads(text) if allow_nan else json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise error(f"{path}:{e.lineno}: not JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        raise error(f"{path}: not JSON this suite reads: nested too deeply") from None
    except ValueError as e:                             # an integer of more than 4300 digits
        raise error(f"{path}: not JSON this suite reads: {one_line(str(e))}") from None


def load_strict(path: Path, error: Callable[[str], Exception], max_bytes: int = MAX_BYTES) -> Any:
    """load(), refusing NaN, Infinity and -Infinity."""
    return load(path, error, max_bytes, allow_nan=False)
