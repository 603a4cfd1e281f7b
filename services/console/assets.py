"""The console's static files, read from this package (no CDN, nothing fetched at run time)."""

from __future__ import annotations

import mimetypes
from pathlib import Path

from shared.errors import NotFound

__all__ = ["STATIC_DIR", "asset", "index_html"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}


def asset(relative: str) -> tuple[bytes, str]:
    """Bytes and media type of one static file; 404 for anything outside the static folder."""
    path = (STATIC_DIR / relative).resolve()
    if not path.is_relative_to(STATIC_DIR) or not path.is_file():
        raise NotFound(f"no console asset {relative!r}", param="path")
    media = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return path.read_bytes(), media


def index_html() -> bytes:
    """The single page every ``/ui/...`` route answers with (the browser routes from there)."""
    return (STATIC_DIR / "index.html").read_bytes()
