"""Fixtures of the functions-service tests: the app with a private functions dir, the sample workspace."""

from __future__ import annotations

import asyncio
import io
import time
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.functions.app import SERVICE
from shared.clients.functions import zip_workspace

WORKSPACE = Path(__file__).parent / "workspace"
ROLLOUT = "functions.rollout.my_rollout.MyRolloutProcessor"
REWARD = "functions.reward.my_reward.MyRewardProcessor"
LENGTH = "functions.reward.my_reward.LengthReward"
MISBEHAVING = "functions.misbehave.Misbehaving"


@pytest.fixture(scope="session")
def functions_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One functions dir for the session, so the dependency cache is shared like a deployment's."""
    return tmp_path_factory.mktemp("functions")


@pytest.fixture
async def client(make_client: Any, functions_dir: Path) -> httpx.AsyncClient:
    client: httpx.AsyncClient = await make_client(SERVICE, functions_dir=functions_dir,
                                                  functions_scale_interval_s=0.1,
                                                  functions_scale_down_after_s=0.5, functions_cancel_grace_s=0.5)
    return client


def sample_zip() -> bytes:
    """The sample workspace, zipped as the client does it."""
    return zip_workspace(WORKSPACE)


def make_zip(files: dict[str, str | bytes]) -> bytes:
    """A zip holding exactly ``files`` (name -> content)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in files.items():
            zf.writestr(name, content)
    return buf.getvalue()


async def upload_built(client: httpx.AsyncClient, data: bytes, *, timeout_s: float = 300.0) -> dict[str, Any]:
    """Upload and wait for the build to end; the final package record."""
    resp = await client.post("/v1/functions", content=data, headers={"content-type": "application/zip"})
    assert resp.status_code == 202, resp.text
    package_id = resp.json()["package_id"]
    deadline = time.monotonic() + timeout_s
    while True:
        body = (await client.get(f"/v1/functions/{package_id}")).json()
        if body["status"] != "building":
            return dict(body)
        assert time.monotonic() < deadline, f"build of {package_id} did not end"
        await asyncio.sleep(0.1)


def component(package_id: str, classpath: str, *, name: str = "c", timeout: float = 60.0,
              **runtime: Any) -> dict[str, Any]:
    """A component body (runtime defaults small: one instance, 256 MB)."""
    return {"name": name, "timeout": timeout, "fcmodel": {"package_id": package_id, "classpath": classpath},
            "runtime": {"cpu": 1, "memory_size": 256, "disk_size": 64, "concurrency": 1, "capacity": 1,
                        "min_capacity": 1, "max_capacity": 1, **runtime}}


def rollout_input(**extra: Any) -> dict[str, Any]:
    """A RolloutInput body in the reference's shape."""
    return {"model_resource": {"model_name": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "k"},
            "sampling_params": {"temperature": 0.0}, "messages": [{"role": "user", "content": "hi"}],
            "rollout_extra": extra}
