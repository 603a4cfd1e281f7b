from __future__ import annotations

from services.envs.builtin import register_builtins
from services.envs.registry import EnvRegistry
from services.envs.skill_env import SkillEnv


def test_builtins_are_registered() -> None:
    reg = register_builtins(EnvRegistry())
    assert reg.names() == ["counter", "skill", "tool_routing"]
    skill = reg.get("skill")
    assert isinstance(skill, SkillEnv) and skill.spec.skill_name == "order_status"
