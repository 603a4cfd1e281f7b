"""``python -m shared.cli`` runs the ``trajforge`` command line."""

from shared.cli import main

main()
