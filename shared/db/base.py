"""Declarative base and portable column types (JSONB on Postgres, JSON on SQLite)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, MetaData, Uuid
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["Base", "JSONType", "new_id", "utcnow"]

# JSONB where it exists, plain JSON elsewhere (SQLite in the embedded default).
JSONType = JSON().with_variant(JSONB(), "postgresql")

_NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    """Timezone-aware now, the one clock of the schema."""
    return datetime.now(UTC)


def new_id() -> uuid.UUID:
    """A new random primary key."""
    return uuid.uuid4()


class Base(DeclarativeBase):
    """Base of every ORM row class (``XRow`` on a singular snake_case table)."""

    metadata = MetaData(naming_convention=_NAMING)
    type_annotation_map = {dict[str, Any]: JSONType, list[Any]: JSONType}


class IdMixin:
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )
