"""Private Redis and Postgres servers a test may kill and restart (never the machine's shared ones).

``PrivateRedis`` runs ``redis-server`` on a free loopback port with an fsync-always append-only
file, so a killed server comes back with what it had acknowledged. ``PrivatePostgres`` runs a
throw-away cluster (``initdb`` into a temporary directory, trust auth, binaries from
``/usr/lib/postgresql/*/bin``) as the ``postgres`` user when the test runs as root, on a free port.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["PrivatePostgres", "PrivateRedis", "postgres_bin"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(check: Any, what: str, proc: subprocess.Popen[bytes], within_s: float = 30.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within {within_s} s")
        time.sleep(0.05)


def _accepts(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class PrivateRedis:
    """A redis-server of this test alone; ``kill`` is a crash (SIGKILL), ``start`` brings it back."""

    def __init__(self, workdir: Path) -> None:
        self.dir, self.port = workdir, _free_port()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        self.proc = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(self.dir), "--appendonly", "yes", "--appendfsync", "always", "--save", "",
             "--protected-mode", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(lambda: _accepts(self.port), "redis-server", self.proc)
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None


def postgres_bin() -> Path | None:
    """The newest installed ``/usr/lib/postgresql/<version>/bin`` with initdb, if any."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


class PrivatePostgres:
    """A Postgres cluster of this test alone; ``crash`` is an immediate shutdown, ``start`` a recovery."""

    def __init__(self, workdir: Path) -> None:
        bindir = postgres_bin()
        if bindir is None:
            raise RuntimeError("no Postgres server binaries under /usr/lib/postgresql/*/bin")
        self.bin, self.dir, self.port = bindir, workdir, _free_port()
        self.data, self.sockets = workdir / "data", workdir / "sockets"
        self.user = "postgres" if os.geteuid() == 0 else None
        self.proc: subprocess.Popen[bytes] | None = None
        for path in (self.dir, self.sockets):
            path.mkdir(parents=True, exist_ok=True)
            if self.user:
                entry = pwd.getpwnam(self.user)
                os.chown(path, entry.pw_uid, entry.pw_gid)
        subprocess.run([str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                        "--no-sync", "-E", "UTF8"], check=True, capture_output=True, **self._as_user())

    def _as_user(self) -> dict[str, Any]:
        return {"user": self.user, "group": self.user} if self.user else {}

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> PrivatePostgres:
        self.proc = subprocess.Popen(
            [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.sockets),
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **self._as_user())
        _wait(self._ready, "postgres", self.proc)
        return self

    def _ready(self) -> bool:
        done = subprocess.run([str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                              capture_output=True)
        return done.returncode == 0

    def crash(self) -> None:
        """Immediate shutdown (SIGQUIT): every connection drops, the next start recovers from the WAL."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            self.proc.wait(timeout=30)
        self.proc = None
