"""HTTP routes of the local engine: the vLLM OpenAI subset (mounted by the app factory)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from services.inference import service, streaming
from services.inference.deps import EngineDep, HolderDep
from services.inference.engine import Engine
from services.inference.errors import BackendUnsupported, ModelLoadError
from services.inference.loader import read_state_dict
from services.inference.native import NativeGenerateRequest, native_generate
from services.inference.protocol import (
    ChatCompletionRequest,
    CompletionRequest,
    DetokenizeRequest,
    TokenizeRequest,
)
from services.inference.tokenize import detokenize, tokenize
from shared.errors import InvalidInput
from shared.web.deps import admin_only

__all__ = ["control_router", "router", "served_router"]

_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}

router = APIRouter(tags=["inference"])
# vLLM-style control endpoints: mount them only behind auth (they pause every caller).
control_router = APIRouter(tags=["inference-control"])
# Only on the bare engine app offered in process: the gateway asks it whom to route to at startup.
served_router = APIRouter(tags=["inference"])


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


@router.post("/generate", response_model=None)
async def create_native_generation(body: NativeGenerateRequest, engine: EngineDep) -> dict[str, Any] | list[Any]:
    """SGLang-style token-in, token-out generation."""
    return await native_generate(engine, body)


@router.get("/v1/models")
async def read_models(engine: EngineDep) -> dict[str, Any]:
    """The served model."""
    return service.list_models(engine)


@router.get("/health")
async def read_health(holder: HolderDep) -> dict[str, Any]:
    """Liveness: answers without loading the model."""
    paused = holder.loaded and (await holder.get()).paused
    return {"status": "ok", "model": holder.model_name, "model_loaded": holder.loaded, "paused": paused}


@served_router.get("/served_model")
async def read_served_model(holder: HolderDep) -> dict[str, str]:
    """The name the engine answers to, known without loading the model."""
    return {"model": holder.served_name}


@control_router.post("/pause")
@control_router.post("/pause_generation")  # SGLang's name for the same thing
@admin_only
async def create_pause(engine: EngineDep, mode: Literal["abort", "wait", "keep"] = "wait") -> dict[str, Any]:
    """Stop starting new generation waves (running rows finish; new requests get 503).

    ``mode`` as vLLM's: ``wait`` and ``keep`` leave queued rows to run after ``/resume``;
    ``abort`` aborts them.
    """
    engine.pause()
    if mode == "abort":
        engine.abort_waiting()
    return {"paused": True}


@control_router.post("/resume")
@control_router.post("/continue_generation")  # SGLang's name for the same thing
@admin_only
async def create_resume(engine: EngineDep) -> dict[str, Any]:
    """Accept work again after ``/pause``."""
    engine.resume()
    return {"paused": False}


@control_router.get("/is_paused")
async def read_is_paused(engine: EngineDep) -> dict[str, Any]:
    """Whether the engine is paused."""
    return {"is_paused": engine.paused}


class WeightsFromDisk(BaseModel):
    """``/update_weights_from_disk`` body (SGLang's shape)."""

    model_path: str


@control_router.post("/update_weights_from_disk")
@admin_only
async def create_weights_update(body: WeightsFromDisk, engine: EngineDep) -> dict[str, Any]:
    """Load weights from an HF model directory between generation waves."""
    try:
        state = await asyncio.to_thread(read_state_dict, body.model_path)
    except ModelLoadError as exc:  # a path the caller gave: their input, not a server fault
        raise InvalidInput(exc.message, param="model_path") from exc
    version = await asyncio.to_thread(engine.update_weights, state)
    return {"success": True, "message": "weights updated", "weight_version": version}


@control_router.post("/sleep")
@admin_only
async def create_sleep(engine: EngineDep, level: int = Query(1, ge=1, le=2)) -> dict[str, Any]:
    """vLLM's sleep mode: no generation until ``/wake_up`` (this CPU engine offloads nothing)."""
    engine.sleep(level)
    return {"is_sleeping": True, "level": level}


@control_router.post("/wake_up")
@admin_only
async def create_wake_up(engine: EngineDep, tags: list[str] | None = Query(None)) -> dict[str, Any]:
    """Leave sleep mode (``tags`` are accepted as vLLM's; the whole engine wakes)."""
    engine.wake_up()
    return {"is_sleeping": False}


@control_router.get("/is_sleeping")
async def read_is_sleeping(engine: EngineDep) -> dict[str, Any]:
    """Whether the engine sleeps."""
    return {"is_sleeping": engine.sleep_level > 0}


@control_router.post("/reset_prefix_cache")
@admin_only
async def create_prefix_cache_reset(engine: EngineDep) -> dict[str, Any]:
    """vLLM's prefix-cache reset; this engine keeps no cache across requests, so nothing is stale."""
    return {"success": True}


class CollectiveRpc(BaseModel):
    """``/collective_rpc`` body (vLLM's shape)."""

    method: str
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    timeout: float | None = None


@control_router.post("/collective_rpc")
@admin_only
async def create_collective_rpc(body: CollectiveRpc, engine: EngineDep) -> dict[str, Any]:
    """The worker methods a weight reload needs: ``update_config`` (model path) and ``reload_weights``."""
    if body.method == "update_config":
        overrides = body.args[0] if body.args else body.kwargs.get("overrides", {})
        path = ((overrides or {}).get("model_config") or {}).get("model")
        if not isinstance(path, str) or not path:
            raise InvalidInput("update_config takes {'model_config': {'model': <directory>}}", param="args")
        engine.weights_path = path
        return {"results": [None]}
    if body.method == "reload_weights":
        return {"results": [await _reload(engine)]}
    raise InvalidInput(f"collective_rpc method {body.method!r} is not available on this engine "
                       "(update_config, reload_weights)", param="method")


async def _reload(engine: Engine) -> int:
    if engine.weights_path is None:
        raise InvalidInput("reload_weights needs a model directory first (update_config)", param="method")
    state = await asyncio.to_thread(read_state_dict, engine.weights_path)
    return await asyncio.to_thread(engine.update_weights, state)


@control_router.post("/init_weight_transfer_engine")
@control_router.post("/start_weight_update")
@control_router.post("/update_weights")
@control_router.post("/finish_weight_update")
@admin_only
async def create_weight_transfer(engine: EngineDep) -> dict[str, Any]:
    """vLLM's NCCL/IPC weight-transfer round needs GPU workers: refused with 501, never faked."""
    raise BackendUnsupported("This CPU engine has no weight-transfer backend; reload from a model directory "
                             "(collective_rpc update_config + reload_weights, or /update_weights_from_disk).")
