"""BaseEngineWrapper: runs rLLM-style agents against environments with a policy.

Budgets: ``max_steps`` (policy calls per episode), ``max_prompt_length``
(tokens the policy reports for a prompt), ``max_response_length`` (sampled
tokens summed over the episode), ``timeout_s`` per episode; at most
``n_parallel_agents`` episodes run at once. The termination reason and any
error are recorded on the trajectory; a failed episode never raises.

Agents and envs come from the constructor (classes) or from ``AGENTS_MAPPING``
by name: ``agent_cls="my_agent"`` (or a task's ``agent_name``) takes that
entry's ``agent_class``/``agent_args``, ``env_class``/``env_args`` and
``compute_trajectory_reward_fn``, which sets each finished trajectory's reward.
``update_from_model`` may return a ``Step`` or an ``Action`` (the reference's
form); steps are numbered by ``step_id``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from services.rollout.agents.base import BaseAgent, BaseEnv
from services.rollout.agents.registry import agent_config
from services.rollout.ports import Policy
from shared.errors import InvalidInput, TrajforgeError
from shared.schema import Action, AgentStep, AgentTask, AgentTrajectory, SamplingParams, StepResult

__all__ = ["BaseEngineWrapper"]


def _as_result(value: Any) -> StepResult:
    """Accept a StepResult, a gym-style 4-tuple, an (observation, info) pair or a bare observation."""
    if isinstance(value, StepResult):
        return value
    if isinstance(value, tuple) and len(value) == 4:
        obs, reward, done, info = value
        return StepResult(observation=obs, reward=float(reward), done=bool(done), info=dict(info or {}))
    if isinstance(value, tuple) and len(value) == 2:
        return StepResult(observation=value[0], info=dict(value[1] or {}))
    return StepResult(observation=value)


class _Setup:
    """What one task runs with: agent and env classes, their arguments, the reward function."""

    def __init__(self, agent_cls: type[BaseAgent], env_cls: type[BaseEnv] | None, agent_args: dict[str, Any],
                 env_args: dict[str, Any], reward_fn: Callable[..., Any] | None) -> None:
        if env_cls is None:
            raise InvalidInput("no environment class: pass env_cls or register one with the agent",
                               param="env_class")
        self.agent_cls, self.env_cls, self.reward_fn = agent_cls, env_cls, reward_fn
        self.agent_args, self.env_args = agent_args, env_args


def _from_mapping(name: str, env_cls: type[BaseEnv] | None, agent_args: dict[str, Any],
                  env_args: dict[str, Any]) -> _Setup:
    entry = agent_config(name)
    return _Setup(entry["agent_class"], entry.get("env_class") or env_cls,
                  {**(entry.get("agent_args") or {}), **agent_args}, {**(entry.get("env_args") or {}), **env_args},
                  entry.get("compute_trajectory_reward_fn"))


class _Stop(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BaseEngineWrapper:
    """Generates agent trajectories for tasks; subclass to change how the policy is called."""

    def __init__(self, policy: Policy, *, agent_cls: type[BaseAgent] | str = "chat",
                 env_cls: type[BaseEnv] | None = None, agent_name: str | None = None, tokenizer: Any = None,
                 sampling_params: SamplingParams | dict[str, Any] | None = None, n_parallel_agents: int = 128,
                 max_steps: int = 5, max_prompt_length: int | None = None,
                 max_response_length: int | None = None, timeout_s: float | None = None,
                 agent_args: dict[str, Any] | None = None, env_args: dict[str, Any] | None = None,
                 compute_trajectory_reward_fn: Callable[..., Any] | None = None) -> None:
        self.policy, self.tokenizer = policy, tokenizer
        # ``agent_name`` is the reference's spelling of an ``AGENTS_MAPPING`` name.
        agent_cls = agent_name or agent_cls
        self.agent_cls, self.env_cls, self.reward_fn = agent_cls, env_cls, compute_trajectory_reward_fn
        if isinstance(agent_cls, str):
            agent_config(agent_cls)  # an unknown name is refused now, not per task
        self.sampling = (sampling_params if isinstance(sampling_params, SamplingParams)
                         else SamplingParams.model_validate(sampling_params or {}))
        self.max_steps, self.max_prompt_length = max_steps, max_prompt_length
        self.max_response_length, self.timeout_s = max_response_length, timeout_s
        self.agent_args, self.env_args = dict(agent_args or {}), dict(env_args or {})
        self._slots = asyncio.Semaphore(n_parallel_agents)

    async def execute_tasks(self, tasks: Sequence[AgentTask], stream_queue: asyncio.Queue[Any] | None = None
                            ) -> list[AgentTrajectory]:
        """Run every task; results keep the task order."""
        return list(await asyncio.gather(*(self.generate_trajectory(t, stream_queue) for t in tasks)))

    async def generate_trajectory(self, task: AgentTask, stream_queue: asyncio.Queue[Any] | None = None
                                  ) -> AgentTrajectory:
        """Run one episode; the finished trajectory is also put on ``stream_queue``."""
        async with self._slots:
            setup = self._setup(task)
            agent = setup.agent_cls(**setup.agent_args)
            env = setup.env_cls.from_dict({**setup.env_args, **task.model_dump()})
            try:
                traj = await self._run(agent, env, task)
            finally:
                await self._call(env, env.close)
            if setup.reward_fn is not None:
                traj = await self._score(setup.reward_fn, traj)
        if stream_queue is not None:
            await stream_queue.put(traj)
        return traj

    def _setup(self, task: AgentTask) -> _Setup:
        """A task naming an agent uses that entry; otherwise the constructor's classes."""
        if task.agent_name:
            return _from_mapping(task.agent_name, self.env_cls, self.agent_args, self.env_args)
        if isinstance(self.agent_cls, str):
            setup = _from_mapping(self.agent_cls, self.env_cls, self.agent_args, self.env_args)
        else:
            setup = _Setup(self.agent_cls, self.env_cls, self.agent_args, self.env_args, None)
        setup.reward_fn = self.reward_fn or setup.reward_fn
        return setup

    @staticmethod
    async def _score(fn: Callable[..., Any], traj: AgentTrajectory) -> AgentTrajectory:
        """``compute_trajectory_reward_fn(trajectory)``: a number sets the reward; a trajectory replaces it."""
        out = await fn(traj) if inspect.iscoroutinefunction(fn) else fn(traj)
        if isinstance(out, AgentTrajectory):
            return out
        if out is not None:
            traj.reward = float(out)
        return traj

    async def _run(self, agent: BaseAgent, env: BaseEnv, task: AgentTask) -> AgentTrajectory:
        reason, error = "MAX_STEPS", None
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._loop(agent, env, task)
        except _Stop as stop:
            reason = stop.reason
        except TimeoutError:
            reason = "TIMEOUT"
        except TrajforgeError as exc:
            reason, error = "ERROR", f"{exc.code}: {exc}"
        return self._finish(agent, task, reason, error)

    async def _loop(self, agent: BaseAgent, env: BaseEnv, task: AgentTask) -> None:
        agent.reset()
        first = _as_result(await self._call(env, env.reset))
        agent.update_from_env(first.observation, 0.0, False, first.info)
        sampled = 0
        for _ in range(self.max_steps):
            if self._prompt_too_long(agent.chat_completions, task):
                raise _Stop("PROMPT_TRUNCATION")
            out = await self.policy.chat(agent.chat_completions, tools=task.tools or None,
                                         sampling=self._sampling(sampled))
            if self.max_prompt_length and (out.prompt_tokens or 0) > self.max_prompt_length:
                raise _Stop("PROMPT_TRUNCATION")
            sampled += len(out.token_ids)
            action = self._action(agent, agent.update_from_model(out.text))
            result = _as_result(await self._call(env, env.step, action))
            agent.update_from_env(result.observation, result.reward, result.done, result.info)
            if result.done:
                raise _Stop("ENV_DONE")
            if out.finish_reason == "length" or self._spent(sampled):
                raise _Stop("TRUNCATION")

    @staticmethod
    def _action(agent: BaseAgent, reply: Any) -> Any:
        """The action of a returned Step or Action (anything else is the action itself); numbers the step."""
        step = agent.get_current_state()
        if step is not None:
            step.step_id = len(agent.trajectory.steps) - 1
        if isinstance(reply, (AgentStep, Action)):
            return reply.action
        return reply

    def _prompt_too_long(self, messages: list[dict[str, Any]], task: AgentTask) -> bool:
        """With a tokenizer, measure the prompt before sending it (else the policy's count is used)."""
        if self.tokenizer is None or not self.max_prompt_length:
            return False
        kwargs = {"tools": task.tools} if task.tools else {}
        ids = self.tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, **kwargs)
        ids = ids.get("input_ids", ids) if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        return len(ids) > self.max_prompt_length

    def _sampling(self, sampled: int) -> SamplingParams:
        if self.max_response_length is None:
            return self.sampling
        left = self.max_response_length - sampled
        cap = left if self.sampling.max_tokens is None else min(left, self.sampling.max_tokens)
        return self.sampling.model_copy(update={"max_tokens": cap})

    def _spent(self, sampled: int) -> bool:
        return self.max_response_length is not None and sampled >= self.max_response_length

    async def _call(self, env: BaseEnv, fn: Callable[..., Any], *args: Any) -> Any:
        if inspect.iscoroutinefunction(fn):
            return await fn(*args)
        if env.is_multithread_safe():
            return await asyncio.to_thread(fn, *args)
        return fn(*args)

    @staticmethod
    def _finish(agent: BaseAgent, task: AgentTask, reason: str, error: str | None) -> AgentTrajectory:
        traj = agent.trajectory
        running = 0.0
        for step in reversed(traj.steps):  # Monte Carlo return, undiscounted
            running += step.reward
            step.mc_return = running
        traj.task = task.model_dump()
        traj.reward = sum(s.reward for s in traj.steps)
        traj.termination_reason, traj.error = reason, error
        traj.prompt_id, traj.sample_id, traj.iteration_id = task.prompt_id, task.sample_id, task.iteration
        traj.data_id = task.task_id
        return traj
