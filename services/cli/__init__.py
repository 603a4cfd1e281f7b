"""The ``trajforge`` command line: one entry point, one subcommand per job.

It composes every service's commands, so it lives beside the all-in-one app
(``services.app``), outside ``shared``: shared code imports no service.
"""

from __future__ import annotations

import typer

from services import demo
from services.cleaning import cli as cleaning_cli
from services.cli import db, keys, run
from services.inference.train import cli as train_cli
from services.reward import cli as reward_cli
from services.rollout import cli as rollout_cli
from services.tools import cli as tools_cli

__all__ = ["app", "main"]

app = typer.Typer(name="trajforge", help="trajforge: the data plane for agentic RL.", no_args_is_help=True,
                  add_completion=False)
app.add_typer(db.app, name="db")
app.add_typer(keys.app, name="keys")
run.register(app)
for _module in (cleaning_cli, reward_cli, rollout_cli, tools_cli, train_cli, demo):
    _module.register(app)


def main() -> None:
    """Entry point of the ``trajforge`` console script."""
    app()
