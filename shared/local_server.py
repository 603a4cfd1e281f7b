"""The server a command runs against when given no ``--url``, supplied by the command line's composition.

``trajforge rollout SPEC`` and ``trajforge train SPEC`` without ``--url`` serve the
all-in-one app on loopback for their run. A service's commands may not import that
app, so the composition (the ``services.cli`` module) hands its factory to every command as the
click context's ``obj``, a ``Composition``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

import typer

from shared.settings import Settings

__all__ = ["Composition", "LocalServer", "LocalServerFactory", "local_server_of", "server_for"]


class LocalServer(Protocol):
    """Where a local server listens and the key that opens it."""

    @property
    def url(self) -> str: ...

    @property
    def api_key(self) -> str: ...


class LocalServerFactory(Protocol):
    """Serves every service on loopback for the block (``services.embedded.embedded_server``)."""

    def __call__(self, settings: Settings, *, log_level: str = ...) -> AbstractContextManager[LocalServer]: ...


@dataclass(frozen=True, slots=True)
class Composition:
    """What the command line's composition gives its commands."""

    local_server: LocalServerFactory | None = None


def local_server_of(obj: object) -> LocalServerFactory:
    """The local-server factory in a click context's ``obj``; ``LookupError`` saying what to do when none."""
    factory = obj.local_server if isinstance(obj, Composition) else None
    if factory is None:
        raise LookupError("no --url was given and this command line serves no local server; "
                          "pass --url with the address of a running trajforge server")
    return factory


def server_for(obj: object, url: str | None) -> str | LocalServerFactory:
    """``url`` when given, else the composition's local server from a click context's ``obj``; a usage
    error on ``--url`` saying what to do when the composition supplied none."""
    if url:
        return url
    try:
        return local_server_of(obj)
    except LookupError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--url'") from None
