"""Structured JSON logs with request ids; capability keys never reach a log line."""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

import orjson

from shared.web.context import current_request_id

__all__ = ["JsonFormatter", "configure_logging", "redact_path"]

_KEY_SEGMENT = re.compile(r"/k/[^/]+")
_STD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "color_message"}


def redact_path(path: str) -> str:
    """Hide keys carried as path segments (``/envs/x/k/<key>/ws``)."""
    return _KEY_SEGMENT.sub("/k/***", path)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, extras."""

    # The time has a resolution of one second; the access log writes a line per request.
    _ts_second = -1
    _ts_text = ""

    def _timestamp(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        if second != self._ts_second:
            self._ts_text, self._ts_second = self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), second
        return self._ts_text

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": self._timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = current_request_id()
        if rid:
            out["request_id"] = rid
        for k, v in record.__dict__.items():
            if k not in _STD and not k.startswith("_"):
                out[k] = v
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


def configure_logging(level: str = "INFO", *, json: bool = True) -> None:
    """Route the root logger to stderr in JSON (or plain text for humans)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json else logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Our middleware writes the access log; alembic's context chatter is noise at INFO.
    logging.getLogger("uvicorn.access").handlers[:] = []
    logging.getLogger("uvicorn.access").propagate = False
    logging.getLogger("alembic").setLevel(logging.WARNING)
    # Neither format prints where a call was made or which thread or process made it; not collecting
    # those (the logging HOWTO's optimisations) saves a stack walk and three lookups per line, which
    # the access log writes for every request.
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
