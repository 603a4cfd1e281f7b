"""First start of the embedded default: migrate the SQLite file, create a local key."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from shared.auth import create_key
from shared.db.migrate import upgrade
from shared.db.session import create_engine_for, make_sessionmaker
from shared.settings import Settings

__all__ = ["ensure_local_key", "prepare_embedded"]


def _is_embedded_sqlite(settings: Settings) -> bool:
    return settings.effective_database_url.startswith("sqlite")


async def _create_key_async(settings: Settings, name: str) -> str:
    engine = create_engine_for(settings)
    try:
        async with make_sessionmaker(engine)() as session:
            # The local key belongs to whoever runs this machine: it may configure the deployment.
            _, key = await create_key(session, name, salt=settings.key_salt, scope="admin")
            await session.commit()
            return key
    finally:
        await engine.dispose()


def ensure_local_key(settings: Settings) -> tuple[str, Path, bool]:
    """The local key (created and written with mode 0600 on first start); returns (key, path, created)."""
    path = settings.key_file
    if path.exists():
        return path.read_text().strip(), path, False
    key = asyncio.run(_create_key_async(settings, "local"))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key + "\n")
    return key, path, True


def prepare_embedded(settings: Settings) -> tuple[str, Path, bool]:
    """Migrate the embedded SQLite database and make sure a local key exists."""
    if _is_embedded_sqlite(settings):
        settings.home.mkdir(parents=True, exist_ok=True)
        upgrade(settings.effective_database_url)
    return ensure_local_key(settings)
