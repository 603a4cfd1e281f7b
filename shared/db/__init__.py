"""Storage: ORM rows, engines/sessions, migrations and portable upserts."""

from shared.db.base import Base, JSONType, new_id, utcnow
from shared.db.session import create_engine_for, make_sessionmaker, session_scope
from shared.db.upsert import insert_ignore

__all__ = [
    "Base",
    "JSONType",
    "create_engine_for",
    "insert_ignore",
    "make_sessionmaker",
    "new_id",
    "session_scope",
    "utcnow",
]
