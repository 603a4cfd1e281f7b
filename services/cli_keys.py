"""``trajforge keys``: create, list and revoke API keys."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from shared import auth
from shared.db.session import create_engine_for, make_sessionmaker
from shared.settings import get_settings

app = typer.Typer(help="API keys.", no_args_is_help=True)
T = TypeVar("T")


def _with_session(fn: Callable[[AsyncSession], Awaitable[T]]) -> T:
    async def run() -> T:
        engine = create_engine_for(get_settings())
        try:
            async with make_sessionmaker(engine)() as session:
                out = await fn(session)
                await session.commit()
                return out
        finally:
            await engine.dispose()

    return asyncio.run(run())


@app.command()
def create(
    name: str,
    scope: str = typer.Option("user", help="admin (configuration: upstreams, drain/resume, keys), user (data, "
                                           "jobs, scoring, sessions) or session (one gateway session)."),
    session_id: str | None = typer.Option(None, "--session", help="The gateway session a session key opens."),
) -> None:
    """Create a key named NAME and print it once (only its hash is stored)."""
    if scope not in auth.SCOPES:
        raise typer.BadParameter(f"unknown scope {scope!r}; choose one of {', '.join(auth.SCOPES)}",
                                 param_hint="--scope")
    if (scope == "session") != (session_id is not None):
        raise typer.BadParameter("--session goes with --scope session, and --scope session needs --session",
                                 param_hint="--session")
    salt = get_settings().key_salt

    async def _create(session: AsyncSession) -> tuple[Any, str]:
        return await auth.create_key(session, name, salt=salt, scope=scope,
                                     session_id=session_id)

    row, key = _with_session(_create)
    typer.echo(key)
    typer.echo(f"created {scope} key {row.id} ({name}); store it now, it is not shown again", err=True)


@app.command("list")
def list_() -> None:
    """List keys (id, name, scope, prefix, created, revoked)."""
    for row in _with_session(auth.list_keys):
        revoked = row.revoked_at.isoformat() if row.revoked_at else "-"
        created = f"{row.created_at:%Y-%m-%d %H:%M}"
        typer.echo(f"{row.id}  {row.name:20}  {row.scope:7}  {row.prefix}…  created {created}  revoked {revoked}")


@app.command()
def revoke(key_id: str) -> None:
    """Revoke the key with id KEY_ID."""
    try:
        parsed = uuid.UUID(key_id)
    except ValueError:
        raise typer.BadParameter(f"{key_id!r} is not a key id (see `trajforge keys list`)") from None

    async def _revoke(session: AsyncSession) -> Any:
        return await auth.revoke_key(session, parsed)

    _with_session(_revoke)
    typer.echo(f"revoked {key_id}")
