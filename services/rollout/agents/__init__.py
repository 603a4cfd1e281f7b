"""The rLLM-style agent API: agents, environments, the engine wrapper and registries."""

from services.rollout.agents.base import BaseAgent, BaseEnv
from services.rollout.agents.chat_agent import ChatAgent
from services.rollout.agents.engine import BaseEngineWrapper
from services.rollout.agents.registry import (
    AGENTS_MAPPING,
    DataManagerRegistry,
    JsonlTasks,
    ListTasks,
    Registry,
    TrainMode,
    TrainRegistry,
    get_agent_by_name,
)

__all__ = [
    "AGENTS_MAPPING",
    "BaseAgent",
    "BaseEngineWrapper",
    "BaseEnv",
    "ChatAgent",
    "DataManagerRegistry",
    "JsonlTasks",
    "ListTasks",
    "Registry",
    "TrainMode",
    "TrainRegistry",
    "get_agent_by_name",
]
