"""``trajforge db``: apply, revert and inspect migrations."""

from __future__ import annotations

import asyncio

import typer

from shared.db import migrate
from shared.db.session import create_engine_for
from shared.settings import get_settings

app = typer.Typer(help="Database migrations.", no_args_is_help=True)


@app.command()
def upgrade(revision: str = typer.Argument("head", help="Target revision.")) -> None:
    """Apply migrations up to REVISION (default: the newest)."""
    settings = get_settings()
    if settings.effective_database_url.startswith("sqlite"):
        settings.home.mkdir(parents=True, exist_ok=True)
    migrate.upgrade(settings.effective_database_url, revision)
    typer.echo(f"database at {migrate.head_revision() if revision == 'head' else revision}")


@app.command()
def downgrade(revision: str = typer.Argument(..., help="Target revision, or 'base' to drop everything.")) -> None:
    """Revert migrations down to REVISION."""
    migrate.downgrade(get_settings().effective_database_url, revision)
    typer.echo(f"database at {revision}")


@app.command()
def current() -> None:
    """Print the database's revision and the code's newest one."""

    async def _read() -> str | None:
        engine = create_engine_for(get_settings())
        try:
            return await migrate.current_revision(engine)
        finally:
            await engine.dispose()

    typer.echo(f"database: {asyncio.run(_read()) or 'none'}  code: {migrate.head_revision()}")
