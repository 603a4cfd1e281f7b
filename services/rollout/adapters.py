"""Adapters from the suite's real components to the rollout engine's ports.

- ``BackendPolicy``: any ``InferenceBackend`` as a ``Policy``. Token mode
  calls ``generate`` on the ids kept so far; message mode renders the chat
  with the model's tokenizer and samples the same way (the engine's ids and
  logprobs are kept), or, without a tokenizer, posts an OpenAI chat request
  asking for ``return_token_ids`` and ``logprobs``.
- ``ToolManagerExecutor``: a ``ToolManager`` (any ``ToolManagerLike``) as a
  ``ToolExecutor`` with the manager's structured error kind (never a parsed
  ``Error:`` prefix).
- ``EnvExecutor``: one fresh env (any ``SteppableEnv``) per trajectory, each
  tool call one step; the episode reward is written onto the trajectory's
  metadata as it grows.
- ``toolcall_parser``: ``shared.toolcalls`` as a ``ToolCallParser``.
- ``local_token_bridge``: the local model's tokenizer as a ``TokenBridge`` (no weights loaded).
- ``register_policy``: named policy factories beside the backend registry
  (a scripted policy in tests, a custom policy in a user's worker).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from services.rollout.bridge import TokenBridge
from services.rollout.ports import ParsedCall, Policy, PolicyOutput, ToolCallParser, ToolResult
from shared.backends.base import BackendResult, InferenceBackend
from shared.errors import InvalidInput, UpstreamError
from shared.local_tokenizer import local_tokenizer
from shared.protocols import EpisodeLedger, SteppableEnv, ToolManagerLike, env_tool_infos
from shared.schema import SamplingParams, Trajectory, to_observation_text
from shared.settings import Settings
from shared.toolcalls import parse_tool_calls

__all__ = [
    "POLICY_FACTORIES",
    "tokenizer_policy",
    "BackendPolicy",
    "EnvExecutor",
    "ToolManagerExecutor",
    "chat_output",
    "local_token_bridge",
    "register_policy",
    "toolcall_parser",
]

PolicyFactory = Callable[..., Policy]
#: Extra policies by name (checked before the inference backend registry).
POLICY_FACTORIES: dict[str, PolicyFactory] = {}


def register_policy(name: str, factory: PolicyFactory) -> None:
    """Make ``factory(**backend_config)`` available as ``policy.backend.name``."""
    POLICY_FACTORIES[name] = factory


def _output(result: BackendResult) -> PolicyOutput:
    if not result.samples:
        raise UpstreamError("the inference backend returned no sample")
    sample = result.samples[0]
    version = str(result.weight_version) if result.weight_version is not None else None
    return PolicyOutput(text=sample.text, token_ids=list(sample.token_ids), logprobs=sample.logprobs,
                        finish_reason=sample.finish_reason or "stop", prompt_tokens=len(result.prompt_ids),
                        weight_version=version)


class BackendPolicy:
    """An ``InferenceBackend`` as a rollout ``Policy`` (logprobs always requested)."""

    def __init__(self, backend: InferenceBackend, *, tokenizer: Any = None, model: str | None = None) -> None:
        self.backend, self.tokenizer, self.model = backend, tokenizer, model

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """Token in, token out: one sample of ``prompt_ids``."""
        params = sampling.model_copy(update={"n": 1, "logprobs": True})
        return _output(await self.backend.generate(list(prompt_ids), params))

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                   sampling: SamplingParams, extra_body: dict[str, Any] | None = None) -> PolicyOutput:
        """Message mode: render with the chat template (or ask the server's chat endpoint)."""
        if self.tokenizer is None:
            return await self._chat_http(messages, tools, sampling, extra_body)
        kwargs, sampling = tokenizer_policy(extra_body, sampling)
        if tools:
            kwargs["tools"] = tools
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)
        ids = list(self.tokenizer.encode(str(text), add_special_tokens=False))
        out = await self.generate(ids, sampling=sampling)
        eos = getattr(self.tokenizer, "eos_token_id", None)
        body = out.token_ids[:-1] if out.token_ids and out.token_ids[-1] == eos else out.token_ids
        out.text = str(self.tokenizer.decode(body, skip_special_tokens=False))
        return out

    async def _chat_http(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                         sampling: SamplingParams, extra_body: dict[str, Any] | None) -> PolicyOutput:
        upstream = getattr(self.backend, "http", None)
        if upstream is None:
            raise UpstreamError("this backend has no chat endpoint and no tokenizer for message mode")
        model = self.model or getattr(self.backend, "model", None)
        body: dict[str, Any] = {"model": model, "messages": messages, **sampling.to_openai(), "n": 1,
                                "logprobs": True, "return_token_ids": True, **(extra_body or {})}
        if tools:
            body["tools"] = tools
        return chat_output(await upstream.post_json("/v1/chat/completions", body))


#: ``extra_body`` keys a tokenizer-rendering policy passes to the chat template as they are.
_TEMPLATE_KEYS = frozenset({"chat_template", "enable_thinking", "documents", "add_generation_prompt",
                            "continue_final_message"})
_SAMPLING_KEYS = frozenset(SamplingParams.model_fields) - {"n", "logprobs", "top_logprobs"}


def tokenizer_policy(extra_body: dict[str, Any] | None, sampling: SamplingParams
                     ) -> tuple[dict[str, Any], SamplingParams]:
    """``extra_body`` as a policy that renders the chat template itself honours it.

    ``chat_template_kwargs`` (vLLM's name) and the top-level template switches (``enable_thinking``,
    as DashScope and Qwen clients send it) go to ``apply_chat_template``; sampling fields
    (``top_k``, ``repetition_penalty``, ``seed``, ``stop``, ...) override ``sampling``. Anything
    else is refused, naming the key, rather than dropped.
    """
    template: dict[str, Any] = {}
    updates: dict[str, Any] = {}
    for key, value in (extra_body or {}).items():
        if key == "chat_template_kwargs":
            if not isinstance(value, dict):
                raise InvalidInput("extra_body.chat_template_kwargs must be an object",
                                   param="extra_body.chat_template_kwargs")
            template.update(value)
        elif key in _TEMPLATE_KEYS:
            template[key] = value
        elif key in _SAMPLING_KEYS:
            updates[key] = value
        else:
            raise InvalidInput(f"extra_body.{key} is not understood by a policy that renders the chat template "
                               f"itself (known: chat_template_kwargs, {', '.join(sorted(_TEMPLATE_KEYS))}, "
                               "sampling fields)", param=f"extra_body.{key}")
    if updates:
        sampling = SamplingParams.model_validate({**sampling.model_dump(), **updates})
    template.pop("add_generation_prompt", None)  # always on: the policy samples the next assistant turn
    return template, sampling


def chat_output(answer: dict[str, Any]) -> PolicyOutput:
    """An OpenAI chat completion (with vLLM's ``token_ids`` when present) as a ``PolicyOutput``."""
    choice = (answer.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    content = (choice.get("logprobs") or {}).get("content") or []
    usage = answer.get("usage") or {}
    return PolicyOutput(text=message.get("content") or "", token_ids=list(choice.get("token_ids") or []),
                        logprobs=[float(c["logprob"]) for c in content] or None,
                        finish_reason=choice.get("finish_reason") or "stop",
                        tool_calls=message.get("tool_calls") or None,
                        reasoning_content=message.get("reasoning_content"),
                        prompt_tokens=usage.get("prompt_tokens"))


class ToolManagerExecutor:
    """A ``ToolManager`` as a ``ToolExecutor``; the manager never raises for a bad call."""

    def __init__(self, manager: ToolManagerLike) -> None:
        self.manager = manager

    def tool_infos(self) -> list[dict[str, Any]]:
        """OpenAI schemas of the manager's tools."""
        return [t.model_dump(mode="json", exclude_none=True) for t in self.manager.tool_infos()]

    async def call(self, tool_call: dict[str, Any]) -> ToolResult:
        """Run the call; the error kind comes from the manager's structured result."""
        result = await self.manager.call_structured(tool_call)
        return ToolResult(content=result.content, ok=result.ok, error_type=result.error_kind)

    @property
    def episode_done(self) -> bool:
        """True once a tool backed by an env (an ``EnvTool``) reports its episode ended."""
        return any(getattr(self.manager.get(n), "done", False) is True for n in self.manager.names())


class EnvExecutor:
    """One env for one trajectory: each tool call steps it; the running reward lands on the trajectory.

    The env is driven through its step contract (``SteppableEnv``), as its ``EnvTool``s would drive it:
    the same tools, observation text and running reward.
    """

    def __init__(self, env: SteppableEnv, trajectory: Trajectory, *, reset_with: Any = None,
                 seed: int | None = None) -> None:
        self.env, self.trajectory = env, trajectory
        env.reset(reset_with, seed=seed)
        self.tools = {t["function"]["name"]: t for t in env_tool_infos(env.tools())}
        self.ledger = EpisodeLedger()
        self._record()

    def tool_infos(self) -> list[dict[str, Any]]:
        """Schemas of the env's tools."""
        return list(self.tools.values())

    async def call(self, tool_call: dict[str, Any]) -> ToolResult:
        """Step the env with the call; an unknown tool or a failing step is an error observation."""
        fn = tool_call.get("function") or {}
        name = str(fn.get("name") or "")
        if name not in self.tools:
            return ToolResult(ok=False, error_type="unknown_tool",
                              content=f"Error: unknown tool {fn.get('name')!r}; available: {', '.join(self.tools)}")
        before = self.ledger.total
        try:
            args = _arguments(fn.get("arguments"))
            # Cheap envs say so (``inline_safe``); the rest step in a worker thread, off the event loop.
            inline = getattr(self.env, "inline_safe", False) is True
            text = self._step(name, args) if inline else await asyncio.to_thread(self._step, name, args)
        except Exception as exc:  # noqa: BLE001 - an env failing on model input is an observation
            return ToolResult(ok=False, error_type="tool_exception", content=f"Error: {type(exc).__name__}: {exc}")
        finally:
            self._record()
        return ToolResult(content=text, reward=self.ledger.total - before)

    def _step(self, name: str, arguments: dict[str, Any]) -> str:
        result = self.env.step(name, dict(arguments))
        self.ledger.add(result)
        return to_observation_text(result.observation)

    @property
    def episode_done(self) -> bool:
        """True once a step ended the env's episode (the trajectory stops there)."""
        return bool(self.trajectory.metadata.get("env_done"))

    def _record(self) -> None:
        meta, last = self.trajectory.metadata, self.ledger.last
        meta["env_reward"], meta["env_done"] = self.ledger.total, self.ledger.done
        if last is not None:
            meta["env_info"] = dict(last.info)

    def close(self) -> None:
        """Release the env."""
        self.env.close()


def _arguments(raw: Any) -> dict[str, Any]:
    value = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
    if not isinstance(value, dict):
        raise TypeError("tool arguments must be a JSON object")
    return value


def toolcall_parser(family: str = "auto", tools: list[dict[str, Any]] | None = None) -> ToolCallParser:
    """``shared.toolcalls`` as the engine's parser: every attempted call with its status."""

    def parse(text: str) -> list[ParsedCall]:
        result = parse_tool_calls(text, family=family, tools=tools)
        return [ParsedCall(name=c.name or "", arguments=c.arguments, raw=c.raw, status=c.status, error=c.error)
                for c in result.calls]

    return parse


async def local_token_bridge(holder: Any = None, *, settings: Settings | None = None) -> TokenBridge:
    """The local model's tokenizer and chat template as a ``TokenBridge``.

    ``holder``'s when given (anything with ``async tokenizer()``, such as an inference engine
    holder), else the configured local model's tokenizer alone, loaded once per process from the
    files the engine loads: a worker whose policy is the gateway renders prompts and never loads
    the weights, and the ids agree with the engine's.
    """
    tokenizer = await holder.tokenizer() if holder is not None else await local_tokenizer(settings)
    return TokenBridge(tokenizer)
