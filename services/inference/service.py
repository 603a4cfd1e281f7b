"""What the routes call: load the engine on first use, run requests, shape OpenAI answers."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from services.inference.chat import render_chat
from services.inference.config import EngineConfig, engine_config
from services.inference.engine import Engine, PromptScores
from services.inference.errors import ModelNotFound
from services.inference.loader import load_model, load_tokenizer, resolve_source
from services.inference.params import CompletionOutput, GenParams
from services.inference.protocol import ChatCompletionRequest, CompletionRequest
from services.inference.responses import (
    TokenText,
    chat_logprobs,
    completion_logprobs,
    finish_reason,
    usage,
)
from services.inference.toolparse import extract_tool_calls
from shared.local_model import served_name_of

__all__ = [
    "EngineHolder",
    "chat_completion",
    "chat_prompt",
    "check_model",
    "completion",
    "completion_prompts",
    "get_engine_holder",
    "list_models",
    "new_id",
    "reset_engine_holder",
]


class EngineHolder:
    """Owns the process's engine; the model loads on first use, off the event loop."""

    def __init__(self, config: EngineConfig | None = None, *, engine: Engine | None = None) -> None:
        self.config = config or engine_config()
        self._engine = engine
        self._lock = asyncio.Lock()
        self._tokenizer: Any = None

    async def get(self) -> Engine:
        """The engine, loading the model if this is the first call."""
        if self._engine is None:
            async with self._lock:
                if self._engine is None:
                    self._engine = await asyncio.to_thread(self._load)
        return self._engine

    async def tokenizer(self) -> Any:
        """The engine's tokenizer once the model is loaded, else the tokenizer alone (no weights loaded)."""
        if self._engine is not None:
            return self._engine.tokenizer
        if self._tokenizer is None:
            async with self._lock:
                if self._engine is not None:  # loaded while this call waited for the lock
                    return self._engine.tokenizer
                if self._tokenizer is None:
                    cfg = self.config
                    self._tokenizer = await asyncio.to_thread(
                        load_tokenizer, resolve_source(cfg.local_model), cache_dir=cfg.cache_dir)
        return self._tokenizer

    @property
    def loaded(self) -> bool:
        """True once the model is loaded."""
        return self._engine is not None

    @property
    def model_name(self) -> str | None:
        """Served model name once loaded."""
        return self._engine.name if self._engine is not None else None

    def _load(self) -> Engine:
        cfg = self.config
        loaded = load_model(resolve_source(cfg.local_model), cache_dir=cfg.cache_dir)
        return Engine(loaded.model, loaded.tokenizer, name=cfg.local_model_name or loaded.name,
                      max_batch_size=cfg.max_batch_size, torch_threads=cfg.torch_threads)

    @property
    def served_name(self) -> str:
        """The name the engine answers to, known before the model loads."""
        if self._engine is not None:
            return self._engine.name
        return served_name_of(self.config.local_model, self.config.local_model_name)

    def close(self) -> None:
        """Stop the engine thread (the model stays loaded until the holder is dropped)."""
        if self._engine is not None:
            self._engine.close()


_holder: EngineHolder | None = None


def get_engine_holder() -> EngineHolder:
    """The process-wide engine holder."""
    global _holder
    if _holder is None:
        _holder = EngineHolder()
    return _holder


def reset_engine_holder() -> None:
    """Close the process-wide engine, if any; the next caller gets a fresh holder (and settings)."""
    global _holder
    if _holder is not None:
        _holder.close()
        _holder = None


def new_id(prefix: str) -> str:
    """A response id such as ``chatcmpl-<hex>``."""
    return f"{prefix}-{uuid.uuid4().hex}"


def check_model(engine: Engine, requested: str | None) -> None:
    """Refuse a request naming a model other than the one served."""
    if requested and requested != engine.name:
        raise ModelNotFound(f"The model '{requested}' does not exist; this server serves '{engine.name}'.",
                            param="model")


def list_models(engine: Engine) -> dict[str, Any]:
    """``GET /v1/models`` body."""
    card = {"id": engine.name, "object": "model", "created": int(time.time()), "owned_by": "trajforge",
            "root": engine.name, "max_model_len": engine.max_context}
    return {"object": "list", "data": [card]}


def _budget(engine: Engine, prompt_len: int, asked: int | None) -> int:
    return asked or max(1, min(engine_config().default_max_tokens, engine.max_context - prompt_len))


def chat_prompt(engine: Engine, req: ChatCompletionRequest) -> tuple[list[int], GenParams]:
    """Render and check a chat request: prompt ids and engine params."""
    check_model(engine, req.model)
    tools = req.tools if req.tools_enabled() else None
    prompt_ids = render_chat(engine.tokenizer, req.messages, tools=tools,
                             add_generation_prompt=req.add_generation_prompt,
                             template_kwargs=req.chat_template_kwargs)
    max_tokens = _budget(engine, len(prompt_ids), req.max_completion_tokens or req.max_tokens)
    params = req.gen_params(max_tokens=max_tokens, logprobs=req.logprobs, top_logprobs=req.top_logprobs or 0)
    engine.check(prompt_ids, params)
    return prompt_ids, params


def _chat_choice(out: CompletionOutput, req: ChatCompletionRequest, text_of: TokenText) -> dict[str, Any]:
    content, calls = extract_tool_calls(out.text, req.tools or []) if req.tools_enabled() else (out.text, [])
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = [c.model_dump(mode="json") for c in calls]
    choice: dict[str, Any] = {
        "index": out.index, "message": message,
        "logprobs": chat_logprobs(out, text_of) if req.logprobs else None,
        "finish_reason": finish_reason(out, has_tool_calls=bool(calls)), "stop_reason": out.stop_reason,
    }
    if req.return_token_ids:
        choice["token_ids"] = out.token_ids
    return choice


async def chat_completion(engine: Engine, req: ChatCompletionRequest) -> dict[str, Any]:
    """Run a non-streaming chat completion."""
    prompt_ids, params = chat_prompt(engine, req)
    outs = await engine.generate(prompt_ids, params)
    text_of = TokenText(engine.tokenizer, as_ids=req.return_tokens_as_token_ids)
    body: dict[str, Any] = {
        "id": new_id("chatcmpl"), "object": "chat.completion", "created": int(time.time()),
        "model": engine.name, "choices": [_chat_choice(o, req, text_of) for o in outs],
        "usage": usage(len(prompt_ids), sum(len(o.token_ids) for o in outs)),
        # Which weights sampled this (the gateway stores it on the trace, a rollout on its trajectory).
        "weight_version": str(engine.weight_version),
    }
    if req.return_token_ids:
        body["prompt_token_ids"] = prompt_ids
    return body


def completion_prompts(engine: Engine, req: CompletionRequest) -> tuple[list[list[int]], GenParams]:
    """Tokenise and check a completions request: prompt ids per prompt and engine params."""
    check_model(engine, req.model)
    prompts = [p if isinstance(p, list) else engine.encode(p) for p in req.prompts()]
    longest = max(len(p) for p in prompts)
    params = req.gen_params(max_tokens=_budget(engine, longest, req.max_tokens),
                            logprobs=req.logprobs is not None, top_logprobs=req.logprobs or 0)
    for ids in prompts:
        engine.check(ids, params)
    return prompts, params


def _text_choice(out: CompletionOutput, index: int, req: CompletionRequest, text_of: TokenText) -> dict[str, Any]:
    choice: dict[str, Any] = {
        "index": index, "text": out.text,
        "logprobs": completion_logprobs(out, text_of) if req.logprobs is not None else None,
        "finish_reason": finish_reason(out), "stop_reason": out.stop_reason,
    }
    if req.return_token_ids:
        choice["token_ids"] = out.token_ids
    return choice


def _prompt_entries(engine: Engine, prompt: list[int], scores: PromptScores) -> list[dict[str, Any] | None]:
    # vLLM's shape: one entry per prompt token, None for the first, keyed by token id.
    return [None if lp is None else {str(t): {"logprob": lp, "rank": rank, "decoded_token": engine.decode([t])}}
            for t, lp, rank in zip(prompt, scores.logprobs, scores.ranks, strict=True)]


async def _generate(engine: Engine, prompt: list[int], params: GenParams, req: CompletionRequest
                    ) -> tuple[list[CompletionOutput], list[dict[str, Any] | None] | None]:
    """Outputs of one prompt, plus its prompt logprobs when asked for.

    A scoring call (prompt logprobs, one row, one token: what vLLM needs to score given
    tokens) runs as one forward pass that also samples the token; anything else is generated
    in the batched waves and scored by a separate pass.
    """
    if req.prompt_logprobs is None:
        return await engine.generate(prompt, params), None
    if params.max_tokens == 1 and params.n == 1:
        scores = await engine.score_prompt(prompt, params)
        assert scores.sampled is not None
        return [scores.sampled], _prompt_entries(engine, prompt, scores)
    outs = await engine.generate(prompt, params)
    return outs, _prompt_entries(engine, prompt, await engine.score_prompt(prompt))


async def completion(engine: Engine, req: CompletionRequest) -> dict[str, Any]:
    """Run a non-streaming text completion (every prompt batched together)."""
    prompts, params = completion_prompts(engine, req)
    results = await asyncio.gather(*(_generate(engine, p, params, req) for p in prompts))
    text_of = TokenText(engine.tokenizer, as_ids=req.return_tokens_as_token_ids)
    choices = [_text_choice(o, p * params.n + o.index, req, text_of)
               for p, (outs, _) in enumerate(results) for o in outs]
    per_choice = [(prompt, entries) for prompt, (_, entries) in zip(prompts, results, strict=True)
                  for _ in range(params.n)]
    for choice, (prompt, entries) in zip(choices, per_choice, strict=True):
        if req.return_token_ids:
            choice["prompt_token_ids"] = prompt
        if entries is not None:
            choice["prompt_logprobs"] = entries
    produced = sum(len(o.token_ids) for outs, _ in results for o in outs)
    return {"id": new_id("cmpl"), "object": "text_completion", "created": int(time.time()), "model": engine.name,
            "choices": choices, "usage": usage(sum(len(p) for p in prompts), produced),
            "weight_version": str(engine.weight_version)}
