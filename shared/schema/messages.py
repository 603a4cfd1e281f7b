"""OpenAI chat messages: liberal readers, canonical writers.

Input may come from any OpenAI-compatible client or from Arrow/HF datasets:
tool-call arguments as an object or a JSON string, the whole ``tool_calls``
list serialised as a JSON string, content as a string, a list of parts or a
single part, ``thinking`` instead of ``reasoning_content``, ``developer`` for
``system``. Output is always canonical: ``arguments`` is a JSON string,
``reasoning_content`` is the one name for reasoning.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "ContentPart",
    "FunctionCall",
    "FunctionSpec",
    "Message",
    "Role",
    "ToolCall",
    "ToolInfo",
    "content_text",
    "dump_arguments",
]

Role = Literal["system", "developer", "user", "assistant", "tool"]


def dump_arguments(value: Any) -> str:
    """Canonical JSON text for tool-call arguments (a string is kept as given)."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class FunctionCall(BaseModel):
    """The ``function`` member of an OpenAI tool call."""

    model_config = ConfigDict(extra="ignore")

    name: str = ""
    arguments: str = "{}"

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_as_text(cls, value: Any) -> str:
        return dump_arguments(value)

    @field_validator("name", mode="before")
    @classmethod
    def _name_as_text(cls, value: Any) -> str:
        return "" if value is None else str(value)

    def parsed_arguments(self) -> Any:
        """Arguments decoded from JSON; raises ``ValueError`` if they are not JSON."""
        return json.loads(self.arguments) if self.arguments.strip() else {}


class ToolCall(BaseModel):
    """One OpenAI tool call (``{id, type: function, function: {name, arguments}}``)."""

    model_config = ConfigDict(extra="ignore")

    id: str = ""
    type: Literal["function"] = "function"
    function: FunctionCall

    @model_validator(mode="before")
    @classmethod
    def _accept_flat_and_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            data = json.loads(data)
        if isinstance(data, dict):
            data = dict(data)
            fn = data.get("function")
            if isinstance(fn, str):
                data["function"] = json.loads(fn)
            elif fn is None and "name" in data:
                # Flat form {"name", "arguments"} as many datasets write it.
                data["function"] = {"name": data.get("name"), "arguments": data.get("arguments")}
            if data.get("id") is None:
                data["id"] = ""
            data["type"] = "function"
        return data

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def arguments(self) -> str:
        return self.function.arguments


class ContentPart(BaseModel):
    """One part of multi-part content (text, image_url, input_audio, ...)."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class Message(BaseModel):
    """One OpenAI chat message."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    role: Role
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _liberal(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if data.get("reasoning_content") is None and data.get("thinking") is not None:
            data["reasoning_content"] = data.pop("thinking")
        else:
            data.pop("thinking", None)
        content = data.get("content")
        if isinstance(content, dict):
            data["content"] = [content]
        calls = data.get("tool_calls")
        if isinstance(calls, str):
            # Arrow/HF datasets store the list as one JSON string.
            data["tool_calls"] = json.loads(calls) if calls.strip() else None
        if data.get("tool_calls") == []:
            data["tool_calls"] = None
        return data

    def text(self) -> str:
        """Text projection of the content (text parts joined with one space)."""
        return content_text(self.content)

    # Read access by key, so code written for OpenAI message dicts (``msg['role']``,
    # ``msg.get('content', '')``) reads a Message as it would the canonical dict.
    def __getitem__(self, key: str) -> Any:
        return self.to_openai()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The canonical dict's ``key``, or ``default`` when absent or null."""
        value = self.to_openai().get(key)
        return default if value is None else value

    def to_openai(self) -> dict[str, Any]:
        """Canonical OpenAI dict: unset optional fields omitted, arguments as JSON text."""
        declared = type(self).model_fields
        out = {k: v for k, v in self.model_dump(mode="json").items()
               if v is not None or k == "content" or k not in declared}
        if self.tool_calls:
            out["tool_calls"] = [c.model_dump(mode="json") for c in self.tool_calls]
        return out


class FunctionSpec(BaseModel):
    """The ``function`` member of an OpenAI tool schema."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolInfo(BaseModel):
    """An OpenAI function-tool schema (``{type: function, function: {...}}``)."""

    model_config = ConfigDict(extra="allow")

    type: Literal["function"] = "function"
    function: FunctionSpec

    @model_validator(mode="before")
    @classmethod
    def _accept_bare_function(cls, data: Any) -> Any:
        if isinstance(data, str):
            data = json.loads(data)
        if isinstance(data, dict) and "function" not in data and "name" in data:
            data = {"type": "function", "function": data}
        return data

    @property
    def name(self) -> str:
        return self.function.name


def content_text(content: Any) -> str:
    """Text of a message content: string as is, text parts joined with one space."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text") or "") if content.get("type") == "text" else ""
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, ContentPart):
                if part.type == "text" and part.text:
                    texts.append(part.text)
            elif isinstance(part, dict) and part.get("type") == "text" and part.get("text"):
                texts.append(str(part["text"]))
        return " ".join(texts)
    return ""
