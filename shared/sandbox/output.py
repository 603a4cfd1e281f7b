"""Program output in a form the system of record can always store.

Postgres ``text`` and ``jsonb`` hold neither NUL nor invalid UTF-8, and JSON
cannot carry a lone UTF-16 surrogate, yet a program may write any bytes. The
rule, per stream (stdout and stderr separately):

* valid UTF-8 without NUL: carried as the text itself, ``encoding="utf-8"``;
* anything else: the exact bytes carried base64 (RFC 4648, with padding),
  ``encoding="base64"``. Nothing is dropped or replaced.

The model-facing view (``readable``) shows such bytes as ``\\xNN`` escapes
(NUL as ``\\x00``): lossy by design, never the stored value. ``safe_text``
applies the same escape to a Python ``str`` from any source (lone
surrogates become ``\\udXXX``), so rendered tool content is always storable.
"""

from __future__ import annotations

import base64
import re
from typing import Literal

__all__ = ["StreamEncoding", "decode_stream", "encode_stream", "readable", "safe_text", "trim_partial_utf8"]

StreamEncoding = Literal["utf-8", "base64"]
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def trim_partial_utf8(data: bytes) -> bytes:
    """Drop an incomplete multi-byte sequence at the very end (an output cap cut it)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:  # a lead byte: is its sequence complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


def encode_stream(data: bytes) -> tuple[str, StreamEncoding]:
    """The stored form of one stream: its text, or base64 when the bytes are not clean UTF-8."""
    try:
        text = data.decode("utf-8")  # strict: rejects invalid bytes and encoded surrogates
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"
    if "\x00" in text:
        return base64.b64encode(data).decode("ascii"), "base64"
    return text, "utf-8"


def decode_stream(value: str, encoding: StreamEncoding) -> bytes:
    """The exact bytes behind a stored stream."""
    return base64.b64decode(value) if encoding == "base64" else value.encode("utf-8")


def readable(data: bytes) -> str:
    """Text for a model to read: invalid bytes and NUL as ``\\xNN`` escapes."""
    return safe_text(data.decode("utf-8", errors="backslashreplace"))


def safe_text(text: str) -> str:
    """``text`` with NUL and lone surrogates escaped, so Postgres and JSON can hold it."""
    if not _UNSTORABLE.search(text):
        return text
    return _UNSTORABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if m.group() == "\x00" else
                           f"\\u{ord(m.group()):04x}", text)
