"""`serve_workers`: several processes serve one port; a stop signal or one worker's exit stops them all; each
tunes its garbage collector once started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shared.web.server import GC_GEN0_THRESHOLD
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[3]

# A child process serving an app that answers its own process id and collector state, in two worker processes.
_SERVER = """
import gc, os, sys
from fastapi import FastAPI
from shared.web.server import serve_workers

def make_app():
    app = FastAPI()
    app.get("/pid")(lambda: {"pid": os.getpid()})
    app.get("/gc")(lambda: {"pid": os.getpid(), "gen0": gc.get_threshold()[0], "frozen": gc.get_freeze_count()})
    return app

sys.exit(serve_workers(make_app, host="127.0.0.1", port=int(sys.argv[1]), workers=2, log_level="warning"))
"""


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(x) for x in task.read_text().split()]
    return found


@pytest.fixture
def two_workers() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(port)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/pid", timeout=1).status_code == 200 and len(_children(proc.pid)) == 2:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the workers did not come up: " + (proc.stderr.read() if proc.stderr else b"").decode()[-2000:])
    workers = _children(proc.pid)
    try:
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the supervisor stops its workers
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        for pid in workers:  # nothing outlives the test, whatever it did to the supervisor
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_two_processes_answer_on_one_port_and_sigterm_stops_them(two_workers) -> None:
    proc, url = two_workers
    workers = set(_children(proc.pid))
    seen: set[int] = set()
    deadline = time.monotonic() + 30
    while seen != workers and time.monotonic() < deadline:
        with httpx.Client() as client:  # a fresh connection each time: the kernel picks a worker per accept
            seen.add(client.get(url + "/pid").json()["pid"])
    assert seen == workers and len(workers) == 2
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    assert not any(Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()
                   for pid in workers)


def test_a_worker_that_dies_stops_the_others_and_the_exit_code_says_so(two_workers) -> None:
    proc, _ = two_workers
    first, second = _children(proc.pid)
    os.kill(first, signal.SIGKILL)
    assert proc.wait(30) != 0  # killed by a signal: not a clean stop
    deadline = time.monotonic() + 10
    while Path(f"/proc/{second}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{second}").exists()
    assert b"stopping the others" in (proc.stderr.read() if proc.stderr else b"")


def test_workers_must_be_at_least_one() -> None:
    from shared.web.server import serve_workers

    with pytest.raises(ValueError, match="at least 1"):
        serve_workers(lambda: None, host="127.0.0.1", port=1, workers=0)


def test_each_worker_freezes_what_startup_built_and_spaces_out_young_collections(two_workers) -> None:
    proc, url = two_workers
    workers = set(_children(proc.pid))
    states: dict[int, dict[str, int]] = {}
    deadline = time.monotonic() + 30
    while set(states) != workers and time.monotonic() < deadline:
        with httpx.Client() as client:
            state = client.get(url + "/gc").json()
            states[state["pid"]] = state
    assert set(states) == workers
    for state in states.values():
        assert state["gen0"] == GC_GEN0_THRESHOLD
        # The imported frameworks and the app: tens of thousands of objects the collector no longer walks.
        assert state["frozen"] > 10_000


def test_workers_stop_when_their_supervisor_is_killed(two_workers) -> None:
    """SIGKILL gives the supervisor no chance to stop them: the kernel tells each worker instead."""
    proc, _ = two_workers
    workers = _children(proc.pid)
    proc.kill()
    proc.wait(10)
    deadline = time.monotonic() + 30
    alive = workers
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()
                 and "zombie" not in Path(f"/proc/{pid}/status").read_text()]
        time.sleep(0.1)
    assert not alive
