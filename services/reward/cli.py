"""``trajforge score IN.jsonl --reward SPEC.yaml -o OUT.jsonl``: score a file with a progress bar and a summary."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from services.reward.errors import RewardSpecError
from services.reward.file_scoring import FileSummary, load_spec_file, score_records
from shared.jsonl import dumps_line

__all__ = ["register", "score"]


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _summary_table(summary: FileSummary) -> Table:
    stats = summary.stats()
    table = Table(title="reward summary")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("rows", str(summary.count))
    table.add_row("scored", str(len(summary.scores)))
    for name in ("mean", "min", "max"):
        value = stats[name]
        table.add_row(f"{name} score", "-" if value is None else f"{value:.4f}")
    for kind, n in summary.failures.most_common():
        table.add_row(f"failed: {kind}", str(n))
    return table


def score(
    input_path: Path = typer.Argument(..., exists=True, dir_okay=False, help="JSONL trajectories to score."),
    reward: Path = typer.Option(..., "--reward", exists=True, dir_okay=False, help="Reward spec YAML."),
    output: Path = typer.Option(..., "-o", "--output", help="Where to write the scored JSONL."),
    ground_truth_key: str = typer.Option("ground_truth", help="Row key holding each row's ground truth."),
) -> None:
    """Score every row of a JSONL file; bad rows are written back with their reason, never dropped."""
    err = Console(stderr=True)
    try:
        spec = load_spec_file(reward)
    except RewardSpecError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    summary = FileSummary()
    columns = (TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with output.open("wb") as out, Progress(*columns, console=err) as progress:
        bar = progress.add_task("score", total=_count_lines(input_path))
        for row in score_records(input_path, spec, ground_truth_key=ground_truth_key):
            out.write(dumps_line(row))
            summary.add(row)
            progress.advance(bar)
    Console().print(_summary_table(summary))


def register(app: typer.Typer) -> None:
    """Add ``score`` to the CLI."""
    app.command("score")(score)
