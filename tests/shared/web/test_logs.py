"""The JSON log formatter: one object per line, its time to the second."""

from __future__ import annotations

import logging
import time

import orjson

from shared.web.logs import JsonFormatter


def _record(created: float, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("trajforge.access", logging.INFO, "", 0, "request", None, None)
    record.created = created
    record.__dict__.update(extra)
    return record


def test_each_line_carries_its_own_second_and_extras() -> None:
    fmt = JsonFormatter()
    base = float(int(time.time()))
    first = orjson.loads(fmt.format(_record(base + 0.1, status=200)))
    same = orjson.loads(fmt.format(_record(base + 0.9, status=201)))
    later = orjson.loads(fmt.format(_record(base + 61.2, status=404)))
    expected = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))  # noqa: E731
    assert first["ts"] == same["ts"] == expected(base)
    assert later["ts"] == expected(base + 61) != first["ts"]
    assert (first["status"], same["status"], later["status"]) == (200, 201, 404)
    assert first["msg"] == "request" and first["logger"] == "trajforge.access" and first["level"] == "INFO"
