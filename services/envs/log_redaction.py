"""Keep capability keys out of logs: ``/envs/{name}/k/{key}/...`` is logged as ``/k/***/``."""

from __future__ import annotations

import logging
import re

__all__ = ["RedactCapabilityKeys", "redact_path"]

_KEY_SEGMENT = re.compile(r"(/envs/[^/\s]+/k/)[^/\s?]+")


def redact_path(text: str) -> str:
    """Replace the key segment of every capability URL in ``text``."""
    return _KEY_SEGMENT.sub(r"\1***", text)


class RedactCapabilityKeys(logging.Filter):
    """Logging filter for access logs (e.g. ``uvicorn.access``) that redacts capability keys."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the message arguments in place; never drops a record."""
        if isinstance(record.args, tuple):
            record.args = tuple(redact_path(a) if isinstance(a, str) else a for a in record.args)
        record.msg = redact_path(record.msg) if isinstance(record.msg, str) else record.msg
        return True
