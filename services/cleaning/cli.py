"""``trajforge clean``: clean a JSONL file locally with a progress bar and a per-step summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import typer
import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from services.cleaning.local import LocalSummary, clean_jsonl, count_lines
from services.cleaning.runner import DedupOptions, build_steps
from shared.errors import TrajforgeError

__all__ = ["clean", "explain_table", "load_pipeline", "register"]

console = Console(stderr=True)


def load_pipeline(path: Path) -> list[dict[str, Any]]:
    """Step specs from a YAML (or JSON) file: a list of ``{name, params}``, or ``{pipeline: [...]}``."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "pipeline" in data:
        data = data["pipeline"]
    if not isinstance(data, list):
        raise typer.BadParameter("the pipeline file must hold a list of {name, params} steps", param_hint="--pipeline")
    return [{"name": s, "params": {}} if isinstance(s, str) else s for s in data]


def _table(summary: LocalSummary) -> Table:
    table = Table(title="cleaning steps")
    for col in ("step", "in", "out", "dropped by reason", "seconds"):
        table.add_column(col, justify="right" if col in ("in", "out", "seconds") else "left")
    for s in summary.stats:
        reasons = ", ".join(f"{r}={n}" for r, n in sorted(s.dropped.items(), key=lambda kv: -kv[1])) or "-"
        table.add_row(s.step, str(s.rows_in), str(s.rows_out), reasons, f"{s.seconds:.3f}")
    return table


def _explain_value(value: object) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text.replace("\n", "\\n")


def explain_table(dropped_path: Path, limit: int) -> Table:
    """The first ``limit`` dropped rows with step, reason and the evidence of what fired."""
    table = Table(title=f"why rows were dropped (first {limit})")
    for col in ("row", "step", "reason", "check"):
        table.add_column(col, no_wrap=True)
    for col in ("evidence", "window"):
        table.add_column(col, overflow="fold", ratio=1)
    with open(dropped_path, "rb") as fh:
        for n, line in enumerate(fh):
            if n >= limit:
                break
            row = orjson.loads(line)
            ev = row.get("drop_evidence") or {}
            details = {k: v for k, v in ev.items() if k not in ("check", "window")}
            if row.get("drop_detail"):
                details["detail"] = row["drop_detail"]
            ident = row.get("id", row.get("line", n))
            table.add_row(_explain_value(ident), str(row.get("drop_step")), str(row.get("drop_reason")),
                          str(ev.get("check", "-")), ", ".join(f"{k}={_explain_value(v)}" for k, v in details.items()),
                          _explain_value(ev.get("window", ""))[:160])
    return table


def clean(
    src: Path = typer.Argument(..., exists=True, dir_okay=False, help="Input JSONL."),
    output: Path = typer.Option(..., "-o", "--output", help="Kept rows (JSONL)."),
    dropped: Path = typer.Option(..., "--dropped", help="Dropped and unreadable rows with their reasons (JSONL)."),
    pipeline: Path | None = typer.Option(None, "--pipeline", exists=True, dir_okay=False,
                                         help="YAML list of {name, params} steps (default: the default pipeline)."),
    dedup: bool = typer.Option(True, "--dedup/--no-dedup", help="Global exact dedup after the pipeline."),
    near_dedup: bool = typer.Option(False, "--near-dedup", help="Also drop near duplicates (MinHash)."),
    batch_size: int = typer.Option(2000, min=1, help="Rows per batch."),
    max_line_bytes: int = typer.Option(32 * 1024 * 1024, min=1, help="Longer lines become invalid_row drops."),
    explain: bool = typer.Option(False, "--explain", help="Print each dropped row's evidence (what fired, where)."),
    explain_limit: int = typer.Option(50, min=1, help="How many dropped rows --explain prints."),
) -> None:
    """Clean a JSONL file locally: kept rows to -o, dropped rows with step and reason to --dropped."""
    try:
        steps = build_steps(load_pipeline(pipeline) if pipeline else None)
    except TrajforgeError as exc:
        raise typer.BadParameter(str(exc), param_hint="--pipeline") from None
    options = DedupOptions(exact=dedup, near={} if near_dedup else None) if dedup or near_dedup else None
    total = count_lines(src)
    columns = (TextColumn("cleaning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("clean", total=total)
        summary = clean_jsonl(src, output, dropped, steps=steps, dedup=options, batch_size=batch_size,
                              max_line_bytes=max_line_bytes,
                              progress=lambda line: progress.update(task, completed=total if line < 0 else line))
    console.print(_table(summary))
    console.print(f"kept {summary.kept} / dropped {summary.dropped} / invalid {summary.invalid} / "
                  f"total {summary.total}")
    if explain:
        console.print(explain_table(dropped, explain_limit))


def register(app: typer.Typer) -> None:
    """Add ``clean`` to the CLI."""
    app.command()(clean)
