"""The rLLM-style agent API: an agent turns observations into prompts and replies into actions;
an environment turns actions into observations and rewards.

Override the hooks, not the loop: ``BaseEngineWrapper`` drives ``reset`` ->
``update_from_env`` -> policy -> ``update_from_model`` -> ``step`` until the
environment is done or a budget runs out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from shared.schema import Action, AgentStep, AgentTrajectory, StepResult

__all__ = ["BaseAgent", "BaseEnv"]


class BaseAgent(ABC):
    """An agent: keeps its chat history and the agent-view trajectory."""

    def __init__(self) -> None:
        self._trajectory = AgentTrajectory()
        self.messages: list[dict[str, Any]] = []

    def reset(self) -> None:
        """Forget everything; called before each episode."""
        self._trajectory = AgentTrajectory()
        self.messages = []

    @abstractmethod
    def update_from_env(self, observation: Any, reward: float, done: bool, info: dict[str, Any]) -> None:
        """Override to turn an environment observation into chat messages."""

    @abstractmethod
    def update_from_model(self, response: str, **kwargs: Any) -> AgentStep | Action:
        """Override to turn the policy's reply into the next action (a ``Step`` or an ``Action``)."""

    @property
    def chat_completions(self) -> list[dict[str, Any]]:
        """The messages to send to the policy next."""
        return self.messages

    @property
    def trajectory(self) -> AgentTrajectory:
        """The agent-view trajectory built so far."""
        return self._trajectory

    def get_current_state(self) -> AgentStep | None:
        """The last step, or ``None`` before the first reply."""
        return self._trajectory.steps[-1] if self._trajectory.steps else None


class BaseEnv(ABC):
    """An environment. Methods may be plain or ``async``; plain ones run in a worker
    thread when ``is_multithread_safe()`` says so, else on the event loop."""

    @abstractmethod
    def reset(self) -> StepResult | Any:
        """Override to start an episode; returns the first observation."""

    @abstractmethod
    def step(self, action: Any) -> StepResult | Any:
        """Override to apply an action; returns observation, reward, done, info."""

    def close(self) -> None:  # noqa: B027  (optional hook: most envs hold nothing to release)
        """Override to release resources (sandboxes, files)."""

    @staticmethod
    def is_multithread_safe() -> bool:
        """Whether plain ``reset``/``step``/``close`` may run in a worker thread."""
        return False

    @classmethod
    @abstractmethod
    def from_dict(cls, info: dict[str, Any]) -> BaseEnv:
        """Override to build an environment from a task's data."""
