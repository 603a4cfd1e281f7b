"""The call context: session and attempt from path or headers, and the rate-limit key of the caller."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from services.gateway.deps import context_of
from shared.errors import InvalidInput


def _ctx(**given: object):  # type: ignore[no-untyped-def]
    facts: dict[str, object] = {"authorization": None, "session_header": None, "attempt_header": None,
                                "client_host": "10.0.0.7", "api_key": None, "session_id": None, "attempt": None}
    facts.update(given)
    return context_of(**facts)  # type: ignore[arg-type]


def test_a_verified_key_is_rate_limited_by_its_id() -> None:
    key = SimpleNamespace(id=uuid.uuid4())
    first = _ctx(authorization="Bearer tf_" + "a" * 40, api_key=key)
    again = _ctx(authorization="bearer  tf_" + "a" * 40, api_key=key)  # another spelling of the same header
    assert first.rate_key == again.rate_key == f"key:{key.id}"
    assert first.api_key_id == str(key.id)


def test_without_a_verified_key_the_header_is_hashed_and_never_kept() -> None:
    secret = "Bearer tf_" + "s" * 40
    ctx = _ctx(authorization=secret)
    assert ctx.rate_key.startswith("key:") and "tf_" not in ctx.rate_key and ctx.rate_key == _ctx(
        authorization=secret).rate_key != _ctx(authorization=secret + "x").rate_key
    assert _ctx().rate_key == "ip:10.0.0.7" and _ctx(client_host=None).rate_key == "ip:unknown"


def test_path_values_win_over_headers_and_bad_attempt_headers_are_refused() -> None:
    ctx = _ctx(session_id="s-path", session_header="s-header", attempt=2, attempt_header="5")
    assert (ctx.session_id, ctx.attempt) == ("s-path", 2)
    assert (_ctx(session_header="s-header", attempt_header="5").session_id, _ctx(attempt_header=" 5").attempt) == (
        "s-header", 5)
    with pytest.raises(InvalidInput):
        _ctx(attempt_header="-1")
