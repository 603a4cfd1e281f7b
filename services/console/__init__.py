"""The trajectory console: a web UI over the public REST API, served at ``/ui``."""

from services.console.app import SERVICE, create_app

__all__ = ["SERVICE", "create_app"]
