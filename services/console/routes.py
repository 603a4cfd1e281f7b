"""Routes of the console: the single page, its assets, its configuration, and the optional API proxy.

Every ``/ui/...`` path that is not an asset answers with ``index.html``; the
page's own router draws the view for the path. These routes are public on
purpose: they serve the same static files to everyone and no data (the page
asks for the key and sends it to the API itself).
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from starlette.responses import Response

from services.console.assets import asset, index_html
from services.console.proxy import ApiProxy
from shared.settings import Settings

__all__ = ["API_PREFIX", "UI_PREFIX", "console_router"]

UI_PREFIX = "/ui"
API_PREFIX = UI_PREFIX + "/api"
#: The page never caches stale code across upgrades, and never lets another site frame it.
_HEADERS = {"cache-control": "no-cache", "x-frame-options": "DENY", "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
            "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                                       "script-src 'self'; connect-src 'self'; frame-ancestors 'none'"}


def _page() -> Response:
    return Response(index_html(), media_type="text/html; charset=utf-8", headers=_HEADERS)


def console_router(app: FastAPI, settings: Settings) -> APIRouter:
    """The console's routes for one app (the proxy only when an API address is configured)."""
    router = APIRouter(tags=["console"], include_in_schema=False)
    proxied = bool(settings.console_api_url or settings.console_routes)

    @router.get(UI_PREFIX + "/config.json")
    async def read_config() -> dict[str, str]:
        """Where the page sends its API calls."""
        return {"api_base": API_PREFIX if proxied else "", "ui_base": UI_PREFIX}

    @router.get(UI_PREFIX + "/static/{path:path}")
    async def read_asset(path: str) -> Response:
        """One shipped asset (JavaScript, CSS)."""
        body, media = asset(path)
        return Response(body, media_type=media, headers=_HEADERS)

    if proxied:
        _add_proxy(router, app, settings)

    @router.get(UI_PREFIX)
    @router.get(UI_PREFIX + "/{path:path}")
    async def read_page(path: str = "") -> Response:
        """The single page, for any console path (the browser draws the view)."""
        return _page()

    return router


def _add_proxy(router: APIRouter, app: FastAPI, settings: Settings) -> None:
    proxy = ApiProxy(api_url=settings.console_api_url, routes=settings.console_routes)
    app.state.console_proxy = proxy  # closed by the service's shutdown hook

    @router.api_route(API_PREFIX + "/{path:path}", methods=["GET", "POST", "PUT", "DELETE"])
    async def forward(path: str, request: Request) -> Response:
        """The API call, forwarded to the service that serves it."""
        return await proxy.forward(request, path)
