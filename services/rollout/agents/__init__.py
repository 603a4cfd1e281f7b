"""The rLLM-style agent API: agents, environments, the engine wrapper and registries."""

from services.rollout.agents.base import BaseAgent, BaseEnv
from services.rollout.agents.chat_agent import ChatAgent
from services.rollout.agents.engine import BaseEngineWrapper
from services.rollout.agents.registry import (
    AGENTS_MAPPING,
    JsonlTasks,
    ListTasks,
    Registry,
    agent_config,
    get_agent_by_name,
    register_agent,
)

__all__ = [
    "AGENTS_MAPPING",
    "BaseAgent",
    "BaseEngineWrapper",
    "BaseEnv",
    "ChatAgent",
    "JsonlTasks",
    "ListTasks",
    "Registry",
    "agent_config",
    "get_agent_by_name",
    "register_agent",
]
