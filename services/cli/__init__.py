"""The ``trajforge`` command line: one entry point, one subcommand per job.

It composes every service's commands, so it lives beside the all-in-one app
(``services.app``), outside ``shared``: shared code imports no service.
"""

from __future__ import annotations

import typer

from services import demo
from services.app import command_modules
from services.cli import db, keys, run

__all__ = ["app", "main"]

app = typer.Typer(name="trajforge", help="trajforge: the data plane for agentic RL.", no_args_is_help=True,
                  add_completion=False)
app.add_typer(db.app, name="db")
app.add_typer(keys.app, name="keys")
run.register(app)
for _module in (*command_modules(), demo):  # each service's own commands, then the main job
    _module.register(app)


def main() -> None:
    """Entry point of the ``trajforge`` console script."""
    app()
