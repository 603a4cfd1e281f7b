"""OpenAI-shaped rendering of the shared error tree."""

from __future__ import annotations

import orjson

from services.gateway.errors import UnknownModel, error_body, error_response, openai_error_type, sse_error_event
from shared.errors import Draining, InvalidInput, RateLimited, UpstreamTimeout


def test_types_by_status() -> None:
    assert [openai_error_type(s) for s in (400, 401, 403, 404, 429, 502)] == [
        "invalid_request_error", "authentication_error", "permission_error", "invalid_request_error", "rate_limit_error", "server_error",
    ]


def test_body_and_response_carry_code_param_and_retry_after() -> None:
    body = error_body(InvalidInput("bad", param="messages[0]")).model_dump()
    assert body == {"error": {"message": "bad", "type": "invalid_request_error", "param": "messages[0]", "code": "invalid_input"}}
    resp = error_response(RateLimited("slow down", retry_after_s=0.3))
    assert resp.status_code == 429 and resp.headers["retry-after"] == "1" and resp.headers["retry-after-ms"] == "300"
    assert error_response(UnknownModel("no")).status_code == 404
    assert "retry-after" not in error_response(UpstreamTimeout("late")).headers
    assert error_response(Draining("wait", retry_after_s=5)).headers["retry-after"] == "5"


def test_sse_error_event_is_one_json_event_then_done() -> None:
    raw = sse_error_event(UpstreamTimeout("late"))
    events = [e for e in raw.split(b"\n\n") if e]
    assert orjson.loads(events[0].removeprefix(b"data: "))["error"]["code"] == "upstream_timeout"
    assert events[1] == b"data: [DONE]"
