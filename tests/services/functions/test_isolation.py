"""Worker isolation and scaling: crash, hang, memory and disk limits, timeouts, a burst up and back down."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import httpx
import pytest

from shared.cgroups import detect_cgroups
from tests.services.functions.conftest import MISBEHAVING, component, rollout_input, sample_zip, upload_built


async def _call(client: httpx.AsyncClient, package_id: str, body: dict[str, Any], **extra: Any) -> dict[str, Any]:
    resp = await client.post(f"/v1/functions/{package_id}/rollout",
                             json={"component": body, "input": rollout_input(**extra)})
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def _pid(out: dict[str, Any]) -> int:
    assert out["status"] == "SUCCESS", out
    return int(out["agent_output"]["rollout_extra"]["pid"])


async def _pool(client: httpx.AsyncClient, name: str) -> dict[str, Any]:
    pools = (await client.get("/v1/functions/pools")).json()["pools"]
    return next(p for p in pools if p["name"] == name)


def _require_cgroups() -> None:
    """The memory limit is a cgroup's: on a host without one this test fails loudly rather than skip."""
    assert detect_cgroups() is not None, "needs a writable cgroup hierarchy (memory controller) on this host"


async def test_crash_fails_only_that_call_and_the_instance_is_replaced(client: httpx.AsyncClient) -> None:
    package_id = (await upload_built(client, sample_zip()))["package_id"]
    body = component(package_id, MISBEHAVING, name="crashy")
    first = _pid(await _call(client, package_id, body))
    assert first != os.getpid()
    crashed = await _call(client, package_id, body, do="crash")
    assert crashed["status"] == "FAILED" and "worker exited with code 7" in crashed["error"]
    assert crashed["agent_output"]["messages"][-1]["content"].startswith("ROLLOUT_ERROR: worker exited")
    again = _pid(await _call(client, package_id, body))
    assert again != first  # served by the replacement
    pool = await _pool(client, "crashy")
    assert any(e["direction"] == "replace" and "code 7" in e["reason"] for e in pool["events"])


async def test_timeout_cancels_an_async_call_and_kills_a_hung_worker(client: httpx.AsyncClient) -> None:
    package_id = (await upload_built(client, sample_zip()))["package_id"]
    body = component(package_id, MISBEHAVING, name="slow", timeout=1.0)
    pid = _pid(await _call(client, package_id, body))
    slow = await _call(client, package_id, body, do="sleep", seconds=30)
    assert slow["status"] == "FAILED" and slow["error"].startswith("timeout")
    assert slow["agent_output"]["messages"][-1]["content"].startswith("ROLLOUT_ERROR: timeout")
    assert _pid(await _call(client, package_id, body)) == pid  # cancelled cleanly: same instance
    started = time.monotonic()
    hung = await _call(client, package_id, body, do="hang")
    assert hung["status"] == "FAILED" and hung["error"].startswith("timeout")
    assert time.monotonic() - started < 20
    patient = {**body, "timeout": 60.0}  # the same pool (timeout is per call), time for the replacement to start
    assert _pid(await _call(client, package_id, patient)) != pid  # the blocked worker was killed and replaced
    pool = await _pool(client, "slow")
    assert any("worker hung" in e["reason"] for e in pool["events"] if e["direction"] == "replace")


async def test_memory_over_the_limit_is_an_oom_kill_reported_as_such(client: httpx.AsyncClient) -> None:
    _require_cgroups()
    package_id = (await upload_built(client, sample_zip()))["package_id"]
    body = component(package_id, MISBEHAVING, name="hog", memory_size=128)
    out = await _call(client, package_id, body, do="oom")
    assert out["status"] == "FAILED" and "memory limit exceeded (128 MB)" in out["error"], out
    assert _pid(await _call(client, package_id, body)) > 0  # replaced, serving again


async def test_disk_over_the_limit_fails_the_call(client: httpx.AsyncClient) -> None:
    package_id = (await upload_built(client, sample_zip()))["package_id"]
    body = component(package_id, MISBEHAVING, name="writer", disk_size=4)
    out = await _call(client, package_id, body, do="disk", mb=16)
    assert out["status"] == "FAILED" and "File too large" in out["error"], out
    ok = await _call(client, package_id, body, do="disk", mb=2)
    assert ok["status"] == "SUCCESS"


async def test_a_burst_scales_up_then_idle_scales_back_down(client: httpx.AsyncClient) -> None:
    package_id = (await upload_built(client, sample_zip()))["package_id"]
    body = component(package_id, MISBEHAVING, name="bursty", concurrency=1, capacity=1, min_capacity=1,
                     max_capacity=3, concurrency_scale_threshold=0.5)
    _pid(await _call(client, package_id, body))
    outs = await asyncio.gather(*(_call(client, package_id, body, do="sleep", seconds=1.5) for _ in range(6)))
    pids = {_pid(o) for o in outs}
    assert 2 <= len(pids) <= 3  # new instances served part of the burst, never more than max_capacity
    pool = await _pool(client, "bursty")
    ups = [e for e in pool["events"] if e["direction"] == "up" and e["reason"].startswith("concurrency")]
    assert ups and all(e["reaction_s"] is not None and e["reaction_s"] > 0 for e in ups)
    assert max(e["instances_after"] for e in pool["events"]) <= 3
    deadline = time.monotonic() + 30
    while (pool := await _pool(client, "bursty"))["instances"] > 1:
        assert time.monotonic() < deadline, pool
        await asyncio.sleep(0.2)
    assert any(e["direction"] == "down" for e in pool["events"])
    metrics = (await client.get("/metrics")).text
    assert f'trajforge_function_instances{{pool="{pool["pool"]}"}} 1.0' in metrics
    assert f'trajforge_function_scale_events_total{{direction="down",pool="{pool["pool"]}"}}' in metrics


async def test_memory_over_the_scale_threshold_adds_an_instance(client: httpx.AsyncClient) -> None:
    package_id = (await upload_built(client, sample_zip()))["package_id"]
    # A Python worker holds tens of MB: 5 % of 256 MB is crossed at once, with no call in flight.
    body = component(package_id, MISBEHAVING, name="heavy", memory_size=256, capacity=1, min_capacity=1,
                     max_capacity=2, memory_scale_threshold=0.05)
    _pid(await _call(client, package_id, body))
    deadline = time.monotonic() + 60
    while (pool := await _pool(client, "heavy"))["instances"] < 2:
        assert time.monotonic() < deadline, pool
        await asyncio.sleep(0.2)
    assert any(e["direction"] == "up" and e["reason"] == "memory threshold" for e in pool["events"])
    assert all(m > 0.05 * 256 * 1024 * 1024 for m in pool["instance_memory_bytes"])
    await asyncio.sleep(0.5)
    assert (await _pool(client, "heavy"))["instances"] == 2  # never beyond max_capacity


async def test_an_idle_pool_is_stopped_after_its_ttl(make_client: Any, functions_dir: Any) -> None:
    from services.functions.app import SERVICE

    client = await make_client(SERVICE, functions_dir=functions_dir, functions_pool_idle_ttl_s=0.5)
    package_id = (await upload_built(client, sample_zip()))["package_id"]
    first = _pid(await _call(client, package_id, component(package_id, MISBEHAVING, name="once")))
    await asyncio.sleep(1.0)
    _pid(await _call(client, package_id, component(package_id, MISBEHAVING, name="later", cpu=0.5)))
    names = {p["name"] for p in (await client.get("/v1/functions/pools")).json()["pools"]}
    assert names == {"later"}
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)  # its worker is gone


async def test_callers_of_the_same_component_version_share_its_instances(client: httpx.AsyncClient) -> None:
    package_id = (await upload_built(client, sample_zip()))["package_id"]
    job_a = component(package_id, MISBEHAVING, name="shared-a", timeout=30.0)
    job_b = component(package_id, MISBEHAVING, name="shared-b", timeout=90.0)  # same package, class, runtime
    assert _pid(await _call(client, package_id, job_a)) == _pid(await _call(client, package_id, job_b))
    other = component(package_id, MISBEHAVING, name="shared-c", env={"X": "1"})  # another runtime: its own pool
    assert _pid(await _call(client, package_id, other)) != _pid(await _call(client, package_id, job_a))


async def test_closing_the_service_leaves_no_worker_or_cgroup(settings: Any, tmp_path: Any) -> None:
    _require_cgroups()
    from services.functions.service import FunctionsService
    from shared.schema.functions import RolloutFunctionComponent, RolloutInput

    service = FunctionsService(settings.model_copy(update={"functions_dir": tmp_path}))
    package = await service.store.upload(sample_zip())
    package_id = (await service.store.wait(package.package_id)).package_id
    comp = RolloutFunctionComponent.model_validate(component(package_id, MISBEHAVING, name="closing", capacity=2,
                                                             max_capacity=2))
    out = await service.call_rollout(package_id, comp, RolloutInput.model_validate(rollout_input()))
    crashed = await service.call_rollout(package_id, comp, RolloutInput.model_validate(rollout_input(do="crash")))
    assert crashed.failed
    pids = [int((out.agent_output.rollout_extra or {})["pid"])]
    pids += [i.proc.pid for p in service.pools.values() for i in p.instances if i.proc is not None]
    await service.close()
    assert service._cgroups is not None
    assert not any((base / service._group_parent).exists() for base in service._cgroups.dirs.values())
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
