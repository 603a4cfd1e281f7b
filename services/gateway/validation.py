"""Checks on client requests before anything is sent upstream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, get_args

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from services.gateway.errors import ToolPairingError
from shared.errors import InvalidInput, InvalidJSON, PayloadTooLarge
from shared.schema import Message, Role

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


_ROLES = frozenset(get_args(Role))
_TEXT_FIELDS = ("name", "tool_call_id", "reasoning_content")


class _Turn(NamedTuple):
    """What the pairing check reads of one message."""

    role: str
    tool_call_id: str | None
    call_ids: tuple[str, ...]


def _head(body: dict[str, Any]) -> RequestHead:
    try:
        return RequestHead.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise InvalidInput(f"Invalid request field {param!r}: {first['msg']}.", param=param) from exc


def _plain_turn(item: Any) -> _Turn | None:
    """The turn of a message already in canonical OpenAI shape (which ``Message`` always accepts), else None."""
    if type(item) is not dict or item.get("role") not in _ROLES or "thinking" in item:
        return None
    content = item.get("content")
    if content is not None and type(content) is not str:
        return None
    for field in _TEXT_FIELDS:
        value = item.get(field)
        if value is not None and type(value) is not str:
            return None
    calls = item.get("tool_calls")
    ids: list[str] = []
    if calls is not None:
        if type(calls) is not list:
            return None
        for call in calls:
            fn = call.get("function") if type(call) is dict else None
            cid = call.get("id") if fn is not None else None
            if (type(fn) is not dict or type(fn.get("name")) is not str or type(fn.get("arguments")) is not str
                    or (cid is not None and type(cid) is not str)):
                return None
            if cid:
                ids.append(cid)
    return _Turn(item["role"], item.get("tool_call_id"), tuple(ids))


def _turn_of(msg: Message) -> _Turn:
    return _Turn(msg.role, msg.tool_call_id, tuple(call.id for call in msg.tool_calls or [] if call.id))


def _turns(body: dict[str, Any]) -> list[_Turn]:
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise InvalidInput("'messages' must be a non-empty array.", param="messages")
    out: list[_Turn] = []
    for i, item in enumerate(raw):
        turn = _plain_turn(item)
        if turn is None:
            try:
                turn = _turn_of(Message.model_validate(item))
            except (ValidationError, ValueError) as exc:
                raise InvalidInput(f"Invalid 'messages[{i}]': {exc}", param=f"messages[{i}]") from exc
        out.append(turn)
    return out


def check_tool_pairing(messages: Sequence[Message]) -> None:
    """Every assistant tool call is answered by one tool message before the next turn."""
    _check_pairing([_turn_of(m) for m in messages])


def _check_pairing(turns: list[_Turn]) -> None:
    pending: dict[str, int] = {}
    for i, turn in enumerate(turns):
        if turn.role == "tool":
            _check_tool_message(i, turn, pending)
            continue
        if pending:
            missing = ", ".join(sorted(pending))
            raise ToolPairingError(
                f"'messages[{i}]' follows tool calls that were never answered: {missing}.",
                param=f"messages[{i}]",
            )
        if turn.role == "assistant":
            pending = {cid: i for cid in turn.call_ids}


def _check_tool_message(i: int, turn: _Turn, pending: dict[str, int]) -> None:
    if not turn.tool_call_id:
        raise InvalidInput(
            f"'messages[{i}]' has role 'tool' but no 'tool_call_id'.",
            param=f"messages[{i}].tool_call_id",
        )
    if pending.pop(turn.tool_call_id, None) is None:
        raise ToolPairingError(
            f"Invalid 'messages[{i}].tool_call_id': no matching pending tool call "
            f"{turn.tool_call_id!r}.",
            param=f"messages[{i}].tool_call_id",
        )


def validate_chat(body: dict[str, Any]) -> RequestHead:
    """Validate a chat completions request; return the fields the gateway reads."""
    head = _head(body)
    _check_pairing(_turns(body))
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
        _turns(body)
    return head
