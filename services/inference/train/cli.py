"""``trajforge train SPEC.yaml``: the closed loop against a running server, or an embedded one.

Without ``--url`` it serves the all-in-one app on a loopback port first (embedded defaults: SQLite,
in-process work, the local engine), so the engine it updates is the one the rollouts sample from; the
command line's composition supplies that server (``shared.local_server``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from services.inference.train.loop import TrainRun, run_training
from services.inference.train.plot import plot_rewards
from services.inference.train.policy import TrainablePolicy
from services.inference.train.spec import TrainSpecError, load_train_spec
from shared.client import Client
from shared.errors import TrajforgeError
from shared.local_server import LocalServerFactory, server_for
from shared.settings import get_settings

__all__ = ["register", "train"]

console = Console(stderr=True)


@contextmanager
def _client(server: str | LocalServerFactory, api_key: str | None) -> Iterator[Client]:
    if isinstance(server, str):
        with Client(server, api_key=api_key, timeout=600.0) as client:
            yield client
        return
    with server(get_settings(), log_level="ERROR") as local, \
            Client(local.url, api_key=local.api_key, timeout=600.0) as client:
        yield client


def _redis(url: str) -> Any:
    if not url:
        return None
    import redis

    return redis.Redis.from_url(url)


def _finish(run: TrainRun, plot: Path | None) -> None:
    history = run.write_history()
    console.print(f"wrote {history}")
    rewards = [r.reward_mean for r in run.rounds]
    if plot is not None and rewards:
        title = f"reward per round ({len(rewards)} rounds)"
        console.print(f"wrote {plot_rewards(rewards, [r.success_rate for r in run.rounds], plot, title=title)}")
    if len(rewards) > 1:
        console.print(f"mean reward: round 0 {rewards[0]:.3f} → round {len(rewards) - 1} {rewards[-1]:.3f}")


def train(
    ctx: typer.Context,
    spec: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Train spec (YAML).")],
    url: Annotated[str | None, typer.Option("--url", help="A running server (default: start one here).")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", envvar="TRAJFORGE_API_KEY")] = None,
    rounds: Annotated[int | None, typer.Option(min=1, help="Override the spec's rounds.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Override the spec's out_dir.")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="PNG of reward per round (default out/rewards.png).")]
    = None,
) -> None:
    """Roll out in groups, take a clipped policy-gradient step on the export, update the engine; repeat."""
    server = server_for(ctx.obj, url)  # before the model loads: a missing server is a usage error
    try:
        train_spec, out_dir = load_train_spec(spec)
    except TrainSpecError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    if rounds is not None:
        train_spec = train_spec.model_copy(update={"rounds": rounds})
    out_dir = out or out_dir
    settings = get_settings()
    policy = TrainablePolicy.load(train_spec.model_path or settings.local_model, cache_dir=settings.model_cache_path,
                                  learning_rate=train_spec.learning_rate,
                                  trainable_layers=train_spec.trainable_layers)
    try:
        with _client(server, api_key) as client:
            run = run_training(client, train_spec, policy, out_dir=out_dir, redis=_redis(settings.redis_url),
                               log=console.print)
    except TrajforgeError as exc:
        console.print(f"[red]training stopped: {type(exc).__name__}: {exc}[/red]")
        raise typer.Exit(1) from None
    _finish(run, plot or out_dir / "rewards.png")


def register(app: typer.Typer) -> None:
    """Add ``train`` to the CLI."""
    app.command()(train)
