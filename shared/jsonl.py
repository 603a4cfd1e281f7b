"""Robust JSONL reading and JSON-safe writing, shared by every service.

Rows are split on ``b"\\n"`` only (``str.splitlines`` would also split on
U+2028/U+2029 inside strings). Each line is decoded on its own, so a bad line
becomes a per-row error instead of failing the file: invalid UTF-8, lone
surrogates, NaN, truncated objects and oversized lines are all reported with
their line number and cause.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

__all__ = [
    "JsonlRecord",
    "dumps_line",
    "iter_jsonl",
    "iter_jsonl_path",
    "scrub",
]

_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20


@dataclass(slots=True)
class JsonlRecord:
    """One line of a JSONL source: its value, or why it could not be read."""

    line_no: int
    value: Any = None
    error: str | None = None
    raw: bytes = b""

    @property
    def ok(self) -> bool:
        return self.error is None


def _decode_line(line_no: int, line: bytes, max_line_bytes: int) -> JsonlRecord:
    if len(line) > max_line_bytes:
        return JsonlRecord(
            line_no,
            error=f"line is {len(line):,} bytes, over the {max_line_bytes:,}-byte limit",
            raw=line[:200],
        )
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return JsonlRecord(line_no, error=_explain(line, exc), raw=line[:200])
    return JsonlRecord(line_no, value=value)


def _explain(line: bytes, exc: orjson.JSONDecodeError) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as ude:
        return f"invalid UTF-8 at byte {ude.start}"
    msg = str(exc)
    if "surrogate" in msg.lower():
        return f"lone UTF-16 surrogate escape: {msg}"
    return f"invalid JSON: {msg}"


def _split(chunks: Iterable[bytes]) -> Iterator[bytes]:
    pending = b""
    first = True
    for chunk in chunks:
        if first and chunk.startswith(_BOM):
            chunk = chunk[len(_BOM) :]
        first = False if chunk else first
        pending += chunk
        *lines, pending = pending.split(b"\n")
        yield from lines
    if pending:
        yield pending


def iter_jsonl(
    source: bytes | IO[bytes] | Iterable[bytes], *, max_line_bytes: int = 64 * 1024 * 1024
) -> Iterator[JsonlRecord]:
    """Yield one record per non-blank line of a JSONL byte source, with per-line errors."""
    if isinstance(source, bytes):
        chunks: Iterable[bytes] = (source,)
    elif hasattr(source, "read"):
        stream = source
        chunks = iter(lambda: stream.read(_CHUNK), b"")
    else:
        chunks = source
    for line_no, line in enumerate(_split(chunks), start=1):
        line = line.rstrip(b"\r")
        if not line.strip():
            continue
        yield _decode_line(line_no, line, max_line_bytes)


def iter_jsonl_path(path: str | Path, **kwargs: Any) -> Iterator[JsonlRecord]:
    """Read a JSONL file lazily, line by line, with per-line errors."""
    with open(path, "rb") as fh:
        yield from iter_jsonl(fh, **kwargs)


def scrub(value: Any) -> Any:
    """Make a value JSON- and UTF-8-safe: NaN/inf become None, lone surrogates U+FFFD."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            # Round-trip through UTF-16 turns each lone surrogate into U+FFFD.
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value


_LINE = orjson.OPT_APPEND_NEWLINE
_LINE_ANY_KEYS = _LINE | orjson.OPT_NON_STR_KEYS


def dumps_line(value: Any) -> bytes:
    """One JSONL line (with ``\\n``); values orjson refuses are scrubbed first."""
    try:
        # String keys are the rule, and orjson writes them faster without OPT_NON_STR_KEYS.
        return orjson.dumps(value, option=_LINE)
    except TypeError:
        pass
    try:
        return orjson.dumps(value, option=_LINE_ANY_KEYS)
    except TypeError:
        return dumps_wide(value) + b"\n"


def dumps_wide(value: Any) -> bytes:
    """JSON for values orjson refuses: scrubbed, and integers past 64 bits kept exact (JSON allows them)."""
    clean = scrub(value)
    try:
        return orjson.dumps(clean, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        # orjson stops at 64-bit integers; the standard library writes any integer exactly.
        return json.dumps(clean, ensure_ascii=False, separators=(",", ":"), default=str).encode()
