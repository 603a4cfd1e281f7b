"""The caller's bearer key, as services present it when they call another service for a request."""

from __future__ import annotations

from starlette.requests import Request

from shared.web.deps import caller_key


def _request(authorization: str | None) -> Request:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": headers})


def test_the_bearer_key_is_read_and_anything_else_is_none() -> None:
    assert caller_key(_request("Bearer tf-abc123")) == "tf-abc123"
    assert caller_key(_request("bearer   tf-abc123  ")) == "tf-abc123"
    for header in (None, "", "Basic dXNlcjpwYXNz", "Bearer ", "Bearertf-abc", "tf-abc123"):
        assert caller_key(_request(header)) is None, header
