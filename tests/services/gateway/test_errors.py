"""OpenAI-shaped rendering of the shared error tree (the one renderer, as the gateway uses it)."""

from __future__ import annotations

import orjson

from services.gateway.errors import UnknownModel
from shared.errors import Draining, InvalidInput, RateLimited, UpstreamTimeout
from shared.web.openai_errors import (
    openai_error_body,
    openai_error_response,
    openai_error_type,
    retry_after_headers,
    sse_error_event,
)


def test_types_by_status() -> None:
    assert [openai_error_type(s) for s in (400, 401, 403, 404, 409, 413, 422, 429, 502)] == [
        "invalid_request_error", "authentication_error", "permission_error", "invalid_request_error",
        "invalid_request_error", "invalid_request_error", "invalid_request_error", "rate_limit_error", "server_error",
    ]


def test_body_and_response_carry_code_param_and_retry_after() -> None:
    exc = InvalidInput("bad", param="messages[0]")
    body = openai_error_body(exc.message, status=exc.status_code, code=exc.code, param=exc.param).model_dump()
    assert body == {"error": {"message": "bad", "type": "invalid_request_error", "param": "messages[0]", "code": "invalid_input"}}
    resp = openai_error_response(RateLimited("slow down", retry_after_s=0.3))
    assert resp.status_code == 429 and resp.headers["retry-after"] == "1" and resp.headers["retry-after-ms"] == "300"
    unknown = openai_error_response(UnknownModel("no"))
    assert unknown.status_code == 404
    assert orjson.loads(unknown.body)["error"] == {"message": "no", "type": "invalid_request_error", "param": None,
                                                   "code": "model_not_found"}
    assert "retry-after" not in openai_error_response(UpstreamTimeout("late")).headers
    assert openai_error_response(Draining("wait", retry_after_s=5)).headers["retry-after"] == "5"


def test_retry_after_rounds_up_never_down() -> None:
    assert retry_after_headers(None) == {}
    assert retry_after_headers(1.2) == {"retry-after": "2", "retry-after-ms": "1200"}
    assert retry_after_headers(2.5)["retry-after"] == "3"
    assert retry_after_headers(0.0)["retry-after"] == "1"


def test_sse_error_event_is_one_json_event_then_done() -> None:
    raw = sse_error_event(UpstreamTimeout("late"))
    events = [e for e in raw.split(b"\n\n") if e]
    error = orjson.loads(events[0].removeprefix(b"data: "))["error"]
    assert error["code"] == "upstream_timeout" and error["type"] == "server_error"
    assert events[1] == b"data: [DONE]"
