"""The ``trajforge`` command line: one entry point, one subcommand per job.

It composes every service's commands, so it lives beside the all-in-one app
(``services.app``), outside ``shared``: shared code imports no service. Commands
that run without ``--url`` get the embedded server from here, as the click
context's ``obj`` (``shared.local_server.Composition``): services do not import it.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

import typer

from services import cli_db, cli_keys, cli_run, demo
from services.embedded import embedded_server
from shared.local_server import Composition
from shared.topology import SPLIT_SERVICES

__all__ = ["app", "command_modules", "main"]


def command_modules() -> list[ModuleType]:
    """Every service's command-line module (``services.<name>.cli``, with ``register(app)``), in service order.

    Found by name, so the command line knows service names and not their modules; only the command
    modules load (a ``trajforge`` call does not build every app).
    """
    names = [f"services.{name}.cli" for name in SPLIT_SERVICES]
    return [importlib.import_module(n) for n in names if importlib.util.find_spec(n) is not None]


app = typer.Typer(name="trajforge", help="trajforge: the data plane for agentic RL.", no_args_is_help=True,
                  add_completion=False, context_settings={"obj": Composition(local_server=embedded_server)})
app.add_typer(cli_db.app, name="db")
app.add_typer(cli_keys.app, name="keys")
cli_run.register(app)
for _module in (*command_modules(), demo):  # each service's own commands, then the main job
    _module.register(app)


def main() -> None:
    """Entry point of the ``trajforge`` console script."""
    app()


if __name__ == "__main__":  # ``python -m services.cli``
    main()
