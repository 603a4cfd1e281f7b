"""Real Celery worker subprocesses for queue tests: one private queue on Redis DB 15 per test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from shared.settings import Settings
from tests.conftest import REDIS_URL, REPO_ROOT

__all__ = ["REDIS_TEST_URL", "Workers", "wait_until"]

REDIS_TEST_URL = REDIS_URL.rsplit("/", 1)[0] + "/15"


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str,
               log: Callable[[], str] = lambda: "") -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` (and the worker log) after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}\n{log()}")


class Workers:
    """Starts and stops solo-pool workers on a private queue against the test database."""

    def __init__(self, settings: Settings, tmp: Path, *, prefix: str, include: Sequence[str] = (),
                 visibility_timeout_s: int | None = None, env: dict[str, str] | None = None) -> None:
        self.queue = f"test-{prefix}-{uuid.uuid4().hex[:8]}"
        update: dict[str, object] = {"redis_url": REDIS_TEST_URL, "queue_name": self.queue}
        extra = {"TRAJFORGE_DATABASE_URL": settings.database_url, "TRAJFORGE_REDIS_URL": REDIS_TEST_URL,
                 "TRAJFORGE_QUEUE_NAME": self.queue, "TRAJFORGE_HOME": str(tmp), "PYTHONPATH": str(REPO_ROOT)}
        if visibility_timeout_s is not None:
            update["queue_visibility_timeout_s"] = visibility_timeout_s
            extra["TRAJFORGE_QUEUE_VISIBILITY_TIMEOUT_S"] = str(visibility_timeout_s)
        self.settings = settings.model_copy(update=update)
        self.env = {**os.environ, **extra, **(env or {})}
        self.include = list(include)
        self.log = tmp / "worker.log"
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        """One more worker process (its own process group, so a kill takes its children too)."""
        cmd = [sys.executable, "-m", "services.cli", "worker", "--pool", "solo", "--concurrency", "1"]
        for module in self.include:
            cmd += ["--include", module]
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=self.env, stdout=self.log.open("ab"),
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
        """Signal a worker's process group and wait for it."""
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
            proc.wait(20)

    def stop_all(self) -> None:
        """Stop every worker started here (SIGTERM: a clean shutdown)."""
        for proc in self.procs:
            self.kill(proc, signal.SIGTERM)

    def tail(self) -> str:
        """The end of the shared worker log."""
        return self.log.read_text()[-3000:] if self.log.exists() else ""
