"""The seed's API protocol: ``API`` (trajectory + sampling params -> assistant message) and ``OpenAI``.

``api(trajectory, sampling_params)`` returns one assistant message dict
(``role``, ``content``, ``tool_calls`` when the model called tools,
``reasoning_content`` when the server sent it, ``finish_reason``), or a list
of them, one per choice, when ``sampling_params.num_samples > 1``.

Every ``API`` is also a rollout ``Policy`` (``chat``), so a custom subclass that
only implements ``__call__`` drives ``APIMultiTurnRollout`` as is (its call runs
in a worker thread); ``OpenAI`` overrides ``chat`` with a native async request
that also keeps the server's token ids and logprobs when it returns them.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from services.rollout.ports import PolicyOutput
from shared.errors import InvalidInput, UpstreamError
from shared.schema import Message, SamplingParams, ToolInfo, Trajectory

__all__ = ["API", "OpenAI", "reply_as_output"]

# Fields the ``openai`` client takes as keywords; the rest of ``to_openai()`` goes in ``extra_body``.
_STANDARD = frozenset({"temperature", "top_p", "n", "max_tokens", "stop", "seed", "logprobs", "top_logprobs"})


def _messages(trajectory: Trajectory | Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = trajectory.messages if isinstance(trajectory, Trajectory) else trajectory.get("messages")
    if not raw:
        raise InvalidInput("the trajectory has no messages", param="messages")
    return [m.to_openai() if isinstance(m, Message) else Message.model_validate(m).to_openai() for m in raw]


def _tools(trajectory: Trajectory | Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = trajectory.tools if isinstance(trajectory, Trajectory) else trajectory.get("tools") or []
    return [ToolInfo.model_validate(t).model_dump(mode="json", exclude_none=True) if not isinstance(t, ToolInfo)
            else t.model_dump(mode="json", exclude_none=True) for t in raw]


def _sampling(value: SamplingParams | Mapping[str, Any] | None) -> SamplingParams:
    if value is None:
        return SamplingParams()
    return value if isinstance(value, SamplingParams) else SamplingParams.model_validate(dict(value))


def reply_as_output(reply: Mapping[str, Any]) -> PolicyOutput:
    """An assistant message dict (what ``API.__call__`` returns) as a rollout ``PolicyOutput``."""
    message = Message.model_validate({**reply, "role": "assistant"})
    calls = [c.model_dump(mode="json") for c in message.tool_calls or []]
    return PolicyOutput(text=message.text(), tool_calls=calls or None, reasoning_content=message.reasoning_content,
                        finish_reason=str(reply.get("finish_reason") or ("tool_calls" if calls else "stop")),
                        token_ids=list(reply.get("token_ids") or []), logprobs=reply.get("logprobs"))


class API(ABC):
    """An LLM API client: ``(trajectory, sampling_params) -> assistant message`` (or a list of them)."""

    @abstractmethod
    def __call__(self, trajectory: Trajectory | Mapping[str, Any], sampling_params: SamplingParams,
                 **kwargs: Any) -> dict[str, Any] | list[dict[str, Any]]:
        """Override: sample the next assistant message(s) for ``trajectory['messages']``."""

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                   sampling: SamplingParams, extra_body: dict[str, Any] | None = None) -> PolicyOutput:
        """Rollout ``Policy`` port: one reply from ``__call__`` (run in a worker thread)."""
        kwargs = {"extra_body": extra_body} if extra_body else {}
        reply = await asyncio.to_thread(self, {"messages": messages, "tools": tools or []},
                                        sampling.model_copy(update={"n": 1}), **kwargs)
        first = reply[0] if isinstance(reply, list) else reply
        if not isinstance(first, Mapping):
            raise UpstreamError(f"{type(self).__name__} returned {type(first).__name__}, not a message dict")
        return reply_as_output(first)

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """A chat API has no token-in, token-out mode; use a backend policy for token rollouts."""
        raise InvalidInput(f"{type(self).__name__} is a chat API: it cannot sample from token ids",
                           param="mode")


class OpenAI(API):
    """Any ``/v1/chat/completions`` endpoint (OpenAI, vLLM, SGLang, the local engine, ...).

    ``client_kwargs`` go to the ``openai.OpenAI`` / ``openai.AsyncOpenAI`` constructors
    (``timeout``, ``max_retries``, ``http_client``, ``default_headers``, ...). ``api_key``
    ``None`` lets the ``openai`` client read ``OPENAI_API_KEY``; a server that wants no key
    (a local one) is sent ``EMPTY``.
    """

    def __init__(self, model: str, api_key: str | None = None, base_url: str | None = None,
                 client_kwargs: dict[str, Any] | None = None) -> None:
        self.model, self.api_key, self.base_url = model, api_key, base_url
        self.client_kwargs = dict(client_kwargs or {})
        self._sync: Any = None
        self._async: Any = None

    def _client(self, cls_name: str) -> Any:
        import openai

        cls = getattr(openai, cls_name)
        try:
            return cls(api_key=self.api_key, base_url=self.base_url, **self.client_kwargs)
        except openai.OpenAIError:  # no key given and none in the environment: a keyless server
            return cls(api_key="EMPTY", base_url=self.base_url, **self.client_kwargs)

    def request(self, trajectory: Trajectory | Mapping[str, Any], sampling_params: SamplingParams | None,
                extra_body: dict[str, Any] | None = None) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for one call."""
        fields = _sampling(sampling_params).to_openai()
        body: dict[str, Any] = {"model": self.model, "messages": _messages(trajectory),
                                **{k: v for k, v in fields.items() if k in _STANDARD}}
        tools = _tools(trajectory)
        if tools:
            body["tools"] = tools
        extra = {**{k: v for k, v in fields.items() if k not in _STANDARD}, **(extra_body or {})}
        if extra:
            body["extra_body"] = extra
        return body

    def __call__(self, trajectory: Trajectory | Mapping[str, Any], sampling_params: SamplingParams | None = None,
                 **kwargs: Any) -> dict[str, Any] | list[dict[str, Any]]:
        """One assistant message dict, or one per choice when ``num_samples > 1``."""
        if self._sync is None:
            self._sync = self._client("OpenAI")
        sampling = _sampling(sampling_params)
        response = self._sync.chat.completions.create(**self.request(trajectory, sampling, kwargs.get("extra_body")))
        replies = [_reply(choice) for choice in sorted(response.choices, key=lambda c: c.index)]
        return replies if sampling.n > 1 else replies[0]

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                   sampling: SamplingParams, extra_body: dict[str, Any] | None = None) -> PolicyOutput:
        """Rollout ``Policy`` port with the async client (token ids kept when the server returns them)."""
        if self._async is None:
            self._async = self._client("AsyncOpenAI")
        body = self.request({"messages": messages, "tools": tools or []}, sampling.model_copy(update={"n": 1}),
                            extra_body)
        response = await self._async.chat.completions.create(**body)
        if not response.choices:
            raise UpstreamError("the chat endpoint returned no choice")
        out = reply_as_output(_reply(response.choices[0]))
        usage = getattr(response, "usage", None)
        out.prompt_tokens = getattr(usage, "prompt_tokens", None)
        return out


def _reply(choice: Any) -> dict[str, Any]:
    """One choice as the documented message dict (plus token ids/logprobs when present)."""
    message = choice.message.model_dump(exclude_none=True)
    extra = {**(choice.message.model_extra or {}), **(choice.model_extra or {})}
    reply: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        reply["tool_calls"] = message["tool_calls"]
    reasoning = extra.get("reasoning_content") or message.get("reasoning_content")
    if reasoning:
        reply["reasoning_content"] = reasoning
    reply["finish_reason"] = choice.finish_reason
    if extra.get("token_ids"):
        reply["token_ids"] = list(extra["token_ids"])
    content = getattr(choice.logprobs, "content", None) if choice.logprobs else None
    if content:
        reply["logprobs"] = [float(c.logprob) for c in content]
    return reply
