"""Forward the console's API calls to the services when the console runs on its own.

A path goes to the base URL of the longest matching prefix in
``console_routes`` (``{"/v1/clean": "http://cleaning:8000/v1/clean"}``: a path
``P + rest`` goes to ``URL + rest``), else to ``console_api_url`` + path. The
caller's ``Authorization`` header travels as is (the service checks the key);
bodies stream both ways, so server-sent events arrive as they are sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import httpx
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse

from shared.errors import NotFound, UpstreamUnavailable

__all__ = ["ApiProxy", "target_url"]

#: Request headers passed on (others, such as Host and Cookie, stay here).
_FORWARD = ("authorization", "content-type", "accept", "x-request-id")
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-encoding", "content-length"}


def target_url(path: str, *, api_url: str, routes: Mapping[str, str]) -> str:
    """Where ``path`` (an API path such as ``/v1/rollouts``) is served."""
    best = max((p for p in routes if path == p or path.startswith(p.rstrip("/") + "/")), key=len, default=None)
    if best is not None:
        return routes[best].rstrip("/") + path[len(best.rstrip("/")):]
    if not api_url:
        raise NotFound(f"the console has no API address for {path}; set TRAJFORGE_CONSOLE_API_URL", param="path")
    return api_url.rstrip("/") + path


class ApiProxy:
    """One shared HTTP client forwarding console calls to the services."""

    def __init__(self, *, api_url: str, routes: Mapping[str, str], timeout_s: float = 60.0) -> None:
        self.api_url, self.routes = api_url, dict(routes)
        # No read timeout: an event stream may stay quiet for a long time.
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, read=None))

    async def forward(self, request: Request, path: str) -> StreamingResponse:
        """Send the request on and stream the answer back."""
        url = target_url("/" + path.lstrip("/"), api_url=self.api_url, routes=self.routes)
        headers = {k: v for k, v in request.headers.items() if k.lower() in _FORWARD}
        body = await request.body()
        upstream = self.client.build_request(request.method, url, params=request.query_params, headers=headers,
                                             content=body or None)
        try:
            answer = await self.client.send(upstream, stream=True)
        except httpx.TransportError as exc:
            raise UpstreamUnavailable(f"the console could not reach {url.split('?')[0]}: {exc}") from exc
        out_headers = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP}
        return StreamingResponse(_chunks(answer), status_code=answer.status_code, headers=out_headers,
                                 background=BackgroundTask(answer.aclose))

    async def aclose(self) -> None:
        """Close the shared client."""
        await self.client.aclose()


async def _chunks(answer: httpx.Response) -> AsyncIterator[bytes]:
    async for chunk in answer.aiter_raw():
        yield chunk
