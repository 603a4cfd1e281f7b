"""``trajforge rollout SPEC.yaml``: submit a rollout job, follow it live, print a summary, write exports.

Without ``--url`` it serves the all-in-one app on a loopback port first
(embedded defaults: SQLite, in-process work, the local key), through the local
server the command line's composition supplies (``shared.local_server``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console

from shared.client import Client
from shared.errors import ClientError, TrajforgeError
from shared.local_server import LocalServerFactory, server_for
from shared.rollout_progress import follow_job, group_rewards_table, job_summary_table, write_exports
from shared.rollout_spec_file import RolloutSpecError, load_spec_file
from shared.settings import get_settings

__all__ = ["register", "rollout"]


@contextmanager
def _client(server: str | LocalServerFactory, api_key: str | None) -> Iterator[Client]:
    if isinstance(server, str):
        with Client(server, api_key=api_key, timeout=120.0) as client:
            yield client
        return
    with server(get_settings()) as local, Client(local.url, api_key=local.api_key, timeout=120.0) as client:
        yield client


def _submit(client: Client, body: dict[str, Any], err: Console) -> dict[str, Any]:
    try:
        job: dict[str, Any] = client.create_rollout(body)
    except ClientError as exc:  # the server refused the spec: the user's to fix
        err.print(f"[red]error:[/red] the server refused the job: {exc}")
        raise typer.Exit(2) from None
    return job


def _run(client: Client, body: dict[str, Any], output: Path | None, jsonl: Path | None) -> None:
    out, err = Console(), Console(stderr=True)
    job = _submit(client, body, err)
    try:
        outcome = follow_job(client, job, console=err)
    except KeyboardInterrupt:
        client.cancel_rollout(str(job["id"]))
        err.print(f"cancelled rollout {job['id']}")
        raise typer.Exit(130) from None
    out.print(job_summary_table(outcome.job))
    if outcome.group_rewards:
        out.print(group_rewards_table(outcome.group_rewards))
    for path in write_exports(client, str(job["id"]), parquet=output, jsonl=jsonl):
        out.print(f"wrote {path}")
    if outcome.job.get("status") != "succeeded":
        raise typer.Exit(1)


def rollout(
    ctx: typer.Context,
    spec: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Rollout job spec (YAML).")],
    url: Annotated[str | None, typer.Option("--url", help="A running server (default: start one here).")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", envvar="TRAJFORGE_API_KEY",
                                                help="Key for --url.")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the Parquet export here.")] = None,
    jsonl: Annotated[Path | None, typer.Option("--jsonl", help="Write the JSONL export here.")] = None,
) -> None:
    """Run a rollout job from SPEC.yaml with a live progress bar, a summary and exports."""
    err = Console(stderr=True)
    server = server_for(ctx.obj, url)
    try:
        body = load_spec_file(spec)
    except RolloutSpecError as exc:
        err.print(f"[red]error:[/red] {spec}: {exc}")
        raise typer.Exit(2) from None
    try:
        with _client(server, api_key) as client:
            _run(client, body, output, jsonl)
    except (httpx.TransportError, TrajforgeError) as exc:
        err.print(f"[red]error:[/red] {type(exc).__name__}: {exc}")
        raise typer.Exit(1) from None


def register(app: typer.Typer) -> None:
    """Add ``rollout`` to the CLI."""
    app.command("rollout")(rollout)
