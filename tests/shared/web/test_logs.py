"""The JSON log formatter (one object per line, its time to the second) and the access log."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Iterator

import orjson
import pytest

from shared.web.context import request_id_var
from shared.web.logs import AccessLog, JsonFormatter, JsonStreamHandler, configure_logging


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


@pytest.fixture
def root_logging() -> Iterator[None]:
    """Put the root logger back as it was (``configure_logging`` replaces its handlers)."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging._srcfile, logging.logThreads
    yield
    root.handlers[:], root.level = saved[0], saved[1]
    logging._srcfile, logging.logThreads = saved[2], saved[3]


def _configured(level: str = "INFO") -> io.StringIO:
    configure_logging(level, json=True)
    stream = io.StringIO()
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, JsonStreamHandler)
    handler.setStream(stream)
    return stream


def test_the_direct_access_line_is_the_line_a_record_makes(root_logging: None) -> None:
    stream = _configured()
    fields = {"method": "POST", "path": "/v1/chat/completions", "status": 200, "ms": 1.25}
    token = request_id_var.set("rid-1")
    try:
        AccessLog("trajforge.access").request(**fields)
        logging.getLogger("trajforge.access").info("request", extra=fields)  # the logging module's own path
    finally:
        request_id_var.reset(token)
    direct, through_record = (orjson.loads(line) for line in stream.getvalue().splitlines())
    assert list(direct) == list(through_record) == ["ts", "level", "logger", "msg", "request_id", "method", "path",
                                                    "status", "ms"]
    direct.pop("ts"), through_record.pop("ts")
    assert direct == through_record == {"level": "INFO", "logger": "trajforge.access", "msg": "request",
                                        "request_id": "rid-1", **fields}


def test_the_access_log_honours_levels_filters_and_other_handlers(root_logging: None) -> None:
    stream = _configured("WARNING")
    access = AccessLog("trajforge.access")
    access.request(method="GET", path="/x", status=200, ms=0.1)
    assert stream.getvalue() == ""  # below the level: nothing, on either path
    logging.getLogger().setLevel(logging.INFO)
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    extra = Keep()
    access.logger.addHandler(extra)
    drop_posts = logging.Filter()
    drop_posts.filter = lambda record: getattr(record, "method", "") != "POST"  # type: ignore[method-assign]
    access.logger.addFilter(drop_posts)
    try:
        access.request(method="GET", path="/y", status=404, ms=0.2)
        access.request(method="POST", path="/z", status=200, ms=0.3)
    finally:
        access.logger.removeHandler(extra)
        access.logger.removeFilter(drop_posts)
    # A handler or filter added to the logger takes the logging module's path: the filter ran, both handlers saw GET.
    assert [(r.method, r.path) for r in seen] == [("GET", "/y")]  # type: ignore[attr-defined]
    assert [orjson.loads(line)["path"] for line in stream.getvalue().splitlines()] == ["/y"]


def test_plain_text_logs_get_access_lines_through_their_own_format(root_logging: None) -> None:
    configure_logging("INFO", json=False)
    stream = io.StringIO()
    logging.getLogger().handlers[0].setStream(stream)  # type: ignore[attr-defined]
    AccessLog("trajforge.access").request(method="GET", path="/p", status=200, ms=0.5)
    assert stream.getvalue() == "INFO trajforge.access: request\n"
