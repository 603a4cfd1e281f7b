"""API keys: bearer tokens, stored as salted hashes, checked on every non-health endpoint.

Every key has a scope:

- ``admin``: everything, including the deployment's configuration (gateway
  upstreams, drain/resume, the inference engine's control routes).
- ``user``: data, jobs, scoring, tools, envs and gateway sessions; 403 on admin routes.
- ``session``: one gateway session only (``/sessions/{its id}/...``), for the
  rollout processors a shard runs; 403 everywhere else.

Keys created before scopes existed became ``admin`` in the migration that added
them, so an upgrade never locks an operator out; new keys default to ``user``.

A key is shown once when created (``trajforge keys create NAME``); the
database keeps only its HMAC-SHA256 under ``TRAJFORGE_KEY_SALT`` and a short
prefix for listing. Verified keys are cached briefly so the hot paths (the
gateway above all) do not hit the database per request; revoking a key clears
the cache of the process that revoked it, and other processes within
``CACHE_TTL_S``. When an entry expires under load, one lookup refreshes it and
the concurrent requests with the same key wait for that one, rather than each
querying (and updating ``last_used_at`` of) the same row at once.
"""

from __future__ import annotations

import asyncio
import hmac
import re
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Literal, get_args

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.db.base import utcnow
from shared.db.models import ApiKeyRow
from shared.errors import AuthenticationError, InvalidInput, NotFound, PermissionDenied

__all__ = [
    "CACHE_TTL_S",
    "KEY_PATTERN",
    "ApiKeyInfo",
    "SCOPES",
    "KeyVerifier",
    "Scope",
    "check_scope",
    "create_key",
    "hash_key",
    "list_keys",
    "parse_bearer",
    "revoke_key",
]

KEY_PATTERN = re.compile(r"^tf_[A-Za-z0-9_-]{20,100}$")
CACHE_TTL_S = 10.0
#: Keys whose stored form each verifier keeps (cleared when full: random keys cannot grow it).
_DIGEST_MEMO_SIZE = 4096
#: Verdicts each verifier keeps, live and unknown keys alike (cleared when full, for the same reason).
_VERDICT_CACHE_SIZE = 65536
Scope = Literal["admin", "user", "session"]
SCOPES: tuple[Scope, ...] = get_args(Scope)


@dataclass(frozen=True, slots=True)
class ApiKeyInfo:
    """The authenticated caller: which key, its scope, and for a session key its session."""

    id: uuid.UUID
    name: str
    scope: Scope = "user"
    session_id: str | None = None


def check_scope(info: ApiKeyInfo, allowed: tuple[Scope, ...], *, session_id: str | None = None) -> None:
    """403 unless the key's scope is allowed here; a session key also needs its own ``session_id``."""
    if info.scope == "session":
        if "session" in allowed and session_id is not None and session_id == info.session_id:
            return
        raise PermissionDenied("this key is scoped to one gateway session and opens only "
                               f"/sessions/{info.session_id}/...")
    if info.scope not in allowed:
        needed = " or ".join(s for s in allowed if s != "session")
        raise PermissionDenied(f"this route needs a key with scope {needed}; key {info.name!r} has scope {info.scope}")


def hash_key(key: str, *, salt: str) -> str:
    """The stored form of a key."""
    # The one-shot C digest: the same value as hmac.new(...).hexdigest(), at a third of the cost.
    return hmac.digest(salt.encode(), key.encode(), "sha256").hex()


def _new_key() -> str:
    return "tf_" + secrets.token_urlsafe(32)


async def create_key(session: AsyncSession, name: str, *, salt: str, scope: Scope = "user",
                     session_id: str | None = None) -> tuple[ApiKeyRow, str]:
    """Create a key; returns the row and the only copy of the plaintext key."""
    if scope not in SCOPES:
        raise InvalidInput(f"unknown key scope {scope!r}; choose one of {', '.join(SCOPES)}", param="scope")
    if (scope == "session") != (session_id is not None):
        raise InvalidInput("a session key needs its session id, and only a session key takes one", param="session_id")
    key = _new_key()
    row = ApiKeyRow(name=name, prefix=key[:10], key_hash=hash_key(key, salt=salt), scope=scope,
                    session_id=session_id)
    session.add(row)
    await session.flush()
    return row, key


async def list_keys(session: AsyncSession) -> list[ApiKeyRow]:
    """All keys, newest first (hashes only)."""
    rows = await session.execute(select(ApiKeyRow).order_by(ApiKeyRow.created_at.desc()))
    return list(rows.scalars())


async def revoke_key(session: AsyncSession, key_id: uuid.UUID) -> ApiKeyRow:
    """Mark a key revoked; it stops working at once in this process."""
    row = await session.get(ApiKeyRow, key_id)
    if row is None:
        raise NotFound(f"no API key with id {key_id}")
    row.revoked_at = row.revoked_at or utcnow()
    await session.flush()
    KeyVerifier.clear_all()
    return row


def parse_bearer(header: str | None) -> str:
    """The key from an ``Authorization: Bearer <key>`` header, or a clear 401."""
    if not header:
        raise AuthenticationError("missing API key: send `Authorization: Bearer <key>`")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise AuthenticationError("malformed Authorization header: expected `Bearer <key>`")
    return value.strip()


class KeyVerifier:
    """Checks keys against the database with a short positive/negative cache."""

    _instances: list[KeyVerifier] = []

    def __init__(self, maker: async_sessionmaker[AsyncSession], *, salt: str) -> None:
        self._maker = maker
        self._salt = salt
        self._cache: dict[str, tuple[float, ApiKeyInfo | None]] = {}
        # The stored form of each key seen lately: an HMAC per request was a fiftieth of a proxied call's CPU.
        self._digests: dict[str, str] = {}
        self._pending: dict[str, asyncio.Future[ApiKeyInfo | None]] = {}
        KeyVerifier._instances.append(self)

    @classmethod
    def clear_all(cls) -> None:
        for inst in cls._instances:
            inst._cache.clear()

    async def verify(self, key: str) -> ApiKeyInfo:
        """The caller behind ``key``; raises ``AuthenticationError`` if it is not a live key."""
        if not KEY_PATTERN.match(key):
            raise AuthenticationError("malformed API key: keys look like `tf_...`")
        digest = self._digests.get(key)
        if digest is None:
            if len(self._digests) >= _DIGEST_MEMO_SIZE:
                self._digests.clear()
            digest = self._digests[key] = hash_key(key, salt=self._salt)
        hit = self._cache.get(digest)
        if hit is not None and time.monotonic() - hit[0] < CACHE_TTL_S:
            info = hit[1]
        else:
            info = await self._shared_lookup(digest)
        if info is None:
            raise AuthenticationError("invalid or revoked API key")
        return info

    async def _shared_lookup(self, digest: str) -> ApiKeyInfo | None:
        """One database lookup per key at a time; concurrent callers await the same one."""
        pending = self._pending.get(digest)
        if pending is None:
            pending = asyncio.ensure_future(self._refresh(digest))
            self._pending[digest] = pending
        # Shielded: a caller that goes away does not cancel the lookup the others wait on.
        return await asyncio.shield(pending)

    async def _refresh(self, digest: str) -> ApiKeyInfo | None:
        try:
            info = await self._lookup(digest)
            if len(self._cache) >= _VERDICT_CACHE_SIZE:
                self._cache.clear()
            self._cache[digest] = (time.monotonic(), info)
            return info
        finally:
            self._pending.pop(digest, None)

    async def _lookup(self, digest: str) -> ApiKeyInfo | None:
        async with self._maker() as session:
            row = (await session.execute(select(ApiKeyRow).where(ApiKeyRow.key_hash == digest))).scalar_one_or_none()
            if row is None or row.revoked_at is not None or row.scope not in SCOPES:
                return None  # an unknown scope (a newer schema's) opens nothing here
            row.last_used_at = utcnow()
            await session.commit()
            scope: Scope = row.scope  # checked against SCOPES above
            return ApiKeyInfo(id=row.id, name=row.name, scope=scope, session_id=row.session_id)
