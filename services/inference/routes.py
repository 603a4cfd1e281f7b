"""HTTP routes of the local engine: the vLLM OpenAI subset (mounted by the app factory)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from services.inference import service, streaming
from services.inference.deps import EngineDep, HolderDep
from services.inference.protocol import (
    ChatCompletionRequest,
    CompletionRequest,
    DetokenizeRequest,
    TokenizeRequest,
)
from services.inference.tokenize import detokenize, tokenize
from shared.errors import InvalidInput

__all__ = ["router"]

_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}

router = APIRouter(tags=["inference"])


def _sse(events: Any) -> StreamingResponse:
    return StreamingResponse(events, media_type="text/event-stream", headers=_SSE_HEADERS)


@router.post("/v1/chat/completions", response_model=None)
async def create_chat_completion(body: ChatCompletionRequest, engine: EngineDep) -> dict[str, Any] | StreamingResponse:
    """Chat completion (streaming or not), with token ids and logprobs on request."""
    if not body.stream:
        return await service.chat_completion(engine, body)
    prompt_ids, params = service.chat_prompt(engine, body)
    return _sse(streaming.chat_events(engine, body, prompt_ids, params))


@router.post("/v1/completions", response_model=None)
async def create_completion(body: CompletionRequest, engine: EngineDep) -> dict[str, Any] | StreamingResponse:
    """Text completion of a text or token-id prompt (streaming or not)."""
    if not body.stream:
        return await service.completion(engine, body)
    prompts, params = service.completion_prompts(engine, body)
    if len(prompts) != 1:
        raise InvalidInput("Streaming takes one prompt per request.", param="prompt")
    return _sse(streaming.completion_events(engine, body, prompts[0], params))


@router.post("/tokenize")
async def create_tokenize(body: TokenizeRequest, engine: EngineDep) -> dict[str, Any]:
    """Token ids of a prompt or of rendered chat messages."""
    return tokenize(engine, body)


@router.post("/detokenize")
async def create_detokenize(body: DetokenizeRequest, engine: EngineDep) -> dict[str, Any]:
    """Text of token ids."""
    return detokenize(engine, body)


@router.get("/v1/models")
async def read_models(engine: EngineDep) -> dict[str, Any]:
    """The served model."""
    return service.list_models(engine)


@router.get("/health")
async def read_health(holder: HolderDep) -> dict[str, Any]:
    """Liveness: answers without loading the model."""
    paused = holder.loaded and (await holder.get()).paused
    return {"status": "ok", "model": holder.model_name, "model_loaded": holder.loaded, "paused": paused}
