"""Python client for trajforge's REST API: ``Client`` (sync) and ``AsyncClient`` (async).

Both share one set of endpoint methods (``_Endpoints``); the sync client
returns values, the async client returns awaitables of the same values.
Errors come back as the server's ``TrajforgeError`` subclass (matched by its
stable ``code``), so callers catch the same classes everywhere.

    from shared.client import Client
    with Client("http://127.0.0.1:8000", api_key="tf_...") as tf:
        print(tf.health())
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import httpx

from shared import errors as _errors
from shared.errors import TrajforgeError

__all__ = ["AsyncClient", "Client", "error_from_response"]


def _all_error_classes() -> dict[str, type[TrajforgeError]]:
    out: dict[str, type[TrajforgeError]] = {}
    stack: list[type[TrajforgeError]] = [TrajforgeError]
    while stack:
        cls = stack.pop()
        out.setdefault(cls.code, cls)
        stack.extend(cls.__subclasses__())
    return out


def error_from_response(response: httpx.Response) -> TrajforgeError:
    """The ``TrajforgeError`` a problem-details or OpenAI error body describes."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    code = str(inner.get("code") or "")
    message = str(inner.get("message") or inner.get("detail") or response.text[:500] or response.reason_phrase)
    cls = _all_error_classes().get(code)
    if cls is None:
        cls = next((c for c in _all_error_classes().values() if c.status_code == response.status_code),
                   _errors.TrajforgeError)
    retry = response.headers.get("retry-after")
    return cls(message, details={"status": response.status_code, "body": body},
               retry_after_s=float(retry) if retry and retry.replace(".", "", 1).isdigit() else None)


def _result(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise error_from_response(response)
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    return response.content


class _Endpoints(ABC):
    """Endpoint methods shared by both clients; ``_call`` is sync or async."""

    @abstractmethod
    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send one request through the client's transport."""

    def health(self) -> Any:
        """Liveness of the server."""
        return self._call("GET", "/healthz")

    def ready(self) -> Any:
        """Readiness (database, Redis) of the server."""
        return self._call("GET", "/readyz")

    def upload_dataset(self, name: str, data: bytes | str | Path) -> Any:
        """Upload JSONL (bytes, or a file path) as a dataset."""
        content = Path(data).read_bytes() if isinstance(data, (str, Path)) else data
        return self._call("POST", "/v1/datasets", params={"name": name}, content=content,
                          headers={"content-type": "application/x-ndjson"})

    def get_dataset(self, dataset_id: str) -> Any:
        """A dataset's metadata."""
        return self._call("GET", f"/v1/datasets/{dataset_id}")

    def dataset_rows(self, dataset_id: str, *, offset: int = 0, limit: int = 100) -> Any:
        """A page of a dataset's rows."""
        return self._call("GET", f"/v1/datasets/{dataset_id}/rows", params={"offset": offset, "limit": limit})

    def session_trajectory(self, session_id: str) -> Any:
        """A gateway session's calls merged into token-exact segments, with prefix mismatches."""
        return self._call("GET", f"/v1/sessions/{session_id}/trajectory")

    def session_traces(self, session_id: str) -> Any:
        """Every trace record of a gateway session, in order."""
        return self._call("GET", f"/v1/sessions/{session_id}/traces")


def _headers(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


class Client(_Endpoints):
    """Synchronous client."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._http = httpx.Client(base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return _result(self._http.request(method, path, **kwargs))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Endpoints):
    """Asynchronous client (every endpoint method returns an awaitable)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 60.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, headers=_headers(api_key), timeout=timeout,
                                       transport=transport)

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:  # type: ignore[override]
        return _result(await self._http.request(method, path, **kwargs))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
