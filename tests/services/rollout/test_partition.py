"""A network partition between a rollout and its env server: bounded time-outs, no hang.

The envs service runs in its own network namespace, reached over a veth pair; mid-job the
host side of the pair goes down, so packets vanish without a reset (a partition, not a crash).
Every trajectory must end within its ``message_timeout_s`` with the cause recorded.
Needs root (``ip netns``); skipped elsewhere.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from shared.bootstrap import prepare_embedded
from shared.settings import Settings
from tests.conftest import REPO_ROOT
from tests.services.rollout.test_remote_env import _example
from tests.services.rollout.test_service import Live
from tests.services.rollout.test_service_faults import _settled, _started, _when_started
from tests.services.rollout.token_scripted import TokenScripted

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="network namespaces need root and iproute2")

_TAG = os.getpid() % 100000
NS, HOST_IF, NS_IF = f"tfpart{_TAG}", f"tfh{_TAG}", f"tfn{_TAG}"
HOST_IP, NS_IP = "10.213.7.1", "10.213.7.2"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def envs_in_a_namespace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``trajforge serve envs`` inside its own namespace, on a veth pair (embedded SQLite, auth off)."""
    home = tmp_path_factory.mktemp("ns-envs")
    prepare_embedded(Settings(home=home, auth_enabled=False))
    _ip("netns", "add", NS)
    proc: subprocess.Popen[bytes] | None = None
    try:
        _ip("link", "add", HOST_IF, "type", "veth", "peer", "name", NS_IF)
        _ip("link", "set", NS_IF, "netns", NS)
        _ip("addr", "add", f"{HOST_IP}/30", "dev", HOST_IF)
        _ip("link", "set", HOST_IF, "up")
        for args in (("addr", "add", f"{NS_IP}/30", "dev", NS_IF), ("link", "set", NS_IF, "up"),
                     ("link", "set", "lo", "up")):
            _ip("netns", "exec", NS, "ip", *args)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRAJFORGE_")}
        env |= {"TRAJFORGE_HOME": str(home), "TRAJFORGE_AUTH_ENABLED": "false", "TRAJFORGE_LOG_LEVEL": "WARNING",
                "PYTHONPATH": str(REPO_ROOT)}
        proc = subprocess.Popen(["ip", "netns", "exec", NS, sys.executable, "-m", "services.cli", "serve", "envs",
                                 "--host", NS_IP, "--port", "8004"], env=env, cwd=REPO_ROOT)
        url = f"http://{NS_IP}:8004"
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, "the envs service in the namespace exited"
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the envs service in the namespace never answered"
                time.sleep(0.3)
        yield url
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        subprocess.run(["ip", "netns", "delete", NS], capture_output=True)
        subprocess.run(["ip", "link", "delete", HOST_IF], capture_output=True)


@pytest.fixture
async def live(settings: Settings) -> AsyncIterator[Live]:
    runner = Live(settings.model_copy(update={"rollout_poll_s": 0.05}))
    yield runner
    await runner.dispatcher.drain()
    await runner.engine.dispose()


async def test_a_partition_mid_job_ends_every_trajectory_within_its_timeout(
        envs_in_a_namespace: str, live: Live, token_policies: list[TokenScripted]) -> None:
    seen = _started(token_policies)
    body = _example(env={"base_url": f"{envs_in_a_namespace}/envs/tool_routing", "message_timeout_s": 2.0},
                    policy={"backend": {"name": "scripted_tokens", "model": "routing,delay=1.0"}})
    job_id = await live.create(body)
    await _when_started(token_policies, seen + 1)  # sessions open, first turns in flight
    _ip("link", "set", HOST_IF, "down")  # the partition: nothing answers, nothing resets
    try:
        started = time.monotonic()
        _, rows = await asyncio.wait_for(_settled(live, job_id), 60)
        elapsed = time.monotonic() - started
    finally:
        _ip("link", "set", HOST_IF, "up")
    assert elapsed < 30, f"the job took {elapsed:.1f} s after the partition"
    for row in rows:
        assert row.stop_reason == "api_error", row.meta
        assert row.meta["error_code"] in ("upstream_timeout", "upstream_unavailable"), row.meta
