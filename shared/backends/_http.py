"""HTTP plumbing shared by the server backends: one client, errors mapped onto the shared tree."""

from __future__ import annotations

from typing import Any

import httpx

from shared.errors import (
    AuthenticationError,
    BackendUnsupported,
    ClientError,
    Conflict,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    TrajforgeError,
    UpstreamError,
    UpstreamTimeout,
    UpstreamUnavailable,
    ValidationFailed,
)

__all__ = ["HttpUpstream", "upstream_error"]


def _message(response: httpx.Response) -> str:
    # Accept the OpenAI shape, vLLM's int-code variant and the old flat {"object": "error"} shape.
    try:
        body = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        inner = error if isinstance(error, dict) else body
        return str(inner.get("message") or inner.get("detail") or body)[:500]
    return str(body)[:500]


_CLIENT_ERRORS: dict[int, type[ClientError]] = {
    401: AuthenticationError, 403: PermissionDenied, 404: NotFound, 409: Conflict,
    413: PayloadTooLarge, 422: ValidationFailed, 429: RateLimited,
}


def _client_error(status: int) -> type[ClientError]:
    return _CLIENT_ERRORS.get(status, InvalidInput)


def upstream_error(response: httpx.Response) -> TrajforgeError:
    """The shared error for a failed upstream response (4xx stay client errors)."""
    text = f"Upstream {response.request.url.path} answered {response.status_code}: {_message(response)}"
    if response.status_code in (503, 529):
        return UpstreamUnavailable(text)
    if response.status_code == 501:  # the server lacks the route's capability (e.g. no weight transfer)
        return BackendUnsupported(text)
    if 400 <= response.status_code < 500:
        return _client_error(response.status_code)(text)
    return UpstreamError(text)


class HttpUpstream:
    """An ``httpx.AsyncClient`` bound to one base URL, raising shared errors."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = 120.0,
                 client: httpx.AsyncClient | None = None) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self._client = client or httpx.AsyncClient(timeout=timeout_s, headers=headers)

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send and return a 2xx response, or raise the matching shared error."""
        try:
            response = await self._client.request(method, self.base_url + path, **kwargs)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(f"Upstream {self.base_url}{path} timed out.") from exc
        except httpx.TransportError as exc:
            raise UpstreamUnavailable(f"Upstream {self.base_url} is unreachable: {exc}") from exc
        if response.status_code >= 400:
            raise upstream_error(response)
        return response

    async def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body and return the decoded JSON answer."""
        return dict((await self.request("POST", path, json=body)).json())

    async def get_json(self, path: str) -> Any:
        """GET and decode JSON."""
        return (await self.request("GET", path)).json()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()
