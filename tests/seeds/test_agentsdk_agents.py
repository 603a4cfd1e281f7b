"""AgentSDK seed, core classes and data classes: ``BaseAgent``, ``BaseEnv``, ``BaseEngineWrapper``,
``AGENTS_MAPPING`` / ``get_agent_by_name``, ``AgentTask``, ``Step``, ``Action``, ``Trajectory``, as the
document defines them. The policy is the local inference server on loopback with a SCRIPTED reply,
reached through the ``OpenAI`` protocol client (real HTTP).

trajforge names: ``aura.runner.agent_engine_wrapper.base.*`` are ``services.rollout.agents``;
``agents.agents_mapping`` is ``services.rollout.agents.registry``; the data classes are in
``shared.schema`` (``Trajectory`` there is ``AgentTrajectory``).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from services.rollout.agents import AGENTS_MAPPING, BaseAgent, BaseEngineWrapper, BaseEnv, get_agent_by_name
from services.rollout.protocol import OpenAI
from shared.schema import Action, AgentTask, AgentTrajectory, Step
from tests.seeds.seed_support import scripted_server, smol_tokenizer


class MyAgent(BaseAgent):
    """Keeps the chat; the reply's last word is the action."""

    def __init__(self, system_prompt: str = "Answer with a number.") -> None:
        super().__init__()
        self.system_prompt = system_prompt
        self.reset()

    def reset(self) -> None:
        super().reset()
        self.messages.append({"role": "system", "content": self.system_prompt})

    def update_from_env(self, observation: Any, reward: float, done: bool, info: dict[str, Any],
                        **kwargs: Any) -> None:
        if self.trajectory.steps:
            step = self.trajectory.steps[-1]
            step.observation, step.reward, step.done, step.info = observation, reward, done, dict(info)
        if not done:
            question = observation["question"] if isinstance(observation, dict) else str(observation)
            self.messages.append({"role": "user", "content": question})

    def update_from_model(self, response: str, **kwargs: Any) -> Action:
        self.messages.append({"role": "assistant", "content": response})
        self.trajectory.steps.append(Step(chat_completions=list(self.messages), model_response=response,
                                          action=response.split()[-1] if response.split() else ""))
        return Action(action=response.split()[-1] if response.split() else "")


class MyEnv(BaseEnv):
    """Asks the task's problem; an answer equal to the ground truth ends the episode."""

    def __init__(self, problem: str, ground_truth: str, max_tries: int = 3) -> None:
        self.problem, self.ground_truth, self.max_tries, self.tries = problem, ground_truth, max_tries, 0

    def reset(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return {"question": self.problem}, {"tries": 0}

    def step(self, action: Any) -> tuple[Any, float, bool, dict[str, Any]]:
        self.tries += 1
        correct = str(action) == self.ground_truth
        done = correct or self.tries >= self.max_tries
        return {"question": "try again"}, 1.0 if correct else 0.0, done, {"tries": self.tries}

    @staticmethod
    def from_dict(info: dict[str, Any]) -> MyEnv:
        return MyEnv(info["problem"], str(info["ground_truth"]), int(info.get("max_tries", 3)))

    @staticmethod
    def is_multithread_safe() -> bool:
        return True


def compute_trajectory_reward(trajectory: AgentTrajectory) -> float:
    return 10.0 * sum(s.reward for s in trajectory.steps)


@pytest.fixture
def my_agent() -> Any:
    entry = {"name": "my_agent", "env_class": MyEnv, "env_args": {"max_tries": 2}, "agent_class": MyAgent,
             "agent_args": {"system_prompt": "Reply with the number only."},
             "compute_trajectory_reward_fn": compute_trajectory_reward}
    AGENTS_MAPPING.append(entry)
    yield entry
    AGENTS_MAPPING.remove(entry)


def test_agent_task_as_the_reference_defines_it() -> None:
    task = AgentTask(sample_id=3, iteration=2, agent_name="my_agent", problem="6*7?", ground_truth="42",
                     prompt_id=5, content="extra", extra_args={"k": 1})
    uuid.UUID(task.task_id)  # a UUID by default
    assert task.id == task.task_id and task.messages == [{"role": "user", "content": "6*7?"}]
    assert (task.sample_id, task.iteration, task.prompt_id, task.content, task.extra_args) == (3, 2, 5, "extra", {"k": 1})
    assert AgentTask(task_id="t-1", sample_id=0, iteration=0, agent_name="a", problem="p").id == "t-1"


def test_step_action_and_trajectory_fields() -> None:
    step = Step()
    assert (step.chat_completions, step.thought, step.action, step.observation, step.model_response, step.info,
            step.reward, step.done, step.mc_return, step.step_id) == ([], "", None, None, "", {}, 0.0, False, 0.0, 0)
    assert Action().action is None and Action(action={"tool": "x"}).action == {"tool": "x"}
    traj = AgentTrajectory()
    assert (traj.task, traj.steps, traj.reward, traj.toolcall_reward, traj.res_reward, traj.prompt_id,
            traj.data_id, traj.training_id, traj.epoch_id, traj.iteration_id, traj.sample_id, traj.trajectory_id,
            traj.application_id, traj.termination_reason) == (None, [], 0.0, 0.0, 0.0, 0, None, None, 0, 0, 0, 0,
                                                              "", "unknown")


def test_agents_mapping_lookup(my_agent: dict[str, Any]) -> None:
    assert get_agent_by_name("my_agent") is my_agent
    assert get_agent_by_name("missing") is None


def test_engine_wrapper_runs_a_mapped_agent(my_agent: dict[str, Any]) -> None:
    import asyncio

    with scripted_server("The answer is 42") as url:
        policy = OpenAI(model="qwen3.5-32b", base_url=f"{url}/v1")
        wrapper = BaseEngineWrapper(policy, agent_name="my_agent", tokenizer=smol_tokenizer(),
                                    sampling_params={"temperature": 0.0, "max_tokens": 16},
                                    max_prompt_length=128 * 1024, max_response_length=8 * 1024,
                                    n_parallel_agents=8, max_steps=5)
        task = AgentTask(sample_id=0, iteration=1, agent_name="my_agent", problem="What is 6*7?", ground_truth="42")
        traj = asyncio.run(wrapper.generate_trajectory(task))
    assert traj.termination_reason == "ENV_DONE" and len(traj.steps) == 1
    step = traj.steps[0]
    assert step.action == "42" and step.reward == 1.0 and step.step_id == 0 and step.done
    assert traj.reward == 10.0  # compute_trajectory_reward_fn set it
    assert traj.steps[0].chat_completions[0] == {"role": "system", "content": "Reply with the number only."}
    assert traj.data_id == task.task_id and traj.iteration_id == 1


def test_prompt_budget_is_measured_with_the_tokenizer(my_agent: dict[str, Any]) -> None:
    import asyncio

    with scripted_server("7") as url:
        wrapper = BaseEngineWrapper(OpenAI(model="qwen3.5-32b", base_url=f"{url}/v1"), agent_name="my_agent",
                                    tokenizer=smol_tokenizer(), max_prompt_length=5, max_steps=5)
        traj = asyncio.run(wrapper.generate_trajectory(
            AgentTask(sample_id=0, iteration=0, agent_name="my_agent", problem="What is 6*7?", ground_truth="42")))
    assert traj.termination_reason == "PROMPT_TRUNCATION" and traj.steps == []
