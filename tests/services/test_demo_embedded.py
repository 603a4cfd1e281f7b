"""The embedded server reports a failed start at once with its cause; without bubblewrap it can run sandbox-less."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from services.embedded import EmbeddedStartError, embedded_server
from shared.client import Client
from shared.settings import Settings
from tests.conftest import REPO_ROOT, free_port


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH on which bubblewrap cannot be found (what a bare machine has)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("bwrap") is None


def _settings(home: Path, **extra: object) -> Settings:
    return Settings(home=home, log_level="WARNING", **extra)  # type: ignore[arg-type]


def test_a_service_that_cannot_start_is_reported_at_once_with_its_cause(tmp_path: Path, no_bwrap: None) -> None:
    started = time.monotonic()
    with pytest.raises(EmbeddedStartError) as caught, embedded_server(_settings(tmp_path), start_timeout_s=60):
        pass
    assert time.monotonic() - started < 20  # not the 60 s start timeout
    message = str(caught.value)
    assert "tools service" in message and "bubblewrap" in message and "SandboxError" in message


def test_without_bubblewrap_optional_sandbox_starts_with_the_code_tools_off(tmp_path: Path, no_bwrap: None) -> None:
    settings = _settings(tmp_path, tools_sandbox="optional")
    with embedded_server(settings) as server, Client(server.url, api_key=server.api_key) as client:
        names = {t["function"]["name"] for t in client._call("GET", "/v1/tools")["tools"]}
    assert "calculator" in names and not names & {"python", "bash"}


def test_with_bubblewrap_the_code_tools_run_in_the_sandbox(tmp_path: Path) -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: `make test` installs it"
    settings = _settings(tmp_path, tools_sandbox="optional", tools_pool_size=1)
    with embedded_server(settings) as server, Client(server.url, api_key=server.api_key) as client:
        answer = client._call("POST", "/v1/tools/call", json={"tool_call": {
            "id": "c1", "type": "function", "function": {"name": "python", "arguments": '{"code": "print(6*7)"}'}}})
    assert "42" in str(answer)


def test_a_taken_port_is_reported_with_the_bind_error(tmp_path: Path) -> None:
    import socket

    port = free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        with pytest.raises(EmbeddedStartError, match="stopped before it listened"), \
                embedded_server(_settings(tmp_path, tools_sandbox="optional"), port=port):
            pass


def test_the_sandbox_installer_says_why_and_never_fails(tmp_path: Path) -> None:
    # A PATH with neither bwrap nor apt-get: the installer cannot help, says so, and lets the demo go on.
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("bash", "id"):
        (tools / name).symlink_to(shutil.which(name) or f"/bin/{name}")
    result = subprocess.run([str(tools / "bash"), "scripts/ensure_sandbox.sh"], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60, env={"PATH": str(tools)})
    assert result.returncode == 0, result.stderr
    assert "continuing without the sandbox" in result.stdout


def test_the_sandbox_installer_checks_that_apt_left_a_bwrap(tmp_path: Path) -> None:
    # apt-get that "succeeds" without installing anything (a package marked installed, its binary gone):
    # the installer must not take apt's word for it.
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    for name, body in (("id", "echo 0"), ("apt-get", "exit 0")):
        (tools / name).write_text(f"#!{tools / 'bash'}\n{body}\n")
        (tools / name).chmod(0o755)
    result = subprocess.run([str(tools / "bash"), "scripts/ensure_sandbox.sh"], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60, env={"PATH": str(tools)})
    assert result.returncode == 0, result.stderr
    assert "could not install bubblewrap; continuing without the sandbox" in result.stdout
