"""ChatAgent: the plain multi-turn agent (observations as user turns, replies as actions)."""

from __future__ import annotations

from typing import Any

from services.rollout.agents.base import BaseAgent
from shared.schema import AgentStep

__all__ = ["ChatAgent"]


class ChatAgent(BaseAgent):
    """Sends observations as user messages; the whole reply is the action."""

    def __init__(self, system_prompt: str | None = None) -> None:
        super().__init__()
        self.system_prompt = system_prompt
        self.reset()

    def reset(self) -> None:
        """Start again from the system prompt."""
        super().reset()
        if self.system_prompt:
            self.messages.append({"role": "system", "content": self.system_prompt})

    def update_from_env(self, observation: Any, reward: float, done: bool, info: dict[str, Any]) -> None:
        """Record the reward on the last step and show the observation as a user turn."""
        if self.trajectory.steps:
            last = self.trajectory.steps[-1]
            last.reward, last.done, last.info = reward, done, dict(info)
        if not done and observation is not None:
            text = observation if isinstance(observation, str) else str(observation)
            self.messages.append({"role": "user", "content": text})

    def update_from_model(self, response: str, **kwargs: Any) -> AgentStep:
        """Append the reply and take it as the action."""
        self.messages.append({"role": "assistant", "content": response})
        step = AgentStep(chat_completions=[dict(m) for m in self.messages], model_response=response,
                         action=response)
        self.trajectory.steps.append(step)
        return step
