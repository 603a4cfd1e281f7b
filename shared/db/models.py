"""The system of record: every dataset, job, trajectory, trace and score.

Tables (singular snake_case, ``XRow`` classes):

- ``api_key``: hashed bearer keys.
- ``task_execution``: idempotency ledger of queue tasks (one row per task key).
- ``dataset`` / ``dataset_row``: uploaded JSONL, one row per line.
- ``cleaning_job`` / ``cleaned_row``: a pipeline run over a dataset and the
  outcome of every input row (kept, dropped with step + reason, or invalid).
- ``dedup_signature``: per cleaning job, the winning row of each dedup signature.
- ``rollout_job`` / ``trajectory_group`` / ``trajectory``: rollouts, keyed by
  (job, task, member, attempt) so retries never duplicate.
- ``gateway_trace``: one row per upstream call made through the gateway.
- ``reward``: one row per (trajectory, component, spec) score, with provenance;
  ``reward_spec`` keeps each spec by its hash so a stored score says exactly
  how it was made.
- ``opd_job``: an on-policy distillation job (student, teacher, function
  components, datasets) and its rounds, each a training and a validation
  rollout job.
- ``memory``: agent memories per namespace with their embeddings (float32
  bytes), written over REST or by the ``memory_write`` tool, ranked by
  ``memory_search``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.schema import FetchedValue

from shared.db.base import Base, IdMixin, TimestampMixin, utcnow

__all__ = [
    "ApiKeyRow",
    "CleanedRowRow",
    "CleaningJobRow",
    "DatasetRow",
    "DatasetRowRow",
    "DedupSignatureRow",
    "GatewayTraceRow",
    "MemoryRow",
    "OpdJobRow",
    "RewardRow",
    "RewardSpecRow",
    "RolloutJobRow",
    "TaskExecutionRow",
    "TrajectoryGroupRow",
    "TrajectoryRow",
]


class ApiKeyRow(IdMixin, Base):
    __tablename__ = "api_key"

    name: Mapped[str] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(16), index=True)
    key_hash: Mapped[str] = mapped_column(String(128), unique=True)
    #: ``admin`` | ``user`` | ``session`` (see ``shared.auth``); keys made before scopes existed are admin.
    scope: Mapped[str] = mapped_column(String(16), default="user", server_default="user")
    #: The one gateway session a ``session`` key opens; null for other scopes.
    session_id: Mapped[str | None] = mapped_column(String(400))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class TaskExecutionRow(Base):
    __tablename__ = "task_execution"

    key: Mapped[str] = mapped_column(String(400), primary_key=True)
    task_name: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), default="running")
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    result: Mapped[dict[str, Any] | None] = mapped_column()
    error: Mapped[str | None] = mapped_column(Text)


class DatasetRow(IdMixin, TimestampMixin, Base):
    __tablename__ = "dataset"

    name: Mapped[str] = mapped_column(String(300))
    row_count: Mapped[int] = mapped_column(Integer, default=0)
    invalid_count: Mapped[int] = mapped_column(Integer, default=0)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)


class DatasetRowRow(Base):
    __tablename__ = "dataset_row"
    __table_args__ = (UniqueConstraint("dataset_id", "row_index"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    dataset_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("dataset.id", ondelete="CASCADE"), index=True
    )
    row_index: Mapped[int] = mapped_column(Integer)
    # None when the line could not be read; ``error`` then says why.
    data: Mapped[dict[str, Any] | None] = mapped_column()
    error: Mapped[str | None] = mapped_column(Text)


class CleaningJobRow(IdMixin, TimestampMixin, Base):
    __tablename__ = "cleaning_job"

    dataset_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("dataset.id"), index=True)
    status: Mapped[str] = mapped_column(String(20), default="pending")
    pipeline: Mapped[list[Any]] = mapped_column(default=list)
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    kept: Mapped[int] = mapped_column(Integer, default=0)
    dropped: Mapped[int] = mapped_column(Integer, default=0)
    invalid: Mapped[int] = mapped_column(Integer, default=0)
    stats: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[str | None] = mapped_column(Text)


class CleanedRowRow(Base):
    __tablename__ = "cleaned_row"
    __table_args__ = (
        UniqueConstraint("job_id", "row_index"),
        Index("ix_cleaned_row_job_outcome_reason", "job_id", "outcome", "reason"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    job_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("cleaning_job.id", ondelete="CASCADE"))
    row_index: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(String(10))  # kept | dropped | invalid
    step: Mapped[str | None] = mapped_column(String(100))
    reason: Mapped[str | None] = mapped_column(String(200))
    data: Mapped[dict[str, Any] | None] = mapped_column()


class DedupSignatureRow(Base):
    """Best (message count, row position) per dedup signature of a cleaning job."""

    __tablename__ = "dedup_signature"

    job_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("cleaning_job.id", ondelete="CASCADE"), primary_key=True
    )
    sig: Mapped[bytes] = mapped_column(LargeBinary(16), primary_key=True)
    n: Mapped[int] = mapped_column(Integer)
    pos: Mapped[int] = mapped_column(Integer)


class RolloutJobRow(IdMixin, TimestampMixin, Base):
    __tablename__ = "rollout_job"

    status: Mapped[str] = mapped_column(String(20), default="pending")
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)
    total_groups: Mapped[int] = mapped_column(Integer, default=0)
    done_groups: Mapped[int] = mapped_column(Integer, default=0)
    counts: Mapped[dict[str, Any]] = mapped_column(default=dict)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text)


class OpdJobRow(IdMixin, TimestampMixin, Base):
    """An OPD job: its spec, status and rounds (each names its training and validation rollout jobs)."""

    __tablename__ = "opd_job"

    name: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), default="pending")
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)
    rounds: Mapped[list[Any]] = mapped_column(default=list)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text)


class TrajectoryGroupRow(IdMixin, TimestampMixin, Base):
    __tablename__ = "trajectory_group"
    __table_args__ = (UniqueConstraint("job_id", "task_id"),)

    job_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("rollout_job.id", ondelete="CASCADE"), index=True)
    task_id: Mapped[str] = mapped_column(String(300))
    shard_index: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(20), default="pending")
    task: Mapped[dict[str, Any]] = mapped_column(default=dict)
    summary: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # When the done group's entry reached the Redis stream; null until then (a rerun publishes it).
    published_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class TrajectoryRow(IdMixin, Base):
    __tablename__ = "trajectory"
    __table_args__ = (UniqueConstraint("group_id", "sample_index", "attempt"),)

    job_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, ForeignKey("rollout_job.id", ondelete="CASCADE"), index=True)
    group_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, ForeignKey("trajectory_group.id", ondelete="CASCADE"))
    task_id: Mapped[str | None] = mapped_column(String(300))
    sample_index: Mapped[int] = mapped_column(Integer, default=0)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(20), default="finished")
    stop_reason: Mapped[str | None] = mapped_column(String(30))
    truncated: Mapped[bool] = mapped_column(Boolean, default=False)
    turns: Mapped[int] = mapped_column(Integer, default=0)
    messages: Mapped[list[Any]] = mapped_column(default=list)
    tools: Mapped[list[Any]] = mapped_column(default=list)
    prompt_ids: Mapped[list[Any] | None] = mapped_column()
    response_ids: Mapped[list[Any] | None] = mapped_column()
    loss_mask: Mapped[list[Any] | None] = mapped_column()
    logprobs: Mapped[list[Any] | None] = mapped_column()
    #: A teacher's logprob of each response token (on-policy distillation), aligned like ``logprobs``.
    teacher_logprobs: Mapped[list[Any] | None] = mapped_column()
    weight_version: Mapped[str | None] = mapped_column(String(100))
    steps: Mapped[list[Any]] = mapped_column(default=list)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: The newest reward total the reward service keeps for this trajectory (of any spec), copied here so
    #: listings sort, filter and average on it without reading the reward service's table. The rollout
    #: writes it from the scores it gets back when it stores a group, and when a re-score reports its totals.
    reward: Mapped[float | None] = mapped_column(Float)
    session_id: Mapped[str | None] = mapped_column(String(200), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class GatewayTraceRow(IdMixin, Base):
    __tablename__ = "gateway_trace"
    # One row per upstream call. A session's calls are read in (attempt, created_at, log_id) order:
    # ``log_id`` is numbered by the database at insert, so several gateway replicas can share a session.
    __table_args__ = (Index("ix_gateway_trace_session_order", "session_id", "attempt", "created_at", "log_id"),)

    session_id: Mapped[str | None] = mapped_column(String(200))
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    #: The answering replica's own count of the session's calls (informational; never the order).
    seq: Mapped[int] = mapped_column(Integer, default=0)
    #: Insert order, assigned by the database (a Postgres sequence; the row id on SQLite).
    log_id: Mapped[int | None] = mapped_column(BigInteger, server_default=FetchedValue())
    api_key_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    model: Mapped[str] = mapped_column(String(300))
    endpoint: Mapped[str] = mapped_column(String(100))
    upstream: Mapped[str | None] = mapped_column(String(500))
    request: Mapped[dict[str, Any]] = mapped_column(default=dict)
    response: Mapped[dict[str, Any] | None] = mapped_column()
    prompt_token_ids: Mapped[list[Any] | None] = mapped_column()
    completion_token_ids: Mapped[list[Any] | None] = mapped_column()
    logprobs: Mapped[list[Any] | None] = mapped_column()
    finish_reason: Mapped[str | None] = mapped_column(String(40))
    usage: Mapped[dict[str, Any] | None] = mapped_column()
    parse_statuses: Mapped[list[Any] | None] = mapped_column()
    status_code: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20), default="ok", server_default="ok")
    error_code: Mapped[str | None] = mapped_column(String(100))
    error: Mapped[str | None] = mapped_column(Text)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    retries: Mapped[int] = mapped_column(Integer, default=0)
    stream: Mapped[bool] = mapped_column(Boolean, default=False)
    weight_version: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


class RewardRow(IdMixin, Base):
    __tablename__ = "reward"
    __table_args__ = (
        Index("ix_reward_trajectory_component", "trajectory_id", "component"),
        # A redelivered scoring batch must record each score once per spec.
        UniqueConstraint("trajectory_id", "component", "spec_hash"),
    )

    trajectory_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("trajectory.id", ondelete="CASCADE"))
    # The rollout job of the trajectory, kept here so re-scoring progress never reads the rollout tables.
    job_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, index=True)
    component: Mapped[str] = mapped_column(String(100))
    version: Mapped[str] = mapped_column(String(40))
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    spec_hash: Mapped[str | None] = mapped_column(String(64))
    weight: Mapped[float] = mapped_column(Float, default=1.0)
    score: Mapped[float | None] = mapped_column(Float)
    metrics: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(20), default="ok")
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RewardSpecRow(Base):
    __tablename__ = "reward_spec"

    spec_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class MemoryRow(IdMixin, Base):
    __tablename__ = "memory"

    namespace: Mapped[str] = mapped_column(String(200), index=True)
    text: Mapped[str] = mapped_column(Text)
    importance: Mapped[float] = mapped_column(Float, default=0.5)
    #: Unit-length float32 vector, little-endian bytes (dimension = len // 4).
    embedding: Mapped[bytes] = mapped_column(LargeBinary)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
