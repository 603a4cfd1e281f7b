"""The all-in-one app on a loopback port, for commands that run without a server (demo, rollout)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from shared.bootstrap import prepare_embedded
from shared.settings import Settings

__all__ = ["EmbeddedServer", "embedded_server", "free_port"]


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


@contextmanager
def embedded_server(settings: Settings, *, port: int = 0, start_timeout_s: float = 60.0) -> Iterator[EmbeddedServer]:
    """Migrate the embedded database, make the local key, serve every service until the block ends."""
    import uvicorn

    from services.app import create_all_in_one_app

    key, key_path, _ = prepare_embedded(settings)
    port = port or free_port()
    quiet = settings.model_copy(update={"log_level": "WARNING"})
    server = uvicorn.Server(uvicorn.Config(create_all_in_one_app(quiet), host="127.0.0.1", port=port,
                                           log_config=None, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the embedded server did not start within {start_timeout_s:.0f} s")
        time.sleep(0.05)
    try:
        yield EmbeddedServer(url=f"http://127.0.0.1:{port}", api_key=key, key_path=key_path)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
