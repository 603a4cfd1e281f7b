"""Checks on client requests before anything is sent upstream."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from services.gateway.errors import ToolPairingError
from shared.errors import InvalidInput, InvalidJSON, PayloadTooLarge
from shared.schema import Message

__all__ = [
    "RequestHead", "check_tool_pairing", "parse_body", "validate_chat", "validate_completion", "validate_tokenize",
]


class RequestHead(BaseModel):
    """The few request fields the gateway reads; everything else is passed through."""

    model_config = ConfigDict(extra="allow")

    model: str
    stream: bool = False
    return_token_ids: bool | None = None
    logprobs: bool | int | None = None


def parse_body(raw: bytes, *, max_bytes: int, parsed: Any = None) -> dict[str, Any]:
    """Decode a JSON object body, refusing oversized or malformed input.

    ``parsed``, when given, is ``raw`` already decoded (it is checked, not decoded again).
    """
    if len(raw) > max_bytes:
        raise PayloadTooLarge(f"Request body of {len(raw)} bytes exceeds the {max_bytes}-byte limit.")
    try:
        body = orjson.loads(raw) if parsed is None else parsed
    except orjson.JSONDecodeError as exc:
        raise InvalidJSON(f"Request body is not valid JSON: {exc}.") from exc
    if not isinstance(body, dict):
        raise InvalidJSON("Request body must be a JSON object.")
    return body


def _head(body: dict[str, Any]) -> RequestHead:
    try:
        return RequestHead.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise InvalidInput(f"Invalid request field {param!r}: {first['msg']}.", param=param) from exc


def _messages(body: dict[str, Any]) -> list[Message]:
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise InvalidInput("'messages' must be a non-empty array.", param="messages")
    out: list[Message] = []
    for i, item in enumerate(raw):
        try:
            out.append(Message.model_validate(item))
        except (ValidationError, ValueError) as exc:
            raise InvalidInput(f"Invalid 'messages[{i}]': {exc}", param=f"messages[{i}]") from exc
    return out


def check_tool_pairing(messages: list[Message]) -> None:
    """Every assistant tool call is answered by one tool message before the next turn."""
    pending: dict[str, int] = {}
    for i, msg in enumerate(messages):
        if msg.role == "tool":
            _check_tool_message(i, msg, pending)
            continue
        if pending:
            missing = ", ".join(sorted(pending))
            raise ToolPairingError(
                f"'messages[{i}]' follows tool calls that were never answered: {missing}.",
                param=f"messages[{i}]",
            )
        if msg.role == "assistant":
            pending = {call.id: i for call in msg.tool_calls or [] if call.id}


def _check_tool_message(i: int, msg: Message, pending: dict[str, int]) -> None:
    if not msg.tool_call_id:
        raise InvalidInput(
            f"'messages[{i}]' has role 'tool' but no 'tool_call_id'.",
            param=f"messages[{i}].tool_call_id",
        )
    if pending.pop(msg.tool_call_id, None) is None:
        raise ToolPairingError(
            f"Invalid 'messages[{i}].tool_call_id': no matching pending tool call "
            f"{msg.tool_call_id!r}.",
            param=f"messages[{i}].tool_call_id",
        )


def validate_chat(body: dict[str, Any]) -> RequestHead:
    """Validate a chat completions request; return the fields the gateway reads."""
    head = _head(body)
    check_tool_pairing(_messages(body))
    return head


def validate_completion(body: dict[str, Any]) -> RequestHead:
    """Validate a completions request; return the fields the gateway reads."""
    head = _head(body)
    if body.get("prompt") is None:
        raise InvalidInput("'prompt' is required.", param="prompt")
    return head


def validate_tokenize(body: dict[str, Any]) -> RequestHead:
    """Validate a ``/tokenize`` request (vLLM's: a ``prompt`` or chat ``messages``)."""
    head = _head(body)
    if body.get("prompt") is None:
        _messages(body)
    return head
