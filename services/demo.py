"""``trajforge demo``: the main job on embedded defaults (SQLite, in-process work, local key).

It starts the all-in-one app on loopback, uploads samples of the real public
trajectories through the REST API, and prints what it stored and found.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from shared.bootstrap import prepare_embedded
from shared.client import Client
from shared.data import data_dir
from shared.jsonl import iter_jsonl_path
from shared.schema import Trajectory
from shared.settings import Settings, get_settings

__all__ = ["register"]

console = Console()


def _start_server(port: int, settings: Settings) -> Any:
    import uvicorn

    from services.app import create_all_in_one_app

    quiet = settings.model_copy(update={"log_level": "WARNING"})
    server = uvicorn.Server(uvicorn.Config(create_all_in_one_app(quiet), host="127.0.0.1", port=port,
                                           log_config=None, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the embedded server did not start within 60 s")
        time.sleep(0.05)
    return server


def demo(rows_per_file: int = typer.Option(50, help="Rows sampled from each data file."),
         port: int = typer.Option(0, help="Loopback port (0 picks a free one).")) -> None:
    """Run the main job on embedded defaults and print what it did."""
    settings = get_settings()
    data = data_dir()
    files = sorted(data.glob("*.jsonl"))
    if not files:
        console.print(f"[red]no JSONL files in {data}; set TRAJFORGE_SHARED_DATA_DIR[/red]")
        raise typer.Exit(2)
    key, key_path, _ = prepare_embedded(settings)
    console.print(f"database: {settings.effective_database_url}\nAPI key: {key_path}")
    port = port or _free_port()
    server = _start_server(port, settings)
    table = Table(title="datasets stored through the REST API")
    for col in ("file", "rows", "invalid", "assistant turns", "tool calls", "dataset id"):
        table.add_column(col)
    samples: list[bytes] = []
    with Client(f"http://127.0.0.1:{port}", api_key=key) as client:
        with Progress(console=console) as progress:
            task = progress.add_task("uploading samples", total=len(files))
            for path in files:
                body, stats = _read_sample(path, rows_per_file)
                samples.append(body if body.endswith(b"\n") else body + b"\n")
                info = client.upload_dataset(path.stem, body)
                table.add_row(path.stem, str(info["row_count"]), str(info["invalid_count"]), str(stats["turns"]),
                              str(stats["tool_calls"]), info["id"][:8])
                progress.advance(task)
        console.print(table)
        _clean_combined(client, b"".join(samples))
    server.should_exit = True


def _clean_combined(client: Client, body: bytes) -> None:
    """One cleaning job over every sample together, polled with a progress bar."""
    dataset = client.upload_dataset("demo-combined", body)
    job = client.create_clean_job(dataset["id"], batch_size=100)
    with Progress(console=console) as progress:
        task = progress.add_task("cleaning job", total=job["total"])
        while job["status"] not in ("succeeded", "failed"):
            time.sleep(0.2)
            job = client.clean_job(job["id"])
            progress.update(task, completed=job["done"])
    summary = client.clean_job_drop_summary(job["id"])
    table = Table(title=f"cleaning job {job['id'][:8]}: {job['status']}, kept {job['kept']} of {job['total']}")
    for col in ("step", "reason", "rows"):
        table.add_column(col)
    for item in summary["items"]:
        table.add_row(str(item["step"]), str(item["reason"]), str(item["count"]))
    console.print(table)
    console.print(f"kept {job['kept']} / dropped {job['dropped']} / invalid {job['invalid']} / total {job['total']}")


def _read_sample(path: Path, rows: int) -> tuple[bytes, dict[str, int]]:
    out: list[bytes] = []
    stats = {"turns": 0, "tool_calls": 0}
    with open(path, "rb") as fh:
        for line in fh:
            if len(out) >= rows:
                break
            out.append(line)
    for record in iter_jsonl_path(path):
        if record.line_no > rows:
            break
        if record.ok:
            traj = Trajectory.model_validate(record.value)
            stats["turns"] += sum(m.role == "assistant" for m in traj.messages)
            stats["tool_calls"] += sum(len(m.tool_calls or []) for m in traj.messages)
    return b"".join(out), stats


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the CLI."""
    app.command()(demo)
