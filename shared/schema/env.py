"""Environment and agent types: StepResult, AgentTask and the agent-view Step/Trajectory."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentStep", "AgentTask", "AgentTrajectory", "StepResult", "to_observation_text"]


def to_observation_text(observation: Any) -> str:
    """Render an observation as the text a model sees (never the reward).

    A string is itself; an object gives its first text field (``text``, ``result``,
    ``output``, ``content``, ``message``), else its JSON.
    """
    if observation is None:
        return ""
    if isinstance(observation, str):
        return observation
    if isinstance(observation, dict):
        for key in ("text", "result", "output", "content", "message"):
            if isinstance(observation.get(key), str):
                return str(observation[key])
    import orjson

    return orjson.dumps(observation, default=str).decode()


class StepResult(BaseModel):
    """What an environment returns from ``reset`` or ``step``."""

    model_config = ConfigDict(extra="allow")

    observation: Any = None
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


class AgentTask(BaseModel):
    """One task handed to an agent: the prompt, tools, ground truth and metadata."""

    model_config = ConfigDict(extra="allow")

    id: str
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    ground_truth: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class AgentStep(BaseModel):
    """One agent step in the rLLM-style view (observation, thought, action, reward)."""

    model_config = ConfigDict(extra="allow")

    chat_completions: list[dict[str, Any]] = Field(default_factory=list)
    observation: Any = None
    thought: str = ""
    action: Any = None
    model_response: str = ""
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = Field(default_factory=dict)
    mc_return: float = 0.0


class AgentTrajectory(BaseModel):
    """The rLLM-style agent trajectory: a task, its steps and the total reward."""

    model_config = ConfigDict(extra="allow")

    task: Any = None
    steps: list[AgentStep] = Field(default_factory=list)
    reward: float = 0.0
