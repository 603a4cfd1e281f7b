"""Fixtures for the policy-server backends: the inference service's engine, served on loopback, is the server
they drive, and its own greedy answer is the reference each backend must reproduce."""

from __future__ import annotations

from tests.services.inference.backends.conftest import GREEDY, local, prompt, reference
from tests.services.inference.conftest import app, loaded, local_engine, server_url

__all__ = ["GREEDY", "app", "loaded", "local", "local_engine", "prompt", "reference", "server_url"]
