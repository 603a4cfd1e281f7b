"""The two ways a trajectory's context grows: as messages, or as token ids.

``MessageTranscript`` keeps OpenAI messages and calls ``Policy.chat``;
``TokenTranscript`` keeps the engine's ids (prompt + sampled + bridge) and
calls ``Policy.generate``. Both keep the message view, so every trajectory
is readable and every token trajectory is also a chat conversation.
"""

from __future__ import annotations

from typing import Any, Protocol

from services.rollout.bridge import TokenBridge
from services.rollout.errors import PolicyOutputInvalid
from services.rollout.ports import ParsedCall, Policy, PolicyOutput
from shared.schema import SamplingParams, TokenData

__all__ = ["MessageTranscript", "TokenTranscript", "Transcript"]


class Transcript(Protocol):
    """What the episode loop needs from a growing context."""

    messages: list[dict[str, Any]]

    async def sample(self, policy: Policy, sampling: SamplingParams,
                     extra_body: dict[str, Any] | None) -> PolicyOutput:
        """One policy call on the current context."""
        ...

    def add_assistant(self, out: PolicyOutput, calls: list[ParsedCall]) -> None:
        """Append the sampled assistant turn."""
        ...

    def add_observations(self, tool_messages: list[dict[str, Any]], out: PolicyOutput) -> None:
        """Append tool messages (and, in token mode, the template bridge)."""
        ...

    def total_tokens(self) -> int:
        """Tokens in the context so far (prompt + sampled + observations)."""
        ...

    def token_data(self) -> TokenData | None:
        """Token arrays of the trajectory, if this transcript keeps them."""
        ...


def _assistant_message(content: str, out: PolicyOutput, calls: list[ParsedCall]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if out.reasoning_content:
        msg["reasoning_content"] = out.reasoning_content
    if calls:
        # Failed attempts are listed too, so every tool message answers a call id in history.
        msg["tool_calls"] = [c.to_openai() for c in calls]
    return msg


class MessageTranscript:
    """Context as OpenAI messages (the message-level engine)."""

    def __init__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> None:
        self.messages = [dict(m) for m in messages]
        self.tools = tools or None
        self._tokens = 0

    async def sample(self, policy: Policy, sampling: SamplingParams,
                     extra_body: dict[str, Any] | None) -> PolicyOutput:
        """Send the conversation as it stands (assistant turns hold only OpenAI keys)."""
        return await policy.chat(self.messages, tools=self.tools, sampling=sampling,
                                 extra_body=extra_body)

    def add_assistant(self, out: PolicyOutput, calls: list[ParsedCall]) -> None:
        """Append the reply; ``finish_reason`` stays out of the history (strict providers)."""
        self.messages.append(_assistant_message(out.text, out, calls))
        prompt = out.prompt_tokens if out.prompt_tokens is not None else self._tokens
        self._tokens = prompt + len(out.token_ids)

    def add_observations(self, tool_messages: list[dict[str, Any]], out: PolicyOutput) -> None:
        """Append tool messages as they are."""
        self.messages.extend(tool_messages)

    def total_tokens(self) -> int:
        """Last reported prompt size plus what was sampled after it."""
        return self._tokens

    def token_data(self) -> TokenData | None:
        """Message mode keeps no token arrays."""
        return None


class TokenTranscript:
    """Context as the engine's token ids; history is appended, never re-tokenised."""

    def __init__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 bridge: TokenBridge) -> None:
        self.messages = [dict(m) for m in messages]
        self.bridge = bridge
        self.prompt_ids = bridge.prompt_ids(self.messages, tools)
        self.response_ids: list[int] = []
        self.loss_mask: list[int] = []
        self.logprobs: list[float | None] = []
        self.weight_version: str | None = None

    async def sample(self, policy: Policy, sampling: SamplingParams,
                     extra_body: dict[str, Any] | None) -> PolicyOutput:
        """Token in, token out: the prompt is exactly the ids kept so far."""
        out = await policy.generate(self.prompt_ids + self.response_ids, sampling=sampling)
        if out.logprobs is not None and len(out.logprobs) != len(out.token_ids):
            raise PolicyOutputInvalid(
                f"policy returned {len(out.logprobs)} logprobs for {len(out.token_ids)} tokens")
        return out

    def add_assistant(self, out: PolicyOutput, calls: list[ParsedCall]) -> None:
        """Append the sampled ids verbatim (trainable) and the decoded text."""
        ids = list(out.token_ids)
        self.response_ids.extend(ids)
        self.loss_mask.extend([1] * len(ids))
        self.logprobs.extend(out.logprobs if out.logprobs is not None else [None] * len(ids))
        self.weight_version = out.weight_version or self.weight_version
        body = ids[:-1] if self.bridge.ends_with_eos(ids) else ids
        text = self.bridge.tokenizer.decode(body, skip_special_tokens=False)
        self.messages.append(_assistant_message(text, out, calls))

    def add_observations(self, tool_messages: list[dict[str, Any]], out: PolicyOutput) -> None:
        """Append the tool messages and their bridge ids (masked, no logprobs)."""
        self.messages.extend(tool_messages)
        ids = self.bridge.bridge_ids(tool_messages,
                                     ended_with_eos=self.bridge.ends_with_eos(out.token_ids))
        self.response_ids.extend(ids)
        self.loss_mask.extend([0] * len(ids))
        self.logprobs.extend([None] * len(ids))

    def total_tokens(self) -> int:
        """Every id in the context."""
        return len(self.prompt_ids) + len(self.response_ids)

    def token_data(self) -> TokenData | None:
        """Prompt ids, response ids, loss mask and aligned logprobs."""
        return TokenData(prompt_ids=list(self.prompt_ids), response_ids=list(self.response_ids),
                         loss_mask=list(self.loss_mask), logprobs=list(self.logprobs),
                         weight_version=self.weight_version)
