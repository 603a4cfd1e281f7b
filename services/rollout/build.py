"""From a job spec to a running engine: policy, tools or env, parser, token bridge.

``check_spec`` resolves every name a spec uses (backend, parser family) at
submission, so a bad name is a 422 then, not a failed shard later; env, tool
and reward component names are the envs, tools and reward services' to answer
(``services.rollout.service.check_services``). ``build_runtime`` builds what
one shard runs with. Every env is reached over OpenEnv: ``env.base_url`` any
server, ``env.name`` the envs service through its client (its URL, or its app in
this process when embedded).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from services.rollout.adapters import (
    POLICY_FACTORIES,
    BackendPolicy,
    local_token_bridge,
    toolcall_parser,
)
from services.rollout.bridge import TokenBridge
from services.rollout.engine import AsyncRolloutEngine, ToolsSource
from services.rollout.errors import ProcessorLoadError
from services.rollout.gateway_link import session_id_for
from services.rollout.gateway_policy import GatewayPolicy
from services.rollout.ports import Policy
from services.rollout.processors import ProcessorSpec, load_processor
from services.rollout.remote import RemoteEnv, ServiceLink, ToolsServiceExecutor
from services.rollout.schemas import RolloutRunSpec
from shared.backends.registry import default_registry as backend_registry
from shared.errors import TrajforgeError, ValidationFailed
from shared.plugins import check_allowed, load_object
from shared.schema import Trajectory
from shared.schema.functions import RewardFunctionComponent
from shared.schema.reward_spec import RewardSpec
from shared.settings import Settings
from shared.toolcalls import family_names

__all__ = [
    "RolloutRuntime",
    "build_runtime",
    "check_processor",
    "check_processor_module",
    "check_reward_function",
    "check_spec",
    "needs_services",
    "policy_via_gateway",
    "reward_processors_of",
    "reward_spec_of",
]

# A policy call with no trajectory timeout of its own: long enough for a CPU engine's turn.
_POLICY_TIMEOUT_S = 600.0


def reward_spec_of(spec: RolloutRunSpec) -> RewardSpec | None:
    """The job's reward spec, or None when it asks for no scoring (reward functions alone: an empty spec).

    Reward functions that name an uploaded package join the spec's ``functions`` (run by the
    functions service's workers, by weight); the others are in-process processors
    (``reward_processors_of``).
    """
    uploaded = [c for c in spec.reward_functions or [] if c.fcmodel.package_id is not None]
    if spec.reward is not None:
        reward = RewardSpec.model_validate(spec.reward)
    elif spec.reward_functions:
        reward = RewardSpec(components=[])
    else:
        return None
    if uploaded:
        reward = reward.model_copy(update={"functions": [*reward.functions, *uploaded]})
    return reward


def reward_processors_of(spec: RolloutRunSpec) -> list[dict[str, Any]]:
    """The job's in-process reward functions as the reward service's processor refs (weights kept)."""
    return [{"classpath": c.fcmodel.classpath, "name": c.name, "weight": c.weight,
             "timeout_s": min(c.timeout, 600.0), "concurrency": min(c.runtime.concurrency, 64)}
            for c in spec.reward_functions or [] if c.fcmodel.package_id is None]


def check_spec(spec: RolloutRunSpec, *, processor_modules: Sequence[str] = (),
               reward_modules: Sequence[str] = ()) -> None:
    """Refuse names no registry knows, processors outside ``processor_modules`` / ``reward_modules``, and a
    policy server named by URL (the gateway's upstreams say which servers answer)."""
    if spec.processor is not None:
        check_processor(spec.processor, processor_modules)
    for i, comp in enumerate(spec.reward_functions or []):
        check_reward_function(comp, reward_modules, param=f"reward_functions[{i}]")
    _check_policy(spec)
    if spec.tool_parser != "auto" and spec.tool_parser not in family_names():
        raise ValidationFailed(f"unknown tool parser {spec.tool_parser!r}", param="tool_parser")
    _check_reward(spec)


def _check_policy(spec: RolloutRunSpec) -> None:
    backend = spec.policy.backend
    name = backend.name if backend else "local"
    # ``local`` is the deployment's policy, reached through the gateway: no backend is built for it here.
    known = {"local", *backend_registry().names(), *POLICY_FACTORIES}
    if name not in known:
        raise ValidationFailed(f"unknown policy backend {name!r}; known: {', '.join(sorted(known))}",
                               param="policy.backend.name")
    if backend is not None and backend.base_url is not None:
        raise ValidationFailed(
            f"a rollout's policy calls go through the gateway, so each one is a trace: add {backend.base_url} as a "
            "gateway upstream (PUT /v1/gateway/upstreams, an admin key) and name its model in policy.model",
            param="policy.backend.base_url")


def check_processor_module(classpath: str, allowed_modules: Sequence[str]) -> None:
    """Refuse a classpath outside the allowed module prefixes (nothing is imported)."""
    check_allowed(classpath, allowed_modules, what="rollout processor", error=ProcessorLoadError,
                  setting="TRAJFORGE_ROLLOUT_PROCESSOR_MODULES", param="processor.classpath")


def check_processor(spec: ProcessorSpec, allowed_modules: Sequence[str]) -> None:
    """Refuse a processor outside the allowed modules, or one that does not load (4xx at submission)."""
    check_processor_module(spec.classpath, allowed_modules)
    try:
        load_processor(spec.classpath, allowed_modules=allowed_modules, **spec.init_kwargs)
    except ProcessorLoadError as exc:
        raise ProcessorLoadError(exc.message, param="processor.classpath") from None
    except Exception as exc:  # noqa: BLE001 - user code: a constructor that fails is a bad spec
        raise ProcessorLoadError(f"rollout processor {spec.classpath!r} failed to start: "
                                 f"{type(exc).__name__}: {exc}", param="processor.init_kwargs") from None


def check_reward_function(comp: RewardFunctionComponent, allowed_modules: Sequence[str], *, param: str) -> None:
    """Refuse a reward function this deployment cannot run: an in-process classpath outside the allowed modules.

    One that names an uploaded package runs in the functions service, which checks it when it scores.
    """
    if comp.fcmodel.package_id is not None:
        return
    obj = load_object(comp.fcmodel.classpath, allowed=allowed_modules, what="reward processor",
                      error=ValidationFailed, setting="TRAJFORGE_REWARD_PROCESSOR_MODULES",
                      param=f"{param}.fcmodel.classpath")
    if not callable(getattr(obj, "process", None)):
        raise ValidationFailed(f"reward processor {comp.fcmodel.classpath!r} has no process() method",
                               param=f"{param}.fcmodel.classpath")


def _check_reward(spec: RolloutRunSpec) -> None:
    # The shape only: whether the reward service has its components is asked of that service
    # (``services.rollout.service.check_services``).
    try:
        reward_spec_of(spec)
    except TrajforgeError as exc:
        raise ValidationFailed(exc.message, param="reward") from None
    except ValueError as exc:
        raise ValidationFailed(f"invalid reward spec: {exc}", param="reward") from None


@dataclass
class RolloutRuntime:
    """One shard's engine (env sessions close as their episodes end)."""

    engine: AsyncRolloutEngine | None = None
    executors: list[Any] = field(default_factory=list)

    async def aclose(self) -> None:
        """Forget the shard's executors (nothing left open: each episode closed its own)."""
        self.executors.clear()


def policy_via_gateway(spec: RolloutRunSpec) -> bool:
    """True when the job's policy is the deployment's (no backend, or ``local``): reached through the gateway."""
    backend = spec.policy.backend
    return backend is None or backend.name == "local"


def needs_services(spec: RolloutRunSpec) -> bool:
    """True when the shard calls other services (gateway, tools, envs, reward or functions service, the
    gateway's teacher, a remote env)."""
    return (policy_via_gateway(spec) or bool(spec.tools) or spec.reward is not None or spec.env is not None
            or spec.function is not None or spec.teacher is not None or bool(spec.reward_functions))


async def _gateway_policy(spec: RolloutRunSpec, link: ServiceLink, job_id: uuid.UUID | None
                          ) -> tuple[Policy, TokenBridge | None]:
    """The gateway's policy; token mode renders prompts with the local model's tokenizer (not its weights)."""
    client = await link.gateway()
    backend_model = spec.policy.backend.model if spec.policy.backend else None
    model = backend_model or spec.policy.model or next(iter(await client.models()), None)
    if model is None:
        raise ValidationFailed("the gateway serves no model: configure its upstreams or give policy.model",
                               param="policy.model")
    bridge = await local_token_bridge() if spec.mode == "tokens" else None
    prefix = job_id if job_id is not None else uuid.uuid4()

    def session_for(traj: Trajectory) -> str:
        return session_id_for(prefix, str(traj.metadata.get("task_id") or traj.metadata.get("prompt_id")),
                              traj.sample_index or 0, 0)

    timeout_s = spec.limits.timeout_s or _POLICY_TIMEOUT_S
    return GatewayPolicy(client, model=model, session_for=session_for, timeout_s=timeout_s), bridge


async def _policy(spec: RolloutRunSpec, link: ServiceLink | None, job_id: uuid.UUID | None
                  ) -> tuple[Policy, TokenBridge | None]:
    if policy_via_gateway(spec):
        assert link is not None, "the policy is reached through the gateway: the shard needs its service link"
        return await _gateway_policy(spec, link, job_id)
    backend = spec.policy.backend
    assert backend is not None
    config = {k: v for k, v in backend.model_dump(exclude={"name"}).items() if v is not None}
    if backend.name in POLICY_FACTORIES:
        policy = POLICY_FACTORIES[backend.name](**config)
        return policy, getattr(policy, "bridge", None)
    model = config.pop("model", None) or spec.policy.model
    return BackendPolicy(backend_registry().create(backend.name, model=model, **config), model=model), None


async def _tools(spec: RolloutRunSpec, runtime: RolloutRuntime, link: ServiceLink | None) -> ToolsSource:
    if spec.env is not None:
        assert link is not None, "an env is reached over OpenEnv: the shard needs its service link"
        if spec.env.base_url is not None:
            remote = await RemoteEnv.discover(spec.env, link.env_headers(spec.env.base_url))
        else:
            envs = await link.envs()
            remote = await RemoteEnv.of_service(spec.env, envs, guard=lambda: link.guard(envs))
        return remote.executor
    if spec.tools:
        assert link is not None, "tools run in the tools service: the shard needs its service link"
        client = await link.tools()
        async with link.guard(client):
            return await ToolsServiceExecutor.discover(client, list(spec.tools), timeout_s=spec.limits.tool_timeout_s,
                                                       guard=link.guard)
    return None


async def build_runtime(spec: RolloutRunSpec, settings: Settings, link: ServiceLink | None = None, *,
                        job_id: uuid.UUID | None = None) -> RolloutRuntime:
    """The engine one shard runs with; the policy's calls go through the gateway unless a backend is named."""
    policy, bridge = await _policy(spec, link, job_id)
    mode = spec.mode if bridge is not None else "messages"
    runtime = RolloutRuntime()
    tools = await _tools(spec, runtime, link)
    runtime.engine = AsyncRolloutEngine(
        policy, tools=tools, mode=mode, bridge=bridge, sampling_params=spec.sampling,
        limits=spec.limits, parser=toolcall_parser(spec.tool_parser),
        concurrency=settings.rollout_concurrency, oversample=spec.oversample, schedule=settings.rollout_schedule,
        relaunch=spec.relaunch)
    return runtime
