"""One ASGI middleware for every app: request ids, size limits, JSON check, metrics, access log.

JSON request bodies are parsed once here with orjson, which refuses what
would otherwise become a 500 later (lone surrogates, NaN, invalid UTF-8): the
client gets a clear 400 instead.
"""

from __future__ import annotations

import re
import time
from typing import Any

import orjson
from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.errors import PayloadTooLarge
from shared.ids import fast_uuid4_hex
from shared.web.context import request_id_var
from shared.web.errors import error_response
from shared.web.logs import AccessLog, redact_path

__all__ = ["PARSED_BODY_KEY", "RequestMiddleware", "parsed_body"]

access_log = AccessLog("trajforge.access")
_RID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
#: Scope key of ``(body bytes, their decoded JSON)`` for JSON requests.
PARSED_BODY_KEY = "trajforge.parsed_body"

REQUESTS = Counter("trajforge_http_requests_total", "HTTP requests", ["service", "method", "route", "status"])
LATENCY = Histogram(
    "trajforge_http_request_seconds", "HTTP request latency", ["service", "method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)


class _TooLarge(PayloadTooLarge):
    def __init__(self, limit: int = 0) -> None:
        super().__init__(f"request body is larger than the {limit:,}-byte limit")


def _route_label(scope: Scope) -> str:
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"


class RequestMiddleware:
    """Request id in and out, body limits, JSON validation, metrics and access logs."""

    def __init__(self, app: ASGIApp, *, service: str, max_body_bytes: int) -> None:
        self.app = app
        self.service = service
        self.max_body_bytes = max_body_bytes
        # Metric children by (method, route, status): ``labels()`` takes a lock and builds a key per call.
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def _series(self, method: str, route: str, status: int) -> tuple[Any, Any]:
        key = (method, route, status)
        found = self._children.get(key)
        if found is None:
            if len(self._children) > 4096:  # unmatched paths are one label, but stay bounded anyway
                self._children.clear()
            found = (REQUESTS.labels(self.service, method, route, str(status)),
                     LATENCY.labels(self.service, method, route))
            self._children[key] = found
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        incoming = headers.get(b"x-request-id", b"").decode("latin-1")
        rid = incoming if _RID.match(incoming) else fast_uuid4_hex()
        token = request_id_var.set(rid)
        start = time.perf_counter()
        status_box = [500]
        try:
            await self._handle(scope, receive, send, headers, rid, status_box)
        finally:
            self._observe(scope, status_box[0], time.perf_counter() - start)
            request_id_var.reset(token)

    async def _handle(self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes],
                      rid: str, status_box: list[int]) -> None:
        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [(b"x-request-id", rid.encode())]
            await send(message)

        path = scope.get("path", "")
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._reject_large(path, scope, receive, send_with_id)
            return
        if scope["method"] in ("POST", "PUT", "PATCH") and _is_json(headers.get(b"content-type", b"")):
            try:
                body = await self._read_body(receive)
            except _TooLarge:
                await self._reject_large(path, scope, receive, send_with_id)
                return
            if body:
                try:
                    parsed = orjson.loads(body)
                except orjson.JSONDecodeError as exc:
                    resp = error_response(path, 400, f"request body is not valid JSON: {exc}", code="invalid_json")
                    await resp(scope, receive, send_with_id)
                    return
                # Kept with the bytes it came from, so a handler that reads those bytes need not parse again.
                scope[PARSED_BODY_KEY] = (body, parsed)
            receive = _replay(body, receive)
        else:
            receive = self._limited(receive)
        await self.app(scope, receive, send_with_id)

    async def _read_body(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _TooLarge(self.max_body_bytes)
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        return b"".join(chunks)

    def _limited(self, receive: Receive) -> Receive:
        seen = [0]
        limit = self.max_body_bytes

        async def wrapped() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                seen[0] += len(message.get("body", b""))
                if seen[0] > limit:
                    raise _TooLarge(limit)
            return message

        return wrapped

    async def _reject_large(self, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        resp = error_response(path, 413, f"request body is larger than the {self.max_body_bytes:,}-byte limit",
                              code="payload_too_large")
        await resp(scope, receive, send)

    def _observe(self, scope: Scope, status: int, seconds: float) -> None:
        route = _route_label(scope)
        count, latency = self._series(scope["method"], route, status)
        count.inc()
        latency.observe(seconds)
        if route not in ("/healthz", "/metrics"):
            access_log.request(method=scope["method"], path=redact_path(scope.get("path", "")), status=status,
                               ms=round(seconds * 1000, 2))


def parsed_body(scope: Scope, raw: bytes) -> Any:
    """The JSON this middleware decoded from exactly ``raw`` (the same bytes object), else ``None``."""
    kept = scope.get(PARSED_BODY_KEY)
    return kept[1] if kept is not None and kept[0] is raw else None


def _is_json(content_type: bytes) -> bool:
    """application/json or any +json type (not application/x-ndjson, which is JSONL)."""
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or media.endswith(b"+json")


def _replay(body: bytes, original: Receive) -> Receive:
    """Hand the buffered body to the app once, then wait on the real channel (disconnects)."""
    sent = [False]

    async def receive() -> Message:
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await original()

    return receive
