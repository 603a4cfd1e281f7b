"""``GatewayPolicy``: a job's policy reached through the gateway, so every policy call is a trace.

The shard's gateway client (``shared.clients.GatewayClient``: the gateway's URL when split, its
app in this process when embedded) carries every call; the gateway's upstream configuration
decides which engine answers (the local engine, the inference service, vLLM, ...). Each
trajectory calls under its own gateway session (``rollout-<job>-<task>-<member>-<attempt>``, the
naming processor runs use), written on its metadata as ``session_id``, so its calls can be read
back as ``gateway_trace`` rows (``GET /v1/sessions/{id}/traces``) and checked against it.

- Token mode posts ``/v1/completions`` with the ids kept so far as the prompt, asking for
  ``return_token_ids`` and the sampled tokens' logprobs (``logprobs: 0``): the reply's ids and
  logprobs are the trajectory's, verbatim; nothing is re-tokenised.
- Message mode posts ``/v1/chat/completions`` asking for the same extensions.

Errors come back as the gateway renders them (``shared.client.error_from_response``): after the
gateway's own retries, a 502 is ``UpstreamError``, a 503 ``UpstreamUnavailable``, a 504
``UpstreamTimeout``; the episode loop retries the last two and records ``api_error``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.rollout.adapters import chat_output
from services.rollout.ports import PolicyOutput
from shared.clients import GatewayClient
from shared.errors import UpstreamError
from shared.schema import SamplingParams, Trajectory

__all__ = ["GatewayPolicy"]

SessionNamer = Callable[[Trajectory], str]


class GatewayPolicy:
    """The ``Policy`` port over the gateway; ``for_trajectory`` binds one trajectory's session."""

    def __init__(self, client: GatewayClient, *, model: str, session_for: SessionNamer | None = None,
                 session_id: str | None = None, timeout_s: float | None = None) -> None:
        self.client, self.model, self.session_for = client, model, session_for
        self.session_id, self.timeout_s = session_id, timeout_s

    def for_trajectory(self, trajectory: Trajectory) -> GatewayPolicy:
        """This policy on the trajectory's own gateway session (named on its metadata)."""
        if self.session_for is None:
            return self
        session_id = self.session_for(trajectory)
        trajectory.metadata["session_id"] = session_id
        return GatewayPolicy(self.client, model=self.model, session_id=session_id, timeout_s=self.timeout_s)

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """Token in, token out: one completion of ``prompt_ids`` with the engine's ids and logprobs."""
        body = {**_fields(sampling), "model": self.model, "prompt": list(prompt_ids), "logprobs": 0,
                "return_token_ids": True}
        answer = await self.client.completions(body, session_id=self.session_id, timeout_s=self.timeout_s)
        return _completion_output(answer, len(prompt_ids))

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                   sampling: SamplingParams, extra_body: dict[str, Any] | None = None) -> PolicyOutput:
        """Message mode: one assistant turn from the gateway's chat endpoint."""
        body: dict[str, Any] = {**_fields(sampling), "model": self.model, "messages": messages, "logprobs": True,
                                "return_token_ids": True, **(extra_body or {})}
        if tools:
            body["tools"] = tools
        return chat_output(await self.client.chat_completions(body, session_id=self.session_id,
                                                              timeout_s=self.timeout_s))


def _fields(sampling: SamplingParams) -> dict[str, Any]:
    """Sampling as request fields; one sample per call, the logprobs asked for by the caller."""
    return {k: v for k, v in sampling.to_openai().items() if k not in ("n", "logprobs", "top_logprobs")} | {"n": 1}


def _completion_output(answer: dict[str, Any], prompt_len: int) -> PolicyOutput:
    choices = answer.get("choices") or []
    if not choices:
        raise UpstreamError("the gateway's completion carried no choice")
    choice = choices[0]
    ids = choice.get("token_ids")
    if ids is None:
        raise UpstreamError("the gateway's upstream returned no token ids; token mode needs an engine that "
                            "returns them (vLLM's return_token_ids)")
    logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
    usage = answer.get("usage") or {}
    version = answer.get("weight_version")
    return PolicyOutput(text=str(choice.get("text") or ""), token_ids=[int(t) for t in ids],
                        logprobs=[float(lp) for lp in logprobs] if logprobs is not None else None,
                        finish_reason=choice.get("finish_reason") or "stop",
                        prompt_tokens=int(usage.get("prompt_tokens") or prompt_len),
                        weight_version=str(version) if version is not None else None)
