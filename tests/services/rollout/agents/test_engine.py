"""BaseEngineWrapper with a real guessing-game environment. The policy is a scripted
policy (fixed replies, tokenised by the real SmolLM2 tokenizer)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, ClassVar

from services.rollout.agents import BaseEngineWrapper, BaseEnv
from shared.errors import EnvError
from shared.schema import AgentTask, AgentTrajectory, StepResult
from tests.services.rollout.support import ScriptedPolicy

GUESSES = ["guess 50", "guess 25", "guess 37", "guess 31", "guess 34"]


class GuessEnv(BaseEnv):
    """Guess a number; observations say higher or lower."""

    closed: ClassVar[list[str]] = []
    threads: ClassVar[set[str]] = set()

    def __init__(self, target: int, task_id: str) -> None:
        self.target, self.task_id = target, task_id

    @classmethod
    def from_dict(cls, info: dict[str, Any]) -> GuessEnv:
        return cls(int(info["ground_truth"]), info["id"])

    @staticmethod
    def is_multithread_safe() -> bool:
        return True

    def reset(self) -> tuple[str, dict[str, Any]]:
        GuessEnv.threads.add(threading.current_thread().name)
        return "Guess my number between 1 and 100.", {}

    def step(self, action: Any) -> StepResult:
        if "explode" in str(action):
            raise EnvError("the environment broke")
        guess = int(str(action).split()[-1])
        if guess == self.target:
            return StepResult(observation="correct", reward=1.0, done=True)
        return StepResult(observation="higher" if guess < self.target else "lower", reward=-0.1)

    def close(self) -> None:
        GuessEnv.closed.append(self.task_id)


def wrapper(tok: Any, script: Any = None, **kw: Any) -> BaseEngineWrapper:
    policy = ScriptedPolicy(tok, script or (lambda u, t: GUESSES[min(t, len(GUESSES) - 1)]))
    return BaseEngineWrapper(policy, agent_cls="chat", env_cls=GuessEnv, **kw)


async def test_episode_runs_until_the_env_is_done(smol_tokenizer: Any) -> None:
    traj = await wrapper(smol_tokenizer, max_steps=10).generate_trajectory(
        AgentTask(id="g1", ground_truth=37))
    assert traj.termination_reason == "ENV_DONE"  # type: ignore[attr-defined]
    assert [s.action for s in traj.steps] == GUESSES[:3]
    assert [s.reward for s in traj.steps] == [-0.1, -0.1, 1.0]
    assert abs(traj.steps[0].mc_return - 0.8) < 1e-9 and abs(traj.reward - 0.8) < 1e-9
    assert traj.steps[-1].chat_completions[0]["content"] == "Guess my number between 1 and 100."
    assert "g1" in GuessEnv.closed and not GuessEnv.threads <= {threading.current_thread().name}


async def test_max_steps_and_response_budget(smol_tokenizer: Any) -> None:
    traj = await wrapper(smol_tokenizer, max_steps=2).generate_trajectory(AgentTask(id="g2", ground_truth=34))
    assert traj.termination_reason == "MAX_STEPS" and len(traj.steps) == 2  # type: ignore[attr-defined]
    short = await wrapper(smol_tokenizer, max_steps=10, max_response_length=5).generate_trajectory(
        AgentTask(id="g3", ground_truth=34))
    assert short.termination_reason == "TRUNCATION"  # type: ignore[attr-defined]


async def test_prompt_length_budget(smol_tokenizer: Any) -> None:
    traj = await wrapper(smol_tokenizer, max_prompt_length=10).generate_trajectory(
        AgentTask(id="g4", ground_truth=34))
    assert traj.termination_reason == "PROMPT_TRUNCATION" and traj.steps == []  # type: ignore[attr-defined]


async def test_env_error_is_recorded_and_streams_to_the_queue(smol_tokenizer: Any) -> None:
    queue: asyncio.Queue[AgentTrajectory] = asyncio.Queue()
    eng = wrapper(smol_tokenizer, script=lambda u, t: "explode", n_parallel_agents=2)
    trajs = await eng.execute_tasks([AgentTask(id=f"e{i}", ground_truth=1) for i in range(3)], queue)
    assert [t.termination_reason for t in trajs] == ["ERROR"] * 3  # type: ignore[attr-defined]
    assert trajs[0].error == "env_error: the environment broke"  # type: ignore[attr-defined]
    assert queue.qsize() == 3


async def test_episode_timeout(smol_tokenizer: Any) -> None:
    policy = ScriptedPolicy(smol_tokenizer, lambda u, t: "guess 1", delay_s=lambda i: 5.0)
    eng = BaseEngineWrapper(policy, agent_cls="chat", env_cls=GuessEnv, timeout_s=0.1)
    traj = await eng.generate_trajectory(AgentTask(id="t", ground_truth=2))
    assert traj.termination_reason == "TIMEOUT" and policy.cancelled == 1  # type: ignore[attr-defined]
