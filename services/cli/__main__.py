"""``python -m services.cli`` runs the ``trajforge`` command line."""

from services.cli import main

main()
