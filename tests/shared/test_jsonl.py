"""The JSONL reader turns every bad line into a per-line error and never splits on U+2028."""

from __future__ import annotations

import io
import math

import orjson

from shared.jsonl import dumps_line, iter_jsonl, scrub


def _read(data: bytes, **kw):  # type: ignore[no-untyped-def]
    return list(iter_jsonl(data, **kw))


def test_u2028_inside_a_string_does_not_split_the_row() -> None:
    rows = _read('{"a": "x\u2028y\u2029z"}\n{"b": 1}\n'.encode())
    assert [r.value for r in rows] == [{"a": "x\u2028y\u2029z"}, {"b": 1}]


def test_bom_crlf_and_blank_lines() -> None:
    rows = _read(b'\xef\xbb\xbf{"a": 1}\r\n\r\n   \n{"a": 2}')
    assert [r.value for r in rows] == [{"a": 1}, {"a": 2}]
    assert [r.line_no for r in rows] == [1, 4]


def test_each_bad_line_gets_its_own_error() -> None:
    data = b'{"ok": 1}\n{trunc\n{"s": "\\ud800"}\n\xff\xfe\n{"n": NaN}\n{"ok": 2}\n'
    rows = _read(data)
    assert [r.ok for r in rows] == [True, False, False, False, False, True]
    assert "invalid JSON" in rows[1].error
    assert "surrogate" in rows[2].error
    assert "UTF-8" in rows[3].error
    assert rows[5].value == {"ok": 2}


def test_oversized_line_is_reported_not_loaded() -> None:
    rows = _read(b'{"a": "' + b"x" * 5000 + b'"}\n{"b": 1}', max_line_bytes=1000)
    assert not rows[0].ok and "limit" in rows[0].error
    assert rows[1].value == {"b": 1}


def test_stream_split_across_chunk_boundaries() -> None:
    lines = [orjson.dumps({"i": i, "pad": "é" * (i % 7)}) for i in range(2000)]
    data = b"\n".join(lines)
    rows = list(iter_jsonl(io.BytesIO(data)))
    assert [r.value["i"] for r in rows] == list(range(2000))
    chunks = [data[i : i + 37] for i in range(0, len(data), 37)]
    assert [r.value["i"] for r in iter_jsonl(chunks)] == list(range(2000))


def test_scrub_and_dumps_line_make_bad_values_writable() -> None:
    value = {"s": "a\ud800b", "f": math.nan, "g": [math.inf, 1.5]}
    assert scrub(value) == {"s": "a\ufffdb", "f": None, "g": [None, 1.5]}
    line = dumps_line(value)
    assert line.endswith(b"\n")
    assert orjson.loads(line) == {"s": "a\ufffdb", "f": None, "g": [None, 1.5]}


def test_empty_source_yields_nothing() -> None:
    assert _read(b"") == [] and _read(b"\n\n") == []
