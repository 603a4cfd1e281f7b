"""A small OpenAI-compatible HTTP client for model-backed cleaning steps.

Injectable: steps take a client, tests point one at a loopback server. Only what
cleaning needs: chat samples, a one-word classification, and echoed prompt
logprobs from ``/v1/completions`` (``echo`` + ``logprobs``, as vLLM serves them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import BaseModel, Field

from services.cleaning.text import message_text
from shared.errors import UpstreamError, UpstreamTimeout, UpstreamUnavailable

__all__ = ["ChatSample", "LLMEndpoint", "OpenAICompatClient", "TokenLogprob", "render_chatml"]


class LLMEndpoint(BaseModel):
    """Where the model lives: base URL (…/v1 or the server root), model name, key, timeout."""

    base_url: str
    model: str = "default"
    api_key: str | None = None
    timeout_s: float = Field(120.0, gt=0)


class ChatSample(BaseModel):
    """One sampled completion."""

    content: str = ""
    reasoning_content: str = ""


class TokenLogprob(BaseModel):
    """One prompt token with its logprob (None for the first token) and char offset."""

    token: str
    logprob: float | None
    offset: int


def render_chatml(messages: Sequence[dict[str, Any]], *, generation_prompt: bool = True) -> str:
    """ChatML text of messages (the prompt used for logprob scoring)."""
    parts = [f"<|im_start|>{m.get('role')}\n{message_text(m.get('content'))}<|im_end|>\n" for m in messages]
    return "".join(parts) + ("<|im_start|>assistant\n" if generation_prompt else "")


def _v1(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


class OpenAICompatClient:
    """Chat, classification and prompt logprobs against one OpenAI-compatible endpoint."""

    def __init__(self, endpoint: LLMEndpoint, *, http: httpx.Client | None = None) -> None:
        self.endpoint = endpoint
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        self._http = http or httpx.Client(base_url=_v1(endpoint.base_url), headers=headers,
                                          timeout=endpoint.timeout_s)

    def close(self) -> None:
        """Close the underlying HTTP client."""
        self._http.close()

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            resp = self._http.post(path, json={"model": self.endpoint.model, **body})
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(f"Model endpoint timed out on {path}: {exc}.") from exc
        except httpx.TransportError as exc:
            raise UpstreamUnavailable(f"Model endpoint unreachable on {path}: {exc}.") from exc
        if resp.status_code >= 400:
            raise UpstreamError(f"Model endpoint answered {resp.status_code} on {path}: {resp.text[:200]}.")
        data = resp.json()
        if not isinstance(data, dict):
            raise UpstreamError(f"Model endpoint returned a {type(data).__name__} on {path}, not an object.")
        return data

    def chat(self, messages: Sequence[dict[str, Any]], *, n: int = 1, temperature: float = 0.7,
             max_tokens: int = 4096, extra_body: dict[str, Any] | None = None) -> list[ChatSample]:
        """Sample ``n`` chat completions."""
        data = self._post("/chat/completions", {"messages": list(messages), "n": n, "temperature": temperature,
                                                "max_tokens": max_tokens, **(extra_body or {})})
        out = []
        for choice in data.get("choices") or []:
            msg = choice.get("message") or {}
            out.append(ChatSample(content=msg.get("content") or "",
                                  reasoning_content=msg.get("reasoning_content") or ""))
        return out

    def classify(self, messages: Sequence[dict[str, Any]], labels: Sequence[str]) -> str | None:
        """One label for the last assistant turn, asked of the model at temperature 0."""
        convo = "\n\n".join(f"[{m.get('role')}] {message_text(m.get('content'))}" for m in messages)
        ask = (f"Label the intent of the last assistant turn with exactly one word from: {', '.join(labels)}."
               f"\n\n{convo}")
        samples = self.chat([{"role": "user", "content": ask}], temperature=0.0, max_tokens=8)
        word = samples[0].content.strip().strip(".").lower() if samples else ""
        return word if word in labels else None

    def prompt_logprobs(self, prompt: str) -> list[TokenLogprob]:
        """Logprob of every prompt token (echo, no new tokens)."""
        data = self._post("/completions", {"prompt": prompt, "max_tokens": 0, "echo": True, "logprobs": 0})
        choices = data.get("choices") or []
        lp = (choices[0].get("logprobs") or {}) if choices else {}
        tokens, values, offsets = lp.get("tokens"), lp.get("token_logprobs"), lp.get("text_offset")
        if not (isinstance(tokens, list) and isinstance(values, list) and isinstance(offsets, list)):
            raise UpstreamError(
                "Model endpoint returned no echoed prompt logprobs (tokens/token_logprobs/text_offset).")
        return [TokenLogprob(token=t, logprob=v, offset=o) for t, v, o in zip(tokens, values, offsets)]
