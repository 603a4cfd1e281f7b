"""The command line against a real database: migrations, keys, refusing un-migrated databases."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from shared.db.migrate import head_revision
from tests.conftest import REPO_ROOT


def _cli(*args: str, home: Path, db: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAJFORGE_")}
    env |= {"TRAJFORGE_HOME": str(home), "PYTHONPATH": str(REPO_ROOT)}
    if db:
        env["TRAJFORGE_DATABASE_URL"] = db
    return subprocess.run([sys.executable, "-m", "services.cli", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_db_upgrade_current_and_keys_lifecycle(tmp_path: Path) -> None:
    up = _cli("db", "upgrade", home=tmp_path)
    assert up.returncode == 0, up.stderr
    assert (tmp_path / "trajforge.db").exists()
    current = _cli("db", "current", home=tmp_path)
    assert f"database: {head_revision()}" in current.stdout
    created = _cli("keys", "create", "ci-bot", home=tmp_path)
    assert created.returncode == 0 and created.stdout.strip().startswith("tf_")
    listed = _cli("keys", "list", home=tmp_path)
    key_id = listed.stdout.split()[0]
    assert "ci-bot" in listed.stdout and created.stdout.strip() not in listed.stdout  # only the prefix shows
    assert _cli("keys", "revoke", key_id, home=tmp_path).returncode == 0
    assert "revoked 20" in _cli("keys", "list", home=tmp_path).stdout
    bad = _cli("keys", "revoke", "not-a-uuid", home=tmp_path)
    assert bad.returncode != 0 and "not a key id" in bad.stderr


def test_serve_refuses_an_unmigrated_database_with_the_fix(tmp_path: Path) -> None:
    result = _cli("serve", "cleaning", "--port", "1", home=tmp_path)
    assert result.returncode == 2
    assert "trajforge db upgrade" in result.stderr


def test_serve_rejects_unknown_services(tmp_path: Path) -> None:
    result = _cli("serve", "nope", home=tmp_path)
    assert result.returncode != 0 and "unknown service" in result.stderr


def test_worker_needs_a_broker(tmp_path: Path) -> None:
    result = _cli("worker", home=tmp_path)
    assert result.returncode == 2 and "TRAJFORGE_REDIS_URL" in result.stderr


def test_keys_create_takes_a_scope(tmp_path: Path) -> None:
    import asyncio

    from shared.auth import KeyVerifier
    from shared.db.session import create_engine_for, make_sessionmaker
    from shared.settings import Settings

    assert _cli("db", "upgrade", home=tmp_path).returncode == 0
    admin = _cli("keys", "create", "ops", "--scope", "admin", home=tmp_path)
    user = _cli("keys", "create", "lab", home=tmp_path)
    session = _cli("keys", "create", "proc", "--scope", "session", "--session", "s-9", home=tmp_path)
    assert admin.returncode == user.returncode == session.returncode == 0, admin.stderr + user.stderr + session.stderr
    assert "created admin key" in admin.stderr and "created user key" in user.stderr
    listed = _cli("keys", "list", home=tmp_path).stdout
    assert "ops" in listed and " admin " in listed and " user " in listed and " session " in listed
    for bad in (("--scope", "root"), ("--scope", "session"), ("--scope", "user", "--session", "s")):
        refused = _cli("keys", "create", "x", *bad, home=tmp_path)
        assert refused.returncode != 0 and ("scope" in refused.stderr or "session" in refused.stderr)

    async def scopes() -> list[tuple[str, str | None]]:
        settings = Settings(home=tmp_path)
        engine = create_engine_for(settings)
        try:
            verifier = KeyVerifier(make_sessionmaker(engine), salt=settings.key_salt)
            infos = [await verifier.verify(out.stdout.strip()) for out in (admin, user, session)]
            return [(i.scope, i.session_id) for i in infos]
        finally:
            await engine.dispose()

    assert asyncio.run(scopes()) == [("admin", None), ("user", None), ("session", "s-9")]


def test_serve_with_workers_answers_from_each_process_and_stops_on_sigterm(tmp_path: Path) -> None:
    import signal
    import time

    import httpx

    from tests.conftest import free_port

    assert _cli("db", "upgrade", home=tmp_path).returncode == 0
    assert _cli("serve", "cleaning", "--workers", "0", home=tmp_path).returncode == 2  # at least one
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAJFORGE_")}
    env |= {"TRAJFORGE_HOME": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "cleaning", "--port", str(port),
                             "--workers", "2"], cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE)
    try:
        children: set[int] = set()
        deadline = time.monotonic() + 90
        while len(children) < 2 and time.monotonic() < deadline:
            children = {int(x) for t in Path(f"/proc/{proc.pid}/task").glob("*/children") for x in t.read_text().split()}
            time.sleep(0.2)
        assert len(children) == 2, (proc.stderr.read() if proc.poll() is not None and proc.stderr else b"")
        ok = 0
        while ok < 5 and time.monotonic() < deadline:
            try:
                ok += httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                time.sleep(0.2)
        assert ok == 5
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_commands_without_a_url_get_the_embedded_server_from_the_composition() -> None:
    import typer.main

    from services.cli import app
    from services.embedded import embedded_server
    from shared.local_server import local_server_of

    ctx = typer.main.get_command(app).make_context("trajforge", ["rollout", "spec.yaml"], resilient_parsing=True)
    assert local_server_of(ctx.obj) is embedded_server
