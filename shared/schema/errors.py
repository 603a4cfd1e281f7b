"""Wire shapes of errors: RFC 9457 problem details and the OpenAI error body."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["OpenAIError", "OpenAIErrorBody", "Problem"]


class Problem(BaseModel):
    """RFC 9457 problem details, plus the stable ``code`` and the request id."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    code: str
    instance: str | None = None
    request_id: str | None = None
    errors: list[dict[str, Any]] = Field(default_factory=list)


class OpenAIError(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIErrorBody(BaseModel):
    """``{"error": {"message", "type", "param", "code"}}`` as OpenAI returns it."""

    error: OpenAIError
