"""The openenv-core reference peer, shared by the interop, remote-env and split-stack tests.

openenv-core lives in its own virtual environment (built by scripts/openenv_peer_venv.sh), so its
server runs in a subprocess on loopback, hosting the toy counter env of ``services/envs/peer``
(its own env class, whose action is ``{"delta": int}``, not a tool call). The fixtures are the
suite's (``pytest_plugins`` in ``tests/conftest.py``); the server starts once per run and every
test closes the sessions it opens.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO_ROOT, free_port

__all__ = ["PEER_DIR", "peer_python", "reference_server"]

PEER_DIR = REPO_ROOT / "tests" / "services" / "envs" / "peer"


@pytest.fixture(scope="session")
def peer_python() -> Path:
    """Python of the openenv-core venv, built on first use."""
    out = subprocess.run([str(REPO_ROOT / "scripts" / "openenv_peer_venv.sh")], capture_output=True, text=True,
                         timeout=600, check=True)
    return Path(out.stdout.strip().splitlines()[-1]) / "bin" / "python"


@pytest.fixture(scope="session")
def reference_server(peer_python: Path) -> Iterator[str]:
    """The openenv-core reference server (max 2 sessions) hosting the toy counter env."""
    port = free_port()
    cmd = [str(peer_python), "-m", "uvicorn", "toy_env:app", "--host", "127.0.0.1", "--port", str(port),
           "--log-level", "warning"]
    proc = subprocess.Popen(cmd, cwd=PEER_DIR, env={"MAX_CONCURRENT_ENVS": "2", "PATH": "/usr/bin:/bin"})
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, proc)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _wait_healthy(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60  # importing openenv-core takes ~10 s here
    while time.monotonic() < deadline:
        assert proc.poll() is None, "reference server exited"
        try:
            if httpx.get(f"{base}/health", timeout=1).json().get("status") == "healthy":
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError("reference server never became healthy")
