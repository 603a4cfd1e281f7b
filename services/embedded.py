"""The all-in-one app on a loopback port, for commands that run without a server (demo, rollout, train)."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from shared.bootstrap import prepare_embedded
from shared.errors import ServiceUnavailable
from shared.settings import Settings

__all__ = ["EmbeddedServer", "EmbeddedStartError", "embedded_server", "free_port"]


class EmbeddedStartError(ServiceUnavailable):
    """The embedded app did not start; the message names the failing service and its cause."""

    code = "embedded_start_failed"


@dataclass(frozen=True, slots=True)
class EmbeddedServer:
    """Where the embedded app listens and the local key that opens it."""

    url: str
    api_key: str
    key_path: Path


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _StartupQuiet(logging.Filter):
    """Holds back uvicorn's start errors (a lifespan traceback, a bind error): they are raised instead."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        self.errors.append(record.getMessage().splitlines()[-1] if record.getMessage() else "")
        return False


def _watch_lifespan(app: FastAPI, failures: list[BaseException]) -> None:
    """Record the exception that ends the app's lifespan, so the starting thread can raise it."""
    original = app.router.lifespan_context

    @asynccontextmanager
    async def watched(a: Any) -> AsyncIterator[Any]:
        try:
            async with original(a) as state:
                yield state
        except BaseException as exc:
            failures.append(exc)
            raise

    app.router.lifespan_context = watched


def _start_error(failures: list[BaseException]) -> EmbeddedStartError:
    exc = failures[0]
    where = "; ".join(getattr(exc, "__notes__", ())) or "while starting the embedded app"
    return EmbeddedStartError(f"the embedded server did not start ({where}): {type(exc).__name__}: {exc}")


def _wait_started(server: Any, thread: threading.Thread, failures: list[BaseException], hush: _StartupQuiet,
                  timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if failures:
            raise _start_error(failures)
        if not thread.is_alive():
            cause = "; ".join(e for e in hush.errors if e) or "no error was logged"
            raise EmbeddedStartError(f"the embedded server stopped before it listened: {cause}")
        if time.monotonic() > deadline:
            raise EmbeddedStartError(f"the embedded server did not start within {timeout_s:.0f} s")
        time.sleep(0.05)


def _serve(server: Any) -> None:
    # uvicorn exits the process on a bind failure; in this thread that only ends the thread (reported above).
    with contextlib.suppress(SystemExit):
        server.run()


@contextmanager
def embedded_server(settings: Settings, *, port: int = 0, start_timeout_s: float = 60.0,
                    log_level: str = "WARNING") -> Iterator[EmbeddedServer]:
    """Migrate the embedded database, make the local key, serve every service until the block ends.

    A service whose startup fails is reported at once as ``EmbeddedStartError`` naming it and its cause.
    """
    import uvicorn

    from services.app import create_all_in_one_app
    from shared.web.server import server_config

    key, key_path, _ = prepare_embedded(settings)
    port = port or free_port()
    quiet = settings.model_copy(update={"log_level": log_level})
    app = create_all_in_one_app(quiet)
    failures: list[BaseException] = []
    _watch_lifespan(app, failures)
    # The stdlib loop: this server runs in a background thread beside the caller's own loop.
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on",
                                          loop="asyncio"))
    uvicorn_log, hush = logging.getLogger("uvicorn.error"), _StartupQuiet()
    uvicorn_log.addFilter(hush)
    thread = threading.Thread(target=_serve, args=(server,), daemon=True)
    thread.start()
    try:
        _wait_started(server, thread, failures, hush, start_timeout_s)
    except BaseException:
        server.should_exit = True
        thread.join(timeout=30)
        raise
    finally:
        uvicorn_log.removeFilter(hush)
    try:
        yield EmbeddedServer(url=f"http://127.0.0.1:{port}", api_key=key, key_path=key_path)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
