"""HTTP and WebSocket routes of env hosting, as a plain APIRouter the app mounts.

Every route exists twice: ``/envs/{name}/...`` (key from ``Authorization:
Bearer``) and the capability form ``/envs/{name}/k/{key}/...``, because OpenEnv
clients cannot add headers and only append ``/ws`` to their base URL.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Request, Response, WebSocket
from pydantic import BaseModel, ConfigDict, Field

from services.envs.openenv_server import OpenEnvServer
from services.envs.wire import StepAction, result_payload
from shared.errors import AuthenticationError

__all__ = ["HTTPResetRequest", "HTTPStepRequest", "HTTPStepResponse", "build_router"]

_PREFIXES = ("/envs/{name}", "/envs/{name}/k/{key}")


class HTTPResetRequest(BaseModel):
    """Body of HTTP reset: seed, episode id, optional session to reuse, extra reset keys."""

    model_config = ConfigDict(extra="allow")

    session_id: str | None = None
    seed: int | None = Field(None, ge=0)
    episode_id: str | None = Field(None, max_length=255)


class HTTPStepRequest(BaseModel):
    """Body of HTTP step: the session from reset and one action.

    The action is the tool-call form (``tool_name`` + ``arguments``), or the
    arguments of the env's default tool as a plain object (its schema is the
    env's ``GET /schema`` ``action``).
    """

    session_id: str = Field(min_length=1)
    action: StepAction | dict[str, Any]

    def action_data(self) -> dict[str, Any]:
        """The action as the env server takes it."""
        if isinstance(self.action, StepAction):
            return self.action.model_dump()
        return self.action


class HTTPStepResponse(BaseModel):
    """Observation payload plus the session id to keep using."""

    session_id: str
    observation: dict[str, Any]
    reward: float | None = None
    done: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


def _key_of(request: Request | WebSocket) -> str | None:
    key = request.path_params.get("key")
    if key:
        return str(key)
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth[:7].lower() == "bearer " else None


def build_router(server: OpenEnvServer) -> APIRouter:
    """Routes for every registered env, served by ``server``."""
    router = APIRouter(tags=["envs"])
    for prefix in _PREFIXES:
        _add_info_routes(router, server, prefix)
        _add_session_routes(router, server, prefix)
        router.add_api_websocket_route(f"{prefix}/ws", _ws_endpoint(server))
    return router


async def _require_key(server: OpenEnvServer, request: Request) -> None:
    if not await server.authorized(_key_of(request)):
        raise AuthenticationError(
            "A valid API key is required (Authorization: Bearer, or the /k/{key}/ URL form)."
        )


def _ws_endpoint(server: OpenEnvServer) -> Any:
    async def env_ws(websocket: WebSocket, name: str) -> None:
        """One OpenEnv session over a WebSocket."""
        if not await server.authorized(_key_of(websocket)):
            await websocket.close(code=1008)  # before accept: the client sees HTTP 403
            return
        if name not in server.registry:
            await websocket.close(code=1008)
            return
        await server.serve_ws(websocket, name)

    return env_ws


def _auth(server: OpenEnvServer) -> Any:
    """A dependency checking the key before anything else (body validation included)."""

    async def require_key(request: Request) -> None:
        await _require_key(server, request)

    return Depends(require_key)


async def _capability_key(key: str = Path(min_length=1, description="An API key (OpenEnv clients send no headers).")
                          ) -> None:
    """Declares the ``key`` of a capability URL, so the schema names every path parameter."""


def _route_deps(server: OpenEnvServer, prefix: str, *, auth: bool = True) -> list[Any]:
    deps = [_auth(server)] if auth else []
    return [*deps, Depends(_capability_key)] if "{key}" in prefix else deps


def _add_info_routes(router: APIRouter, server: OpenEnvServer, prefix: str) -> None:
    auth = _route_deps(server, prefix)
    @router.get(f"{prefix}/health", dependencies=_route_deps(server, prefix, auth=False))
    async def env_health(name: str) -> dict[str, Any]:
        """Liveness and slot usage (no key needed)."""
        server.registry.spec(name)
        return {
            "status": "healthy",
            "active_sessions": server.table.active,
            "max_sessions": server.table.max_sessions,
        }

    @router.get(f"{prefix}/metadata", dependencies=auth)
    async def env_metadata(name: str) -> dict[str, Any]:
        """Name, description and version of an env."""
        spec = server.registry.spec(name)
        return {
            "name": name,
            "description": spec.description or f"{name} environment",
            "readme_content": None,
            "version": spec.version,
            "author": None,
            "documentation_url": None,
        }

    @router.get(f"{prefix}/schema", dependencies=auth)
    async def env_schema(name: str) -> dict[str, Any]:
        """JSON schemas of action, observation and state, plus the env's tools."""
        env = server.registry.get(name)
        try:
            return _schemas(env.tools(), env.default_tool)
        finally:
            env.close()


def _schemas(tools: list[dict[str, Any]], default_tool: str | None) -> dict[str, Any]:
    action: dict[str, Any] = StepAction.model_json_schema()
    for tool in tools:
        fn = tool.get("function", {})
        if fn.get("name") == default_tool:
            action = {"anyOf": [action, fn.get("parameters", {"type": "object"})]}
    state = {
        "type": "object",
        "properties": {
            "episode_id": {"type": ["string", "null"]},
            "step_count": {"type": "integer", "minimum": 0},
        },
    }
    return {"action": action, "observation": {"type": "object"}, "state": state, "tools": tools}


def _add_session_routes(router: APIRouter, server: OpenEnvServer, prefix: str) -> None:
    auth = _route_deps(server, prefix)
    @router.post(f"{prefix}/reset", response_model=HTTPStepResponse, dependencies=auth)
    async def env_reset(
        name: str, body: HTTPResetRequest, response: Response
    ) -> HTTPStepResponse:
        """Reset (and open, without session_id) a stateful HTTP session."""
        data = body.model_dump(exclude={"session_id"}, exclude_none=True)
        session, result = await server.http_reset(name, data, body.session_id)
        response.headers["x-session-id"] = session.id
        return HTTPStepResponse(session_id=session.id, **result_payload(result))

    @router.post(f"{prefix}/step", response_model=HTTPStepResponse, dependencies=auth)
    async def env_step(name: str, body: HTTPStepRequest) -> HTTPStepResponse:
        """Step the HTTP session named in the body."""
        session, result = await server.http_step(name, body.session_id, body.action_data())
        return HTTPStepResponse(session_id=session.id, **result_payload(result))

    @router.get(f"{prefix}/state", dependencies=auth)
    async def env_state(name: str, session_id: str) -> dict[str, Any]:
        """episode_id, step_count and env state of an HTTP session."""
        return server.http_session(name, session_id).state()

    @router.delete(f"{prefix}/sessions/{{session_id}}", status_code=204, dependencies=auth)
    async def env_close(name: str, session_id: str) -> Response:
        """Close an HTTP session and free its slot."""
        await server.http_close(name, session_id)
        return Response(status_code=204)
