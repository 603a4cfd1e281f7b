"""docker-compose.yml validates (no container engine here, so `config` is the check)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import yaml

from tests.conftest import REPO_ROOT

SERVICES = {"postgres", "redis", "migrate", "gateway", "inference", "cleaning", "tools", "envs", "rollout",
            "reward", "functions", "worker", "console"}


def _compose() -> list[str]:
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    found = shutil.which("docker-compose")
    assert found, "neither `docker compose` nor `docker-compose` is installed (make test installs it)"
    return [found]


def _config(*extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRAJFORGE_KEY_SALT": "compose-check"}
    return subprocess.run([*_compose(), *extra, "config"], cwd=REPO_ROOT, env=env, capture_output=True, text=True)


def test_compose_file_is_valid_with_every_service() -> None:
    result = _config()
    assert result.returncode == 0, result.stderr
    rendered = yaml.safe_load(result.stdout)
    assert set(rendered["services"]) >= SERVICES
    vllm = rendered["services"].get("vllm")
    assert vllm is None or vllm["profiles"] == ["gpu"]  # the policy server only runs with the gpu profile


def test_gpu_profile_adds_the_vllm_policy_server() -> None:
    result = _config("--profile", "gpu")
    assert result.returncode == 0, result.stderr
    assert "vllm" in yaml.safe_load(result.stdout)["services"]


def test_every_long_running_service_has_a_health_check() -> None:
    doc = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    rendered = yaml.safe_load(_config().stdout)["services"]
    for name, svc in rendered.items():
        if name != "migrate":
            assert "healthcheck" in svc, name
    assert doc["services"]["migrate"]["command"] == ["trajforge", "db", "upgrade"]


def test_compose_wires_every_service_by_the_split_url_table() -> None:
    from shared.topology import CALLS, env_for, url_table

    rendered = yaml.safe_load(_config().stdout)["services"]
    table = url_table("compose")
    for name, calls in CALLS.items():
        env = rendered[name].get("environment") or {}
        given = {k: v for k, v in env.items()
                 if k.startswith("TRAJFORGE_") and k.endswith("_URL") and k[10:-4].lower() in table}
        assert given == env_for(name, table), name  # exactly the services it calls, at the table's URLs
        assert all(table[c].startswith(f"http://{c}:") for c in calls)
    for name, port in (("inference", "8001"), ("envs", "8004")):
        assert str(rendered[name]["ports"][0]["published"]) == port
    assert [str(v).split(":")[0] if isinstance(v, str) else v["source"] for v in rendered["inference"]["volumes"]] == [
        "model-cache"]
    assert "seccomp=unconfined" in rendered["envs"]["security_opt"]


def test_up_split_uses_the_same_table_on_loopback_ports() -> None:
    from shared.topology import PORT_OFFSETS, SplitStack, url_table

    stack = SplitStack(base_port=9100)
    assert stack.table == url_table("loopback", base_port=9100)
    assert {n: int(u.rsplit(":", 1)[1]) - 9100 for n, u in stack.table.items()} == PORT_OFFSETS
    compose = yaml.safe_load(_config().stdout)["services"]
    for name, offset in PORT_OFFSETS.items():  # compose publishes each service on 8000 + the same offset
        assert str(compose[name]["ports"][0]["published"]) == str(8000 + offset), name
    env = stack._env("rollout")
    assert env["TRAJFORGE_ENVS_URL"] == "http://127.0.0.1:9104" and "TRAJFORGE_INFERENCE_URL" not in env
    console = stack._env("console")
    assert console["TRAJFORGE_CONSOLE_API_URL"] == "http://127.0.0.1:9105"
    assert json.loads(console["TRAJFORGE_CONSOLE_ROUTES"])["/v1/clean"] == "http://127.0.0.1:9102/v1/clean"


def test_compose_console_reads_the_api_by_the_same_routes_as_up_split() -> None:
    from shared.topology import console_env, url_table

    env = yaml.safe_load(_config().stdout)["services"]["console"]["environment"]
    want = console_env(url_table("compose"))
    assert env["TRAJFORGE_CONSOLE_API_URL"] == want["TRAJFORGE_CONSOLE_API_URL"]
    assert json.loads(env["TRAJFORGE_CONSOLE_ROUTES"]) == json.loads(want["TRAJFORGE_CONSOLE_ROUTES"])
