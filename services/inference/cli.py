"""The inference service's commands: ``trajforge train`` (``services.inference.train.cli``)."""

from __future__ import annotations

from services.inference.train.cli import register

__all__ = ["register"]
