"""HTTP routes of the gateway (a plain router; the app factory mounts it)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.responses import Response

from services.gateway import service
from services.gateway.config import UpstreamRead, UpstreamSpec
from services.gateway.deps import GatewayDep, call_context
from services.gateway.proxy import CHAT_PATH, COMPLETIONS_PATH, GatewayProxy
from shared.errors import TrajforgeError
from shared.traces import SessionMerge, TraceRecord
from shared.web.deps import admin_only, session_route
from shared.web.middleware import parsed_body
from shared.web.openai_errors import openai_error_response

__all__ = ["router"]

router = APIRouter(tags=["gateway"])


class DrainRequest(BaseModel):
    """How long a drain call waits for in-flight calls to finish."""

    wait_s: float = 0.0


async def _forward(
    request: Request, gateway: GatewayProxy, path: str, session_id: str | None, attempt: int | None
) -> Response:
    try:
        # Every app's middleware holds bodies to TRAJFORGE_MAX_REQUEST_BYTES while they stream in;
        # the proxy checks the same limit again for callers that bypass HTTP.
        raw = await request.body()
        ctx = call_context(request, session_id, attempt)
        return await gateway.forward(path, raw, ctx, parsed=parsed_body(request.scope, raw))
    except TrajforgeError as exc:
        return openai_error_response(exc)


@router.post("/v1/chat/completions")
async def chat_completions(request: Request, gateway: GatewayDep) -> Response:
    """OpenAI chat completions, streaming or not (session from headers, if any)."""
    return await _forward(request, gateway, CHAT_PATH, None, None)


@router.post("/v1/completions")
async def completions(request: Request, gateway: GatewayDep) -> Response:
    """OpenAI text completions (session from headers, if any)."""
    return await _forward(request, gateway, COMPLETIONS_PATH, None, None)


@router.post("/tokenize")
async def tokenize(request: Request, gateway: GatewayDep) -> Response:
    """vLLM's ``/tokenize`` (a prompt or chat messages), forwarded to a replica of the named model."""
    try:
        raw = await request.body()
        return await gateway.tokenize(raw, call_context(request, None, None))
    except TrajforgeError as exc:
        return openai_error_response(exc)


@router.get("/v1/models")
async def list_models(gateway: GatewayDep) -> dict[str, Any]:
    """Model names routed by this gateway."""
    return gateway.models()


@router.post("/sessions/{session_id}/v1/chat/completions")
@router.post("/sessions/{session_id}/attempts/{attempt}/v1/chat/completions")
@session_route("session_id")
async def session_chat_completions(
    request: Request, gateway: GatewayDep, session_id: str, attempt: int | None = None
) -> Response:
    """Chat completions captured under a session (and attempt) named in the path."""
    return await _forward(request, gateway, CHAT_PATH, session_id, attempt)


@router.post("/sessions/{session_id}/v1/completions")
@router.post("/sessions/{session_id}/attempts/{attempt}/v1/completions")
@session_route("session_id")
async def session_completions(
    request: Request, gateway: GatewayDep, session_id: str, attempt: int | None = None
) -> Response:
    """Text completions captured under a session (and attempt) named in the path."""
    return await _forward(request, gateway, COMPLETIONS_PATH, session_id, attempt)


@router.get("/sessions/{session_id}/v1/models")
@router.get("/sessions/{session_id}/attempts/{attempt}/v1/models")
@session_route("session_id")
async def session_list_models(gateway: GatewayDep, session_id: str, attempt: int | None = None) -> dict[str, Any]:
    """Model names, under a session base URL."""
    return gateway.models()


@router.get("/v1/sessions/{session_id}/trajectory", response_model=SessionMerge)
@session_route("session_id")
async def read_session_trajectory(gateway: GatewayDep, session_id: str) -> SessionMerge:
    """The session's calls merged into token-exact segments, with prefix mismatches."""
    return await service.session_trajectory(gateway, session_id)


@router.get("/v1/sessions/{session_id}/traces", response_model=list[TraceRecord])
@session_route("session_id")
async def read_session_traces(gateway: GatewayDep, session_id: str) -> list[TraceRecord]:
    """Every trace record of the session, in order."""
    return await service.session_traces(gateway, session_id)


@router.post("/v1/gateway/drain", response_model=service.DrainStatus)
@admin_only
async def drain(gateway: GatewayDep, body: DrainRequest) -> service.DrainStatus:
    """Start draining for a weight update: new calls get 503 + Retry-After."""
    return await service.drain(gateway, wait_s=body.wait_s)


@router.post("/v1/gateway/resume", response_model=service.DrainStatus)
@admin_only
async def resume(gateway: GatewayDep) -> service.DrainStatus:
    """Stop draining."""
    return service.resume(gateway)


@router.get("/v1/gateway/upstreams", response_model=list[UpstreamRead])
@admin_only
async def read_upstreams(gateway: GatewayDep) -> list[UpstreamRead]:
    """The configured upstream replicas (secrets never leave: ``api_key`` becomes ``api_key_set``)."""
    return [UpstreamRead.of(spec) for spec in gateway.pool.config.upstreams]


@router.put("/v1/gateway/upstreams", response_model=list[UpstreamRead])
@admin_only
async def replace_upstreams(gateway: GatewayDep, body: list[UpstreamSpec]) -> list[UpstreamRead]:
    """Replace the upstream replicas; the answer is redacted like the listing."""
    return [UpstreamRead.of(spec) for spec in service.set_upstreams(gateway, body)]
