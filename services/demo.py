"""``trajforge demo``: the main job end to end on embedded defaults (SQLite, in-process work, local key).

1. sample recorded tool-use conversations from the public data, store them
   through the REST API and clean them with the default pipeline;
2. turn the shortest kept rows into tasks (prompt = everything before the first
   assistant reply, reference = that reply's tool calls) and roll them out in
   groups against the local engine through ``POST /v1/rollouts``;
3. scores come from the job's reward spec, advantages from the job (or, when it
   stored none, from ``POST /v1/advantages``);
4. export token-level Parquet and JSONL, and print what happened.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from services.demo_clean import DEMO_FILES, CleanSummary, clean_sample, pick_tasks
from services.demo_report import clean_tables, console_url, group_stats, groups_table, reward_spread
from shared.client import Client
from shared.data import data_dir
from shared.errors import TrajforgeError
from shared.rollout_progress import follow_job, job_summary_table, write_exports
from shared.settings import Settings, get_settings

__all__ = ["demo", "job_body", "register"]



def make_console(*, stream_is_tty: bool | None = None) -> Console:
    """The demo's console: its terminal's width, or 160 columns when written to a file or pipe
    (rich's default there is 80, which cuts the group table's headers and task ids)."""
    tty = sys.stdout.isatty() if stream_is_tty is None else stream_is_tty
    return Console() if tty or "COLUMNS" in os.environ else Console(width=160)


console = make_console()

#: The job's reward, built so a group's members rarely all tie (a tie is zero advantage: no signal):
#: the graded tool-call match (0.2 for deciding to call, + 0.3 for the right tool name, + 0.5 for the
#: arguments, a near-miss string argument earning its token overlap with the truth), a format penalty
#: (-0.1 for a malformed call block) and a length penalty (up to -0.05 for replies past 200 characters,
#: the full -0.05 when cut at the token budget), so members that agree on the call still differ in how
#: they finish.
DEMO_REWARD = {"components": [
    {"name": "tool_call", "weight": 1.0, "params": {"argument_credit": "overlap"}},
    {"name": "format", "weight": 0.1},
    {"name": "length", "weight": 0.05, "params": {"max_chars": 200}},
]}
#: Sampling temperature of the demo job: at 1.0 the members of a group (each with its own seed) differ
#: more often in whether and how they call the tool than at 0.8.
DEMO_TEMPERATURE = 1.0


def job_body(tasks: list[dict[str, Any]], *, group_size: int, max_turns: int,
             max_tokens_per_turn: int, seed: int = 1234) -> dict[str, Any]:
    """The ``POST /v1/rollouts`` body of the demo job (local engine, the tasks' own tool schemas)."""
    return {
        "tasks": tasks, "group_size": group_size,
        "sampling": {"temperature": DEMO_TEMPERATURE, "top_p": 0.95, "seed": seed},
        "limits": {"max_turns": max_turns, "max_tokens_per_turn": max_tokens_per_turn,
                   "max_total_tokens": 4096, "timeout_s": 1800, "parse_failure_policy": "observe"},
        "reward": DEMO_REWARD, "mode": "tokens", "shard_size": 1,
    }


def _clean(client: Client, rows_per_file: int) -> CleanSummary:
    columns = (TextColumn("cleaning"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"))
    summary = CleanSummary()
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("", total=len(DEMO_FILES))
        for name in DEMO_FILES:
            progress.update(bar, description=name)
            part = clean_sample(client, files=(name,), rows_per_file=rows_per_file)
            summary.per_file |= part.per_file
            summary.drop_reasons.update(part.drop_reasons)
            summary.kept.extend(part.kept)
            progress.advance(bar)
    return summary


def _advantages(client: Client, groups: list[list[float | None]]) -> list[list[float]]:
    answer = client.advantages([{"rewards": g} for g in groups], estimator="grpo")
    return [[member[0] if member else 0.0 for member in group["advantages"]] for group in answer["groups"]]


def _rollout(client: Client, body: dict[str, Any], out: Path) -> tuple[dict[str, Any], list[Path]]:
    job = client.create_rollout(body)
    console.print(f"rollout job {job['id']}: {len(body['tasks'])} tasks × group {body['group_size']}")
    outcome = follow_job(client, job, console=console)
    with console.status("exporting Parquet and JSONL"):
        paths = write_exports(client, str(job["id"]), parquet=out / "rollout.parquet", jsonl=out / "rollout.jsonl")
    return outcome.job, paths


def _report(client: Client, summary: CleanSummary, job: dict[str, Any], paths: list[Path], *,
            base_url: str) -> None:
    for table in clean_tables(summary):
        console.print(table)
    console.print(job_summary_table(job))
    groups = group_stats(paths[0], lambda g: _advantages(client, g))
    console.print(groups_table(groups))
    varied, eligible = reward_spread(groups)
    console.print(f"reward spread: {varied} of {eligible} groups have non-zero reward variance "
                  "(a learning signal: their advantages are not all 0)")
    for path in paths:
        console.print(f"wrote {path.resolve()}")
    console.print(f"console: {console_url(base_url, str(job['id']))} (run `trajforge up` to open it)")


def _sandbox_settings(settings: Settings) -> Settings:
    """Settings with the tools sandbox optional when bubblewrap is missing, said once."""
    if shutil.which("bwrap"):
        return settings
    console.print("[yellow]bubblewrap (bwrap) is not installed: the demo runs without the sandbox "
                  "(the python and bash tools are off; `make demo` installs it when run as root)[/yellow]")
    return settings.model_copy(update={"tools_sandbox": "optional"})


def _console_base(settings: Settings) -> str:
    """Where the console is served after the demo: the deployment's URL, or `trajforge up`'s default."""
    return settings.public_base_url or "http://127.0.0.1:8000"


def demo(
    tasks: Annotated[int, typer.Option(min=1, help="Tasks to roll out.")] = 4,
    group_size: Annotated[int, typer.Option(min=1, max=64, help="Rollouts per task.")] = 4,
    max_turns: Annotated[int, typer.Option(min=1, help="Policy turns per rollout.")] = 2,
    max_tokens_per_turn: Annotated[int, typer.Option(min=1, help="Sampled tokens per turn.")] = 48,
    rows_per_file: Annotated[int, typer.Option(min=1, help="Rows sampled from each data file.")] = 40,
    out: Annotated[Path, typer.Option("--out", help="Folder for the exports.")] = Path("out/demo"),
    port: Annotated[int, typer.Option(help="Loopback port (0 picks a free one).")] = 0,
    seed: Annotated[int, typer.Option(help="Sampling seed of the job (each member and turn derives its own).")]
    = 1234,
) -> None:
    """Run the main job on embedded defaults: clean, roll out in groups, score, export, summarise."""
    from services.embedded import EmbeddedStartError, embedded_server

    settings = _sandbox_settings(get_settings())
    missing = [name for name in DEMO_FILES if not (data_dir() / name).is_file()]
    if missing:
        console.print(f"[red]{', '.join(missing)} not in {data_dir()}; set TRAJFORGE_SHARED_DATA_DIR[/red]")
        raise typer.Exit(2)
    console.print(f"database: {settings.effective_database_url}")
    try:
        with embedded_server(settings, port=port, log_level="ERROR") as server, \
                Client(server.url, api_key=server.api_key, timeout=600.0) as client:
            job = _run(client, _console_base(settings), tasks=tasks, group_size=group_size, max_turns=max_turns,
                       max_tokens_per_turn=max_tokens_per_turn, rows_per_file=rows_per_file, out=out, seed=seed)
    except EmbeddedStartError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    if job.get("status") != "succeeded":
        raise typer.Exit(1)


def _run(client: Client, base_url: str, *, tasks: int, group_size: int, max_turns: int,
         max_tokens_per_turn: int, rows_per_file: int, out: Path, seed: int) -> dict[str, Any]:
    summary = _clean(client, rows_per_file)
    picked = pick_tasks(summary.kept, tasks)
    if not picked:
        console.print("[red]no kept row has tools and a recorded tool call; raise --rows-per-file[/red]")
        raise typer.Exit(1)
    body = job_body(picked, group_size=group_size, max_turns=max_turns, max_tokens_per_turn=max_tokens_per_turn,
                    seed=seed)
    try:
        job, paths = _rollout(client, body, out)
    except TrajforgeError as exc:
        console.print(f"[red]the rollout step failed: {type(exc).__name__}: {exc}[/red]")
        raise typer.Exit(1) from None
    _report(client, summary, job, paths, base_url=base_url)
    return job


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the CLI."""
    app.command()(demo)
