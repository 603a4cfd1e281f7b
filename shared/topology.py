"""The one URL table of a split deployment: which service listens where, and whom each one calls.

``trajforge up --split`` and ``docker-compose.yml`` are wired from this table
(``tests/test_compose.py`` checks the compose file against it): every service
is its own process, and each gets ``TRAJFORGE_<SERVICE>_URL`` for exactly the
services it calls. On loopback service ``s`` listens on ``base_port +
PORT_OFFSETS[s]``; in compose it is ``http://<s>:8000`` inside the network and
published on the same ``8000 + offset`` port.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Literal

__all__ = ["CALLS", "CONSOLE_ROUTES", "PORT_OFFSETS", "SPLIT_SERVICES", "SplitStack", "console_env", "env_for",
           "url_table"]

#: Every service of a split deployment and its port offset (8000 + offset by default).
PORT_OFFSETS: dict[str, int] = {"gateway": 0, "inference": 1, "cleaning": 2, "tools": 3, "envs": 4,
                                "rollout": 5, "reward": 6, "console": 7, "functions": 8}
SPLIT_SERVICES: tuple[str, ...] = tuple(PORT_OFFSETS)
_ROLLOUT_CALLS = ("gateway", "tools", "envs", "reward", "functions")
#: The services each process calls; the queue worker runs every service's tasks (rollout shards,
#: re-scoring, cleaning batches), so it calls what they call (re-scoring reads the rollout API).
CALLS: dict[str, tuple[str, ...]] = {
    "gateway": ("inference",),
    "inference": (),
    "cleaning": (),
    "tools": (),
    "envs": (),
    "rollout": _ROLLOUT_CALLS,
    "reward": ("functions", "rollout"),
    "console": (),
    "functions": (),
    "worker": (*_ROLLOUT_CALLS, "rollout"),
}
#: The console reads the public API from the browser through its own origin: rollout's routes by
#: default, these path prefixes from the service that owns them (prefix -> service, its path there).
CONSOLE_ROUTES: dict[str, tuple[str, str]] = {
    "/v1/clean": ("cleaning", "/v1/clean"),
    "/v1/datasets": ("cleaning", "/v1/datasets"),
    "/v1/sessions": ("gateway", "/v1/sessions"),
    "/inference": ("inference", ""),
    "/v1/rewards": ("reward", "/v1/rewards"),
}


def url_table(kind: Literal["loopback", "compose"] = "loopback", *, host: str = "127.0.0.1",
              base_port: int = 8000) -> dict[str, str]:
    """Where each service is reached: on loopback ports, or by compose service name."""
    if kind == "compose":
        return {name: f"http://{name}:8000" for name in SPLIT_SERVICES}
    return {name: f"http://{host}:{base_port + offset}" for name, offset in PORT_OFFSETS.items()}


def env_for(process: str, table: dict[str, str]) -> dict[str, str]:
    """The ``TRAJFORGE_<SERVICE>_URL`` variables one process (a service or ``worker``) is given."""
    return {f"TRAJFORGE_{called.upper()}_URL": table[called] for called in CALLS[process]}


def console_env(table: dict[str, str]) -> dict[str, str]:
    """The console's settings: where its API proxy sends each path (``TRAJFORGE_CONSOLE_*``)."""
    routes = {prefix: table[service] + path for prefix, (service, path) in CONSOLE_ROUTES.items()}
    return {"TRAJFORGE_CONSOLE_API_URL": table["rollout"], "TRAJFORGE_CONSOLE_ROUTES": json.dumps(routes)}


class SplitStack:
    """Every service as its own ``trajforge serve`` process on loopback (plus a worker with Redis).

    Each child gets the parent's environment plus its row of the URL table; ``extra_env`` is added
    to every child (the service key, test settings). ``start`` waits until each answers ``/healthz``.
    """

    def __init__(self, *, host: str = "127.0.0.1", base_port: int = 8000, extra_env: dict[str, str] | None = None,
                 worker: bool = False, python: str | None = None) -> None:
        import sys

        self.host, self.base_port, self.worker = host, base_port, worker
        self.table = url_table("loopback", host=host, base_port=base_port)
        self.extra_env = dict(extra_env or {})
        self.python = python or sys.executable
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def _env(self, process: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not (k.startswith("TRAJFORGE_") and k.endswith("_URL")
                                                            and k[10:-4].lower() in PORT_OFFSETS)}
        extra = console_env(self.table) if process == "console" else {}
        return {**env, **self.extra_env, **env_for(process, self.table), **extra}

    def start(self, *, ready_timeout_s: float = 120.0) -> SplitStack:
        """Start every process and wait for each service's ``/healthz``."""
        for name in SPLIT_SERVICES:
            port = str(self.base_port + PORT_OFFSETS[name])
            self.procs[name] = subprocess.Popen(
                [self.python, "-m", "services.cli", "serve", name, "--host", self.host, "--port", port],
                env=self._env(name))
        if self.worker:
            self.procs["worker"] = subprocess.Popen(
                [self.python, "-m", "services.cli", "worker", "--pool", "threads", "--concurrency", "4"],
                env=self._env("worker"))
        self._wait_ready(ready_timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        waiting = set(SPLIT_SERVICES)
        while waiting:
            for name in sorted(waiting):
                proc = self.procs[name]
                if proc.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"service {name} exited with {proc.returncode} while starting")
                try:
                    if httpx.get(f"{self.table[name]}/healthz", timeout=1.0).status_code == 200:
                        waiting.discard(name)
                except httpx.HTTPError:
                    pass
            if waiting and time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"services not ready within {timeout_s} s: {', '.join(sorted(waiting))}")
            time.sleep(0.2)

    def dead(self) -> list[str]:
        """Processes that exited."""
        return [name for name, proc in self.procs.items() if proc.poll() is not None]

    def stop(self, timeout_s: float = 15.0) -> None:
        """Terminate every child (SIGTERM, then SIGKILL after ``timeout_s``)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + timeout_s
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()

    def __enter__(self) -> SplitStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
