"""API keys: missing, malformed, unknown and revoked keys get 401, and no endpoint is left open."""

from __future__ import annotations

import asyncio
import re
import uuid

import pytest
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette.websockets import WebSocketDisconnect

from services.app import all_specs
from shared.auth import ApiKeyInfo, KeyVerifier, create_key, hash_key, parse_bearer, revoke_key
from shared.errors import AuthenticationError

#: Endpoints that are open on purpose: liveness, readiness and metrics (an env's health too).
OPEN_PATHS = {"/healthz", "/readyz", "/metrics", "/envs/{name}/health", "/envs/{name}/k/{key}/health",
              # The console's static page and assets: the same files for everyone, no data in them.
              "/ui", "/ui/{path:path}", "/ui/static/{path:path}", "/ui/config.json"}
#: Capability URLs carry the key in the path (OpenEnv clients cannot send headers).
CAPABILITY = re.compile(r"/k/\{key\}")


def _fill(path: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return str(uuid.uuid4()) if name.endswith("id") else "x"

    return re.sub(r"\{([^}:]+)(?::[^}]+)?\}", value, path)


def _mounted_routes(app) -> list[object]:  # type: ignore[no-untyped-def]
    return [route for router, _ in app.state.trajforge_routers for route in router.routes]


def _http_routes(app) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(m, r.path) for r in _mounted_routes(app) if isinstance(r, APIRoute)
            for m in sorted(r.methods - {"HEAD", "OPTIONS"})]


def _ws_routes(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.path for r in _mounted_routes(app) if isinstance(r, APIWebSocketRoute)]


def test_parse_bearer_messages() -> None:
    with pytest.raises(AuthenticationError, match="missing"):
        parse_bearer(None)
    with pytest.raises(AuthenticationError, match="malformed"):
        parse_bearer("Basic abc")
    assert parse_bearer("Bearer  tf_abc ") == "tf_abc"


async def test_keys_are_stored_hashed(session, settings) -> None:  # type: ignore[no-untyped-def]
    row, key = await create_key(session, "ci", salt=settings.key_salt)
    assert key.startswith("tf_") and key not in row.key_hash
    assert row.key_hash == hash_key(key, salt=settings.key_salt)
    assert row.prefix == key[:10]


async def test_missing_malformed_unknown_and_revoked_keys_get_401(make_client, session, settings) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(all_specs(), authenticated=False)
    path = f"/v1/datasets/{uuid.uuid4()}"
    cases = {
        "missing": {},
        "malformed header": {"authorization": "Token abc"},
        "malformed key": {"authorization": "Bearer not-a-key"},
        "unknown key": {"authorization": "Bearer tf_" + "a" * 43},
    }
    for label, headers in cases.items():
        resp = await client.get(path, headers=headers)
        assert resp.status_code == 401, label
        assert resp.json()["code"] == "invalid_api_key"
    row, key = await create_key(session, "short-lived", salt=settings.key_salt)
    await session.commit()
    good = {"authorization": f"Bearer {key}"}
    assert (await client.get(path, headers=good)).status_code == 404  # authenticated, dataset absent
    await revoke_key(session, row.id)
    await session.commit()
    revoked = await client.get(path, headers=good)
    assert revoked.status_code == 401 and "revoked" in revoked.json()["detail"]


async def test_no_http_endpoint_is_left_open(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(all_specs(), authenticated=False)
    routes = _http_routes(client.app)
    assert len(routes) > 10, "too few routes found"
    open_ = []
    for method, path in routes:
        if path in OPEN_PATHS:
            continue
        url = _fill(CAPABILITY.sub("/k/tf_bogus", path))
        resp = await client.request(method, url)
        if resp.status_code not in (401, 403):
            open_.append(f"{method} {path} -> {resp.status_code}")
    assert not open_, "endpoints answered without a valid key:\n" + "\n".join(open_)


async def test_openapi_lists_no_unprotected_route_beyond_ops(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(all_specs(), authenticated=False)
    paths = client.app.openapi()["paths"]
    for path, ops in paths.items():
        for method in ops:
            if path in OPEN_PATHS:
                continue
            resp = await client.request(method.upper(), _fill(CAPABILITY.sub("/k/tf_bogus", path)))
            assert resp.status_code in (401, 403), f"{method.upper()} {path} answered {resp.status_code}"


def test_websocket_endpoints_refuse_connections_without_a_key(settings) -> None:  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient

    from shared.web import create_app

    app = create_app(all_specs(), settings=settings)
    ws_paths = _ws_routes(app)
    assert ws_paths, "no WebSocket routes found"
    with TestClient(app) as tc:
        for path in ws_paths:
            url = _fill(CAPABILITY.sub("/k/tf_bogus", path))
            with pytest.raises(WebSocketDisconnect), tc.websocket_connect(url) as ws:
                ws.send_json({"type": "reset", "data": {}})
                ws.receive_json()


class _CountingVerifier(KeyVerifier):
    """A verifier that counts its database lookups."""

    lookups = 0

    async def _lookup(self, digest: str) -> ApiKeyInfo | None:
        self.lookups += 1
        return await super()._lookup(digest)


async def test_concurrent_requests_share_one_lookup_per_key(sessionmaker, settings, api_key) -> None:  # type: ignore[no-untyped-def]
    verifier = _CountingVerifier(sessionmaker, salt=settings.key_salt)
    infos = await asyncio.gather(*(verifier.verify(api_key) for _ in range(20)))
    assert {info.name for info in infos} == {"test"} and verifier.lookups == 1
    await verifier.verify(api_key)
    assert verifier.lookups == 1
    with pytest.raises(AuthenticationError):
        await asyncio.gather(*(verifier.verify("tf_" + "x" * 30) for _ in range(5)))
    assert verifier.lookups == 2


def test_the_stored_key_hash_is_hmac_sha256_of_the_key_under_the_salt() -> None:
    """Keys stored by earlier versions keep verifying: the digest is the same HMAC-SHA256 hex."""
    import hashlib
    import hmac

    key, salt = "tf_" + "k" * 40, "salt-é"
    assert hash_key(key, salt=salt) == hmac.new(salt.encode(), key.encode(), hashlib.sha256).hexdigest()


async def test_random_keys_cannot_grow_the_verifier_without_bound(sessionmaker, settings, monkeypatch, api_key) -> None:  # type: ignore[no-untyped-def]
    """Each unknown key leaves a memoised digest and a negative verdict; both are bounded."""
    import shared.auth as auth

    monkeypatch.setattr(auth, "_DIGEST_MEMO_SIZE", 8)
    monkeypatch.setattr(auth, "_VERDICT_CACHE_SIZE", 8)
    verifier = _CountingVerifier(sessionmaker, salt=settings.key_salt)
    for n in range(30):
        with pytest.raises(AuthenticationError):
            await verifier.verify(f"tf_{n:030d}")
        assert len(verifier._digests) <= 8 and len(verifier._cache) <= 8
    assert verifier.lookups == 30
    # The live key still verifies, memoised or not, and its stored form is the HMAC.
    assert (await verifier.verify(api_key)).name == "test"
    assert verifier._digests[api_key] == hash_key(api_key, salt=settings.key_salt)
