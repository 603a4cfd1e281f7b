"""docker-compose.yml validates (no container engine here, so `config` is the check)."""

from __future__ import annotations

import os
import shutil
import subprocess

import yaml

from tests.conftest import REPO_ROOT

SERVICES = {"postgres", "redis", "migrate", "gateway", "inference", "cleaning", "tools", "envs", "rollout",
            "reward", "worker", "console"}


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
