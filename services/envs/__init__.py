"""Environment hosting: the seed Env API, built-in envs, the OpenEnv server and client."""

from services.envs.agent_env import AgentEnv
from services.envs.base import Env, EnvTool, to_observation_text
from services.envs.builtin import register_builtins
from services.envs.counter_env import CounterEnv
from services.envs.openenv_client import OpenEnv, tool_call_action, ws_url
from services.envs.openenv_server import OpenEnvServer, ServerConfig
from services.envs.registry import (
    EnvRegistry,
    EnvSpec,
    default_registry,
    get_env,
    list_envs,
    register_env,
)
from services.envs.routing_env import SYSTEM_PROMPT, ToolRoutingEnv
from services.envs.skill_env import SkillEnv, SkillSpec, load_skill

__all__ = [
    "SYSTEM_PROMPT",
    "AgentEnv",
    "CounterEnv",
    "Env",
    "EnvRegistry",
    "EnvSpec",
    "EnvTool",
    "OpenEnv",
    "OpenEnvServer",
    "ServerConfig",
    "SkillEnv",
    "SkillSpec",
    "ToolRoutingEnv",
    "default_registry",
    "get_env",
    "list_envs",
    "load_skill",
    "register_builtins",
    "register_env",
    "to_observation_text",
    "tool_call_action",
    "ws_url",
]
