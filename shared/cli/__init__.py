"""The ``trajforge`` command line: one entry point, one subcommand per job."""

from __future__ import annotations

import importlib
import importlib.util

import typer

from shared.cli import db, keys, run

__all__ = ["app", "main"]

app = typer.Typer(name="trajforge", help="trajforge: the data plane for agentic RL.", no_args_is_help=True,
                  add_completion=False)
app.add_typer(db.app, name="db")
app.add_typer(keys.app, name="keys")
run.register(app)

#: Service modules that add their own subcommands (``register(app)``), when present.
_SERVICE_CLIS = ("services.cleaning.cli", "services.reward.cli", "services.rollout.cli", "services.demo",
                "services.inference.train.cli")


def _register_service_commands() -> None:
    for name in _SERVICE_CLIS:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name).register(app)


def main() -> None:
    """Entry point of the ``trajforge`` console script."""
    _register_service_commands()
    app()
