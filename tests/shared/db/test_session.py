"""Which database errors say "the server is not there yet" (worth retrying a task), and which do not."""

from __future__ import annotations

import asyncpg
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi
from sqlalchemy.exc import DBAPIError, IntegrityError

from shared.db.session import database_unavailable


def _as_sqlalchemy_raises(error: Exception) -> DBAPIError:
    """The error as SQLAlchemy's asyncpg dialect hands it up when a connection cannot be made."""
    return DBAPIError(None, None, AsyncAdapt_asyncpg_dbapi.Error(str(error), error))


def test_a_postgres_still_starting_is_unavailable() -> None:
    starting = asyncpg.exceptions.CannotConnectNowError("the database system is not yet accepting connections")
    assert database_unavailable(_as_sqlalchemy_raises(starting))
    assert database_unavailable(_as_sqlalchemy_raises(asyncpg.exceptions.AdminShutdownError("terminating")))


def test_a_bad_statement_is_not() -> None:
    unique = asyncpg.exceptions.UniqueViolationError("duplicate key value violates unique constraint")
    assert not database_unavailable(IntegrityError(None, None, AsyncAdapt_asyncpg_dbapi.Error(str(unique), unique)))
    assert not database_unavailable(ValueError("not a database error"))
