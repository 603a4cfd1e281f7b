"""The stored form of program output: text when clean, base64 otherwise, never lossy."""

from __future__ import annotations

import json

import pytest

from shared.sandbox.output import decode_stream, encode_stream, readable, safe_text, trim_partial_utf8


@pytest.mark.parametrize(
    "data, encoding",
    [
        (b"plain text\n", "utf-8"),
        ("h\u00e9llo \u4e16\u754c \U0001f600".encode(), "utf-8"),
        (b"nul\x00inside", "base64"),
        (b"bad \xff byte", "base64"),
        (b"surrogate \xed\xa0\x80 encoded", "base64"),
        (b"", "utf-8"),
    ],
)
def test_every_stream_round_trips_exactly(data: bytes, encoding: str) -> None:
    value, used = encode_stream(data)
    assert used == encoding and decode_stream(value, used) == data
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # storable as JSON text
    assert "\x00" not in value


def test_readable_escapes_what_cannot_be_stored() -> None:
    assert readable(b"a\x00b\xffc") == "a\\x00b\\xffc"
    assert safe_text("x\x00y\ud800z") == "x\\x00y\\ud800z"
    assert safe_text("clean") == "clean"


def test_a_cap_that_cuts_a_character_drops_only_the_stub() -> None:
    smile = "\U0001f600".encode()
    assert trim_partial_utf8(b"ok" + smile[:3]) == b"ok"
    assert trim_partial_utf8(b"ok" + smile) == b"ok" + smile
    assert trim_partial_utf8(b"ok\xc3") == b"ok"
    assert trim_partial_utf8(b"ok") == b"ok"
