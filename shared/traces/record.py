"""The trace record: one per upstream call the gateway forwards.

The gateway writes it for every upstream call, successful or not; the rollout
service reads a session's records back (over the gateway's API) and merges
them into token-exact trajectories, so the type lives here, once.

Table the database sink needs (``gateway_trace``, one row per upstream call):

    id              text primary key (uuid hex)
    session_id      text null, indexed with attempt, created_at, log_id
    attempt         text null
    sequence        int   (per session and attempt: the call's place, 0, 1, ... as read back)
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

The database sink stores the answering replica's own count as ``seq`` and reads
a session in (attempt, created_at, log_id) order, ``log_id`` numbered by the
database at insert, then numbers the records itself: several gateway replicas
may serve one session (``services.gateway.dbsink``).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, Field

from shared.ids import fast_uuid4_hex

__all__ = ["TraceRecord"]


class TraceRecord(BaseModel):
    """One upstream call: what was asked, what came back, and the engine's own tokens."""

    id: str = Field(default_factory=fast_uuid4_hex)
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
