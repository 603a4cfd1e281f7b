"""JSON responses that never turn bad data into a 500.

orjson writes NaN/inf as null; a lone surrogate (which orjson refuses) is
replaced by U+FFFD instead of failing the response.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import JSONResponse

from shared.jsonl import dumps_wide, scrub

__all__ = ["SafeJSONResponse", "dumps"]

_OPTS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def dumps(content: Any) -> bytes:
    """Serialise to JSON bytes, scrubbing values JSON cannot carry."""
    try:
        return orjson.dumps(content, option=_OPTS)
    except TypeError:
        pass
    try:
        return orjson.dumps(scrub(content), option=_OPTS, default=str)
    except TypeError:  # an integer past 64 bits
        return dumps_wide(content)


class SafeJSONResponse(JSONResponse):
    """The default response class of every trajforge app."""

    def render(self, content: Any) -> bytes:
        return dumps(content)
