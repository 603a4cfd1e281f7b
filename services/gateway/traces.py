"""Trace records (one per upstream call) and where they are stored.

A ``TraceRecord`` is the row the gateway writes for every upstream call,
successful or not. Storage sits behind ``TraceSink`` so the database table can
replace the in-memory sink without touching the proxy.

Table the database sink needs (``gateway_trace``, one row per upstream call):

    id              text primary key (uuid hex)
    session_id      text null, indexed with sequence
    attempt         text null
    sequence        int   (per session, in arrival order)
    endpoint        text  (/v1/chat/completions | /v1/completions)
    model           text  (public model name)
    replica         text  (replica id that answered, after failover)
    stream          bool
    request         jsonb (body as the client sent it)
    response        jsonb null (OpenAI shape, token arrays and logprobs removed)
    prompt_token_ids, completion_token_ids   int[] / jsonb null
    logprobs        float[] / jsonb null (aligned to completion_token_ids)
    finish_reason   text null
    usage           jsonb null
    latency_ms      float
    retries         int
    weight_version  text null
    status          text  (ok | error)
    http_status     int   (upstream status, or ours when no answer came)
    error_code, error_message   text null
    parse_statuses  jsonb (list of tool-call parse statuses)
    api_key_id      text null
    created_at      timestamptz (epoch seconds here)

Unique on (session_id, attempt, sequence) where session_id is not null.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

__all__ = ["InMemoryTraceSink", "TraceRecord", "TraceSink"]


class TraceRecord(BaseModel):
    """One upstream call: what was asked, what came back, and the engine's own tokens."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    session_id: str | None = None
    attempt: int | None = None
    sequence: int = 0
    endpoint: str
    model: str
    replica: str | None = None
    stream: bool = False
    request: dict[str, Any]
    response: dict[str, Any] | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float | None] | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    latency_ms: float = 0.0
    retries: int = 0
    weight_version: str | None = None
    status: Literal["ok", "error"] = "ok"
    http_status: int = 200
    error_code: str | None = None
    error_message: str | None = None
    parse_statuses: list[str] = Field(default_factory=list)
    api_key_id: str | None = None
    created_at: float = Field(default_factory=time.time)


@runtime_checkable
class TraceSink(Protocol):
    """Where trace records go (the database in production, memory in the embedded default)."""

    async def write(self, record: TraceRecord) -> None:
        """Store one record."""
        ...

    async def session(self, session_id: str) -> list[TraceRecord]:
        """All records of a session, in sequence order."""
        ...


class InMemoryTraceSink:
    """Keeps records in process memory, indexed by session."""

    def __init__(self) -> None:
        self.records: list[TraceRecord] = []
        self._by_session: dict[str, list[TraceRecord]] = defaultdict(list)

    async def write(self, record: TraceRecord) -> None:
        """Store one record."""
        self.records.append(record)
        if record.session_id is not None:
            self._by_session[record.session_id].append(record)

    async def session(self, session_id: str) -> list[TraceRecord]:
        """All records of a session, in sequence order."""
        return sorted(self._by_session.get(session_id, []), key=lambda r: r.sequence)
