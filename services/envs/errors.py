"""Errors of the environment service, all rooted in the shared error tree."""

from __future__ import annotations

from shared.errors import (
    EnvError,
    NotFound,
    ServiceUnavailable,
    UpstreamTimeout,
    UpstreamUnavailable,
)

__all__ = [
    "EnvConnectionLost",
    "EnvNotFound",
    "EnvRemoteError",
    "EnvTimeout",
    "SessionCapacityReached",
    "SessionNotFound",
]


class EnvNotFound(NotFound):
    """No environment is registered under the requested name."""

    code = "env_not_found"


class SessionNotFound(NotFound):
    """The HTTP session id is unknown, closed or reaped for idleness."""

    code = "env_session_not_found"


class SessionCapacityReached(ServiceUnavailable):
    """Every session slot of this process is taken."""

    code = "env_capacity_reached"


class EnvRemoteError(EnvError):
    """The remote OpenEnv server answered with an error frame."""

    code = "env_remote_error"


class EnvConnectionLost(UpstreamUnavailable):
    """The WebSocket to a remote env closed; the episode on it is lost."""

    code = "env_connection_lost"


class EnvTimeout(UpstreamTimeout):
    """A remote env did not answer in time; the connection was discarded."""

    code = "env_timeout"
