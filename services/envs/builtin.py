"""Registration of the built-in envs."""

from __future__ import annotations

from services.envs.counter_env import CounterEnv
from services.envs.registry import EnvRegistry, default_registry
from services.envs.routing_env import ToolRoutingEnv
from services.envs.skill_env import SkillEnv

__all__ = ["register_builtins"]


def register_builtins(registry: EnvRegistry | None = None) -> EnvRegistry:
    """Register ``counter``, ``tool_routing`` and ``skill`` (order_status) in ``registry``."""
    reg = registry or default_registry
    reg.register("counter", CounterEnv)
    reg.register("tool_routing", ToolRoutingEnv)
    reg.register("skill", SkillEnv, skill="order_status")
    return reg
