"""User tools served over HTTP: registered by URL and JSON Schema, called with httpx.

Wire contract: ``POST <url>`` with the arguments object as the JSON body. A
2xx JSON answer is shown to the model as JSON, any other 2xx body as text.
"""

from __future__ import annotations

from typing import Any

import httpx
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, Field, HttpUrl, field_validator

from services.tools.base import BaseTool
from shared.errors import UpstreamError, UpstreamTimeout, UpstreamUnavailable
from shared.sandbox.limits import MAX_TIMEOUT_S

__all__ = ["HttpTool", "HttpToolSpec"]


class HttpToolSpec(BaseModel):
    """How to reach and describe one HTTP-backed tool."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_\-]+$")
    description: str = Field("", max_length=4000)
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    url: HttpUrl
    timeout_s: float = Field(30.0, gt=0, le=MAX_TIMEOUT_S)
    max_output_chars: int = Field(8000, ge=100, le=1_000_000)

    @field_validator("parameters")
    @classmethod
    def _schema_is_valid(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            Draft202012Validator.check_schema(value)  # a bad schema is refused at registration
        except SchemaError as exc:
            raise ValueError(f"parameters is not a valid JSON Schema: {exc.message}") from None
        return value


class HttpTool(BaseTool):
    """Forwards validated arguments to the tool's URL."""

    def __init__(self, spec: HttpToolSpec, *, client: httpx.AsyncClient | None = None) -> None:
        self.spec = spec
        self.function_name = spec.name
        self.description = spec.description
        self.parameters = spec.parameters
        self.max_output_chars = spec.max_output_chars
        self._client = client

    async def execute(self, arguments: dict[str, Any]) -> Any:
        """POST the arguments; upstream failures raise the shared upstream errors."""
        if self._client is not None:
            return await self._post(self._client, arguments)
        async with httpx.AsyncClient() as client:
            return await self._post(client, arguments)

    async def _post(self, client: httpx.AsyncClient, arguments: dict[str, Any]) -> Any:
        try:
            response = await client.post(
                str(self.spec.url), json=arguments, timeout=self.spec.timeout_s
            )
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(
                f"tool {self.spec.name!r} did not answer within {self.spec.timeout_s:g} s"
            ) from exc
        except httpx.TransportError as exc:
            raise UpstreamUnavailable(f"tool {self.spec.name!r} is unreachable: {exc}") from exc
        if response.status_code >= 400:
            raise UpstreamError(
                f"tool {self.spec.name!r} answered HTTP {response.status_code}: "
                f"{response.text[:500]}"
            )
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text
