"""Alembic from code: upgrade, downgrade, and the "is this database migrated?" check."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.errors import DatabaseNotMigrated
from shared.settings import Settings

__all__ = ["alembic_config", "current_revision", "downgrade", "ensure_migrated", "head_revision", "upgrade"]

_MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(url: str) -> Config:
    """An Alembic config pointing at our migrations and the given database URL."""
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def head_revision() -> str | None:
    """The newest revision the code knows."""
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def upgrade(url: str, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` (run outside any event loop)."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    """Revert migrations down to ``revision``."""
    command.downgrade(alembic_config(url), revision)


async def current_revision(engine: AsyncEngine) -> str | None:
    """The revision stamped in the database, or ``None`` if it was never migrated."""
    async with engine.connect() as conn:
        return await conn.run_sync(lambda c: MigrationContext.configure(c).get_current_revision())


async def ensure_migrated(engine: AsyncEngine) -> None:
    """Raise ``DatabaseNotMigrated`` with the fix unless the database is at head."""
    current, head = await current_revision(engine), head_revision()
    if current != head:
        raise DatabaseNotMigrated(
            f"database is at revision {current or 'none (empty)'} but the code needs {head}; "
            "run `trajforge db upgrade` first"
        )


def upgrade_sync_for(settings: Settings) -> None:
    """Upgrade the configured database to head (used by the CLI and the embedded default)."""
    url = settings.effective_database_url
    if url.startswith("sqlite") and ":///" in url:
        Path(url.split(":///", 1)[1]).parent.mkdir(parents=True, exist_ok=True)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        upgrade(url)
        return
    raise RuntimeError("upgrade_sync_for must run outside an event loop")
