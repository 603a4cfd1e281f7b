"""Environment and agent types: StepResult, AgentTask and the agent-view Step/Action/Trajectory.

``AgentTask`` takes both trajforge's fields (``id``, ``messages``, ``tools``,
``metadata``) and the AgentSDK reference's (``task_id``, ``sample_id``,
``iteration``, ``agent_name``, ``problem``, ``ground_truth``, ``prompt_id``,
``content``, ``extra_args``): ``id`` and ``task_id`` are one identifier (a UUID
when neither is given), and a task given only a ``problem`` gets it as its user
turn. ``Step`` is ``AgentStep`` under the reference's name.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Action", "AgentStep", "AgentTask", "AgentTrajectory", "Step", "StepResult", "to_observation_text"]


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

    id: str = ""
    task_id: str = ""
    sample_id: int = 0
    iteration: int = 0
    agent_name: str = ""
    problem: str = ""
    ground_truth: Any = None
    prompt_id: int = 0
    content: str = ""
    extra_args: dict[str, Any] | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_identity(self) -> AgentTask:
        if self.id and self.task_id and self.id != self.task_id:
            raise ValueError(f"id {self.id!r} and task_id {self.task_id!r} name the same task; give one")
        self.id = self.task_id = self.id or self.task_id or str(uuid.uuid4())
        if not self.messages and self.problem:
            self.messages = [{"role": "user", "content": self.problem}]
        elif self.messages and not self.problem:
            self.problem = next((str(m.get("content") or "") for m in self.messages if m.get("role") == "user"), "")
        return self


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
    step_id: int = 0


#: The reference's name for one agent step.
Step = AgentStep


class Action(BaseModel):
    """What an agent decided to do (``update_from_model`` may return one instead of a Step)."""

    model_config = ConfigDict(extra="allow")

    action: Any = None


class AgentTrajectory(BaseModel):
    """The rLLM-style agent trajectory: a task, its steps, rewards and why it ended."""

    model_config = ConfigDict(extra="allow")

    task: Any = None
    steps: list[AgentStep] = Field(default_factory=list)
    reward: float = 0.0
    toolcall_reward: float = 0.0
    res_reward: float = 0.0
    prompt_id: int = 0
    data_id: str | None = None
    training_id: str | None = None
    epoch_id: int = 0
    iteration_id: int = 0
    sample_id: int = 0
    trajectory_id: int = 0
    application_id: str = ""
    termination_reason: str = "unknown"
    error: str | None = None
