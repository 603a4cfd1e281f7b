"""``trajforge sandbox check``: which sandbox protections are active on this host."""

from __future__ import annotations

import asyncio

import typer

from shared.errors import TrajforgeError
from shared.sandbox.check import Protection, check_protections, format_table
from shared.sandbox.pool import SandboxPool
from shared.settings import get_settings

__all__ = ["register"]

sandbox_app = typer.Typer(help="The sandbox pool that runs user code.", no_args_is_help=True)


async def _probe() -> list[Protection]:
    pool = SandboxPool.from_settings(get_settings(), pool_size=1)
    pool.require_protections = False  # report every row; the exit code says whether prod would start
    async with pool:
        return await check_protections(pool)


@sandbox_app.command("check")
def check() -> None:
    """Print a table of the protections active here; exit 1 if one is missing under TRAJFORGE_ENV=prod."""
    try:
        rows = asyncio.run(_probe())
    except TrajforgeError as exc:
        typer.echo(f"error: the sandbox pool cannot start: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(format_table(rows))
    missing = [row.name for row in rows if not row.active]
    if missing and get_settings().env == "prod":
        typer.echo(f"TRAJFORGE_ENV=prod: the tools service refuses to start (missing: {', '.join(missing)})", err=True)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``sandbox`` command group to the ``trajforge`` CLI."""
    app.add_typer(sandbox_app, name="sandbox")
