"""The functions service over HTTP: upload, build, call rollout and reward components, bad input."""

from __future__ import annotations

import os

import httpx

from tests.seeds.seed_support import scripted_server, tool_call_reply
from tests.services.functions.conftest import (
    LENGTH,
    MISBEHAVING,
    REWARD,
    ROLLOUT,
    component,
    make_zip,
    rollout_input,
    sample_zip,
    upload_built,
)

TRUTH = {"decision": "tool_call", "tool_calls": [{"name": "query_status", "arguments": {"item_id": "P100"}}]}


async def test_upload_builds_once_and_lists_processors(client: httpx.AsyncClient) -> None:
    package = await upload_built(client, sample_zip())
    assert package["status"] == "ready", package
    assert {ROLLOUT, REWARD, LENGTH, MISBEHAVING} <= set(package["classpaths"])
    again = await client.post("/v1/functions", content=sample_zip())
    assert again.json()["package_id"] == package["package_id"] and again.json()["status"] == "ready"
    log = (await client.get(f"/v1/functions/{package['package_id']}/log")).text
    assert "import check" in log and ROLLOUT in log


async def test_rollout_component_runs_in_its_own_process_against_the_policy(client: httpx.AsyncClient) -> None:
    package = await upload_built(client, sample_zip())
    body = component(package["package_id"], ROLLOUT, env={"OPD_MARKER": "from-runtime"})
    with scripted_server(tool_call_reply("query_status", '{"item_id": "P100"}'), name="student") as url:
        inp = {**rollout_input(sample_id="s-1"),
               "model_resource": {"model_name": "student", "base_url": f"{url}/v1", "api_key": "EMPTY"},
               "sampling_params": {"temperature": 0.0, "max_tokens": 128}}
        resp = await client.post(f"/v1/functions/{package['package_id']}/rollout",
                                 json={"component": body, "input": inp})
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["status"] == "SUCCESS" and out["error"] is None
    extra = out["agent_output"]["rollout_extra"]
    assert extra["sample_id"] == "s-1" and extra["tool_args"] == [{"item_id": "P100"}]
    assert extra["worker_pid"] != os.getpid() and extra["env_marker"] == "from-runtime"
    assert out["agent_output"]["messages"][-1]["tool_calls"][0]["function"]["name"] == "query_status"
    assert out["agent_output"]["rollout_metrics"]["tool_call_count"] == 1.0


async def test_reward_components_score_and_read_their_env(client: httpx.AsyncClient) -> None:
    package_id = (await upload_built(client, sample_zip()))["package_id"]
    call = {"role": "assistant", "content": "",
            "tool_calls": [{"id": "c", "type": "function",
                            "function": {"name": "query_status", "arguments": '{"item_id": "P100"}'}}]}
    inp = {"ground_truth": TRUTH, "agent_output": {"messages": [{"role": "user", "content": "q"}, call]}}
    resp = await client.post(f"/v1/functions/{package_id}/reward",
                             json={"component": {**component(package_id, REWARD), "weight": 1.0}, "input": inp})
    assert resp.json() == {"reward": {"reward_score": 1.0, "reward_metrics": {"tool_name_accuracy": 1.0}},
                           "status": "SUCCESS", "error": None}
    failed = {"agent_output": {"messages": [{"role": "assistant", "content": "ROLLOUT_ERROR: timeout"}]}}
    resp = await client.post(f"/v1/functions/{package_id}/reward",
                             json={"component": component(package_id, REWARD), "input": failed})
    assert resp.json()["status"] == "FAILED" and resp.json()["reward"]["reward_score"] == 0.0
    long = {"agent_output": {"messages": [{"role": "assistant", "content": "ten chars!"}]}}
    scores = []
    for env in ({}, {"OPD_MAX_CHARS": "3"}):
        resp = await client.post(f"/v1/functions/{package_id}/reward",
                                 json={"component": component(package_id, LENGTH, env=env), "input": long})
        scores.append(resp.json()["reward"]["reward_score"])
    assert scores == [1.0, 0.0]  # the env reached the second pool's instances only


async def test_bad_packages_are_refused_with_the_cause(client: httpx.AsyncClient) -> None:
    cases = {
        b"not a zip at all": "not a zip file",
        make_zip({"functions/__init__.py": "", "../evil.py": "x"}): "unsafe path",
        make_zip({"functions/__init__.py": "", "/etc/evil.py": "x"}): "unsafe path",
        make_zip({"other/__init__.py": "", "x.py": ""}): "no functions/__init__.py",
        make_zip({"functions/__init__.py": "", "requirements.txt": "--index-url http://x/simple\n"}): "pip options",
    }
    for data, needle in cases.items():
        resp = await client.post("/v1/functions", content=data)
        assert resp.status_code == 400 and resp.json()["code"] == "invalid_package", resp.text
        assert needle in resp.json()["detail"]
    assert (await client.post("/v1/functions", content=b"")).status_code == 400
    missing = await client.get("/v1/functions/pkg-000000000000000000000000")
    assert missing.status_code == 404 and missing.json()["code"] == "package_not_found"


async def test_import_errors_fail_the_build(client: httpx.AsyncClient) -> None:
    broken = make_zip({"functions/__init__.py": "", "functions/bad.py": "import no_such_module_xyz\n"})
    package = await upload_built(client, broken)
    assert package["status"] == "failed"
    assert "functions.bad" in package["error"] and "no_such_module_xyz" in package["error"]
    assert "Traceback" in (await client.get(f"/v1/functions/{package['package_id']}/log")).text
    resp = await client.post(f"/v1/functions/{package['package_id']}/rollout",
                             json={"component": component(package["package_id"], "functions.bad.X"),
                                   "input": rollout_input()})
    assert resp.status_code == 409 and resp.json()["code"] == "package_not_ready"


async def test_a_pip_failure_fails_the_build(client: httpx.AsyncClient) -> None:
    data = make_zip({"functions/__init__.py": "", "requirements.txt": "trajforge-no-such-dist-zz9==0.0.1\n"})
    package = await upload_built(client, data)
    assert package["status"] == "failed" and "pip install failed" in package["error"], package


async def test_a_registry_dependency_is_installed_once_per_requirements(client: httpx.AsyncClient) -> None:
    code = ("import six\nfrom shared.functions import AbstractRolloutProcessor, RolloutOutput, AgentOutput\n"
            "class UsesSix(AbstractRolloutProcessor):\n"
            "    async def process(self, input):\n"
            "        return RolloutOutput(agent_output=AgentOutput(rollout_extra={'six': six.__file__,"
            " 'version': six.__version__}))\n")
    first = await upload_built(client, make_zip({"functions/__init__.py": "", "functions/s.py": code,
                                                 "requirements.txt": "six==1.16.0\n"}))
    assert first["status"] == "ready", first
    resp = await client.post(f"/v1/functions/{first['package_id']}/rollout",
                             json={"component": component(first["package_id"], "functions.s.UsesSix"),
                                   "input": rollout_input()})
    extra = resp.json()["agent_output"]["rollout_extra"]
    assert extra["version"] == "1.16.0" and f"deps/{first['requirements_hash']}/" in extra["six"]
    second = await upload_built(client, make_zip({"functions/__init__.py": "# another package\n",
                                                  "functions/s.py": code, "requirements.txt": "six==1.16.0 # c\n"}))
    assert second["package_id"] != first["package_id"] and second["requirements_hash"] == first["requirements_hash"]
    assert "cached" in (await client.get(f"/v1/functions/{second['package_id']}/log")).text


async def test_bad_components_are_422_naming_the_field(client: httpx.AsyncClient) -> None:
    package_id = (await upload_built(client, sample_zip()))["package_id"]
    url = f"/v1/functions/{package_id}/rollout"
    cases = [({"min_capacity": 3, "capacity": 2, "max_capacity": 4}, "component.runtime.capacity"),
             ({"min_capacity": 1, "capacity": 2, "max_capacity": 1}, "component.runtime.max_capacity"),
             ({"concurrency": 0}, "component.runtime.concurrency"),
             ({"memory_scale_threshold": 0}, "component.runtime.memory_scale_threshold"),
             ({"concurrency_scale_threshold": 1.5}, "component.runtime.concurrency_scale_threshold"),
             ({"gpu": 1}, "component.runtime.gpu")]
    for runtime, field in cases:
        resp = await client.post(url, json={"component": component(package_id, MISBEHAVING, **runtime),
                                            "input": rollout_input()})
        assert resp.status_code == 422 and resp.json()["detail"].startswith(f"{field}: "), (runtime, resp.text)
    resp = await client.post(url, json={"component": component(package_id, "functions.misbehave.Nope"),
                                        "input": rollout_input()})
    assert resp.status_code == 422 and resp.json()["code"] == "component_load_failed"
    assert "functions.misbehave.Nope" in resp.json()["detail"] and MISBEHAVING in resp.json()["detail"]
